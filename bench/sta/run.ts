/**
 * `npm run bench:sta`: the data API gateway and our SensorThings server under load (see the "Data
 * API and SensorThings" section of bench/README.md). Starts the built program as a child process on
 * a fresh PostgreSQL database, releases a dataset with an STA API, seeds a million Observations
 * with bulk SQL, loads three reads beside the same SQL alone, measures the gateway's own cost and
 * the write paths, and writes bench/results-sta.md plus the figures block of bench/README.md.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADMIN_EMAIL, benchLogLevel, serverEnvironment, devToken, CONNECTIONS, DURATION, REPO_ROOT, SERVER_URL } from '../settings.js';
import { createDatabase, withClient } from '../database.js';
import { startServer, type ServerProcess } from '../server-process.js';
import { captureReads, installQueryCapture, timeQueries, type CapturedQuery } from '../sql-alone.js';
import { loadConfig } from '../../src/config.js';
import { createContext } from '../../src/runtime.js';
import { buildDataApiApp } from '../../src/data-api/gateway.app.js';
import { openDatabase } from '../../src/db/client.js';
import { createStaServer, type StaRequest } from '../../src/sta/index.js';
import { httpLoad, loopLoad, sqlLoad, type Run } from './load.js';
import { bareHttpLoad } from './bare-http.js';
import { countObservations, openForAnonymousReads, personalAccessToken, releasedStaDataset, seedSta, type StaDataset } from './setup.js';
import { renderResults, renderSummary, type ReadResult, type StaReport, type WriteResult } from './report.js';

const root = REPO_ROOT;
const OBSERVATIONS = Number(process.env['BENCH_STA_OBSERVATIONS'] ?? 1_000_000);
const LOG_LEVEL = benchLogLevel('info');
/** `BENCH_CPU_PROF=<dir>`: the server runs with `node --cpu-prof`, its profile written there when it stops. */
const CPU_PROF = process.env['BENCH_CPU_PROF'];
const WARMUP = 2;
const SQL_RUNS = 15;
const DATASTREAMS = 100;
const PER_OTHER_DATASTREAM = 100;
const BULK = { requests: 100, perRequest: 1_000 };
/** The bare server's pool: the real server's default DATABASE_POOL_SIZE. */
const BARE_POOL_SIZE = 10;
// Ports of their own, so that this scenario and `npm run bench` never collide.
const PORTS = { api: 18180, data: 18181, idp: 18190 };

const API = `http://127.0.0.1:${PORTS.api}`;
const DATA_API = `http://127.0.0.1:${PORTS.data}`;
const IDP = `http://127.0.0.1:${PORTS.idp}`;
const ISSUER = `${IDP}/realms/platform`;
const workDir = mkdtempSync(join(tmpdir(), 'bench-sta-'));
const logFile = join(workDir, 'server.log');

const say = (message: string) => console.log(`[bench:sta] ${message}`);
const load1 = () => loadavg()[0]!.toFixed(1);
const brief = (run: Run) => `${run.perSecond.toFixed(0)}/s, p50 ${run.p50Ms.toFixed(2)} ms, p99 ${run.p99Ms.toFixed(2)} ms${run.failed ? `, ${run.failed} failed ${JSON.stringify(run.statuses)}` : ''}`;

const serverEnv = (extra: Record<string, string>) => serverEnvironment(PORTS, LOG_LEVEL, extra);

let running: ServerProcess | null = null;

/**
 * Fails the run when the server is gone: on a shared machine something outside the benchmark may
 * stop it (a SIGTERM shows as "shutting down" in its log), and figures of refused connections mean nothing.
 */
function checkServer(after: string) {
  const child = running?.child;
  if (child && (child.exitCode !== null || child.signalCode !== null)) {
    throw new Error(`the server stopped during "${after}" (exit ${child.exitCode ?? child.signalCode}); a signal from outside the benchmark? see ${logFile}`);
  }
}

const tokenOf = (email: string) => devToken(ISSUER, email);

/** STA query strings keep `$`, `(`, `;` and `,` as clients send them; spaces are encoded. */
const q = (text: string) => text.replaceAll(' ', '%20');

/**
 * The statements the data API process runs for each path (the caller query of the bearer token,
 * then the STA server's), captured from an in-process gateway on the same database; the route
 * table's own polling is left out.
 */
async function captureStatements(databaseUrl: string, paths: string[], token: string): Promise<CapturedQuery[][]> {
  installQueryCapture();
  const config = loadConfig(serverEnv({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' }));
  const ctx = await createContext(config, { url: databaseUrl, dataDir: null, poolSize: 2 });
  const app = await buildDataApiApp(ctx);
  try {
    await app.ready();
    return await captureReads(app, paths.map((path) => ({ path, token })));
  } finally {
    await app.close();
    await ctx.db.destroy();
  }
}

async function explainText(databaseUrl: string, query: CapturedQuery): Promise<string> {
  return withClient(databaseUrl, async (client) => {
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(`explain (analyze, buffers) ${query.text}`, query.values);
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  });
}

async function measureReads(databaseUrl: string, dataset: StaDataset, token: string, reads: Array<{ name: string; path: string; targetP99Ms?: number }>): Promise<ReadResult[]> {
  const headers = { authorization: `Bearer ${token}` };
  const http: Run[] = [];
  for (const read of reads) {
    say(`HTTP: GET ${read.path}`);
    http.push(await httpLoad(dataset.base + read.path, { connections: CONNECTIONS, seconds: DURATION, headers, warmupSeconds: WARMUP }));
    checkServer(read.name);
    say(`  ${brief(http.at(-1)!)}`);
  }
  const prefix = new URL(dataset.base).pathname;
  const captured = await captureStatements(databaseUrl, reads.map((read) => prefix + read.path), token);
  const results: ReadResult[] = [];
  for (const [i, read] of reads.entries()) {
    const queries = captured[i]!;
    say(`SQL alone: ${read.name}, ${queries.length} statements`);
    const sql = await sqlLoad(databaseUrl, queries, CONNECTIONS, DURATION, WARMUP);
    say(`  ${brief(sql)}`);
    say(`bare node:http + pg: ${read.name}`);
    const bare = await bareHttpLoad(databaseUrl, queries, BARE_POOL_SIZE, CONNECTIONS, DURATION, WARMUP);
    say(`  ${brief(bare)}`);
    const timed = await timeQueries(databaseUrl, read.path, queries, SQL_RUNS);
    const plans = [];
    for (const query of queries) plans.push(await explainText(databaseUrl, query));
    results.push({ ...read, http: http[i]!, queries: timed.queries, sql, bare, explainMs: timed.explainMs, plans });
  }
  return results;
}

/** The STA handler alone, in this process, on a pool of its own: no HTTP, no token, no route lookup. */
async function measureHandler(databaseUrl: string, dataset: StaDataset, path: string, query: string): Promise<Run> {
  const db = openDatabase({ url: databaseUrl, dataDir: null, poolSize: CONNECTIONS });
  const sta = createStaServer({ db });
  const request: StaRequest = {
    method: 'GET', path, query, body: undefined, preferMinimal: false, baseUrl: dataset.base, schema: dataset.schema, rights: { read: true, write: false },
  };
  try {
    const step = async () => {
      const answer = await sta.handle(request);
      if (answer.status !== 200) throw new Error(`handler answered ${answer.status}`);
    };
    return await loopLoad(CONNECTIONS, DURATION, Array.from({ length: CONNECTIONS }, () => step), WARMUP);
  } finally {
    await db.destroy();
  }
}

async function measureWrites(databaseUrl: string, dataset: StaDataset, token: string, datastreamId: number): Promise<WriteResult> {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const dataArray = (from: number, count: number) => JSON.stringify([{
    Datastream: { '@iot.id': datastreamId },
    components: ['phenomenonTime', 'result'],
    'dataArray@iot.count': count,
    dataArray: Array.from({ length: count }, (_, i) => [new Date(Date.UTC(2027, 0, 1) + (from + i) * 1000).toISOString(), 20 + ((from + i) % 100) / 10]),
  }]);
  let createObservations: WriteResult['createObservations'];
  const probe = await fetch(`${dataset.base}/CreateObservations`, { method: 'POST', headers, body: dataArray(0, 1) });
  const probeText = await probe.text();
  if (probe.status !== 201 && probe.status !== 200) {
    say(`  CreateObservations answered ${probe.status}: not available yet`);
    createObservations = { probeStatus: probe.status, detail: (() => { try { return String((JSON.parse(probeText) as { detail?: string }).detail ?? ''); } catch { return probeText.slice(0, 120); } })() };
  } else {
    const before = await countObservations(databaseUrl, dataset.schema, datastreamId);
    let next = 0;
    const startedAt = performance.now();
    await Promise.all(Array.from({ length: Math.min(CONNECTIONS, BULK.requests) }, async () => {
      for (let i = next++; i < BULK.requests; i = next++) {
        const response = await fetch(`${dataset.base}/CreateObservations`, { method: 'POST', headers, body: dataArray(1 + i * BULK.perRequest, BULK.perRequest) });
        const text = await response.text();
        if (response.status !== 201 && response.status !== 200) throw new Error(`CreateObservations answered ${response.status}: ${text.slice(0, 300)}`);
      }
    }));
    const seconds = (performance.now() - startedAt) / 1000;
    const observations = (await countObservations(databaseUrl, dataset.schema, datastreamId)) - before;
    createObservations = { observations, requests: BULK.requests, seconds, perSecond: observations / seconds };
    say(`  CreateObservations: ${observations} in ${seconds.toFixed(1)} s`);
  }
  const url = `${dataset.base}/Datastreams(${datastreamId})/Observations`;
  const body = JSON.stringify({ result: 21.5 });
  const singlePost = await httpLoad(url, { method: 'POST', body, headers, okStatus: 201, connections: CONNECTIONS, seconds: DURATION, warmupSeconds: WARMUP });
  checkServer('single POSTs');
  say(`  single POSTs: ${brief(singlePost)}`);
  const singlePostMinimal = await httpLoad(url, { method: 'POST', body, headers: { ...headers, prefer: 'return=minimal' }, okStatus: 204, connections: CONNECTIONS, seconds: DURATION, warmupSeconds: WARMUP });
  checkServer('single POSTs, return=minimal');
  say(`  single POSTs, return=minimal: ${brief(singlePostMinimal)}`);
  return { createObservations, singlePost, singlePostMinimal };
}

function writeResults(report: StaReport) {
  writeFileSync(join(root, 'bench/results-sta.md'), renderResults(report));
  const readmePath = join(root, 'bench/README.md');
  const readme = readFileSync(readmePath, 'utf8');
  const begin = '<!-- sta-figures:begin -->';
  const end = '<!-- sta-figures:end -->';
  const from = readme.indexOf(begin);
  const to = readme.indexOf(end);
  if (from < 0 || to < from) throw new Error(`bench/README.md lacks the ${begin} … ${end} block`);
  writeFileSync(readmePath, `${readme.slice(0, from + begin.length)}\n${renderSummary(report)}${readme.slice(to)}`);
}

async function main() {
  if (!existsSync(join(root, 'dist/server.js'))) throw new Error('dist/server.js is missing: run `npm run build` first (`npm run bench:sta` does)');
  process.chdir(root);
  const loadBefore = load1();
  say(`load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}; work directory ${workDir}; server log ${logFile}`);
  const database = await createDatabase(SERVER_URL, 'bench_sta');
  say(`database ${database.name}`);
  let server: ServerProcess | null = null;
  try {
    server = await startServer({
      command: process.execPath, args: [...(CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF] : []), 'dist/server.js', 'all'], serverCommandLine: /^\S*node .*dist\/server\.js/,
      env: serverEnv({ DATABASE_URL: database.url }), readyUrl: `${API}/health/ready`, logFile,
    });
    running = server;
    say(`server ready after ${(server.readyMs / 1000).toFixed(2)} s`);
    const token = await tokenOf(ADMIN_EMAIL);
    const dataset = await releasedStaDataset(API, DATA_API, token, 'SensorThings benchmark');
    say(`dataset ${dataset.id} released; ${dataset.base}`);

    say(`seeding ${OBSERVATIONS.toLocaleString('en')} Observations`);
    const seed = await seedSta(database.url, dataset, token, { datastreams: DATASTREAMS, observations: OBSERVATIONS, perOtherDatastream: PER_OTHER_DATASTREAM });
    say(`  in ${seed.seconds.toFixed(1)} s; Thing ${seed.thingId}, big Datastream ${seed.bigDatastreamId}`);

    // A window of a tenth of the series (100,000 at a million), in its second half.
    const windowSize = Math.round(OBSERVATIONS / 10);
    const from = new Date(seed.firstTime.getTime() + Math.round(OBSERVATIONS * 0.4) * 1000).toISOString().replace('.000Z', 'Z');
    const to = new Date(Date.parse(from) + windowSize * 1000).toISOString().replace('.000Z', 'Z');
    const latest = { path: `/Datastreams(${seed.bigDatastreamId})/Observations`, query: q('$top=100&$orderby=phenomenonTime desc') };
    const reads = [
      { name: 'latest 100 Observations', path: `${latest.path}?${latest.query}`, targetP99Ms: 30 },
      { name: `count of a window of ${windowSize.toLocaleString('en')}, first 10`, path: `${latest.path}?${q(`$count=true&$top=10&$filter=phenomenonTime ge ${from} and phenomenonTime lt ${to}`)}` },
      { name: 'a Thing with 5 Datastreams, their latest 3 Observations, Sensor, ObservedProperty, Locations', path: `/Things(${seed.thingId})?${q('$expand=Datastreams($top=5;$expand=Observations($top=3;$orderby=phenomenonTime desc),Sensor,ObservedProperty),Locations')}` },
    ];
    const loadBeforeReads = load1();
    const readResults = await measureReads(database.url, dataset, token, reads);

    say('gateway cost: (a) bearer token on the closed dataset');
    const bearer = await httpLoad(dataset.base + reads[0]!.path, { connections: CONNECTIONS, seconds: DURATION, headers: { authorization: `Bearer ${token}` }, warmupSeconds: WARMUP });
    checkServer('gateway cost (a)');
    say(`  ${brief(bearer)}`);
    // A personal access token (the contract's "Personal access tokens"), as a bearer and as the
    // password of HTTP Basic, as QGIS sends it: the same caller cache as an OIDC token once looked up.
    const pat = await personalAccessToken(API, token);
    say('gateway cost: (a2) personal access token as bearer, (a3) as the Basic password');
    const patBearer = await httpLoad(dataset.base + reads[0]!.path, { connections: CONNECTIONS, seconds: DURATION, headers: { authorization: `Bearer ${pat}` }, warmupSeconds: WARMUP });
    checkServer('gateway cost (a2)');
    say(`  ${brief(patBearer)}`);
    const patBasic = await httpLoad(dataset.base + reads[0]!.path, { connections: CONNECTIONS, seconds: DURATION, headers: { authorization: `Basic ${Buffer.from(`qgis:${pat}`).toString('base64')}` }, warmupSeconds: WARMUP });
    checkServer('gateway cost (a3)');
    say(`  ${brief(patBasic)}`);
    await openForAnonymousReads(API, token, dataset, reads[0]!.path);
    say('gateway cost: (b) anonymous on openDataAccess');
    const anonymous = await httpLoad(dataset.base + reads[0]!.path, { connections: CONNECTIONS, seconds: DURATION, warmupSeconds: WARMUP });
    checkServer('gateway cost (b)');
    say(`  ${brief(anonymous)}`);
    say('gateway cost: (c) the STA handler in process');
    const handler = await measureHandler(database.url, dataset, latest.path, latest.query);
    say(`  ${brief(handler)}`);

    say('writes');
    const writes = await measureWrites(database.url, dataset, token, seed.writeDatastreamId);

    const windowCount = await withClient(database.url, async (client) => Number((await client.query<{ n: number }>(
      `select count(*) as n from "${dataset.schema}".observations where datastream_id = $1 and phenomenon_time_start >= $2 and phenomenon_time_start < $3`,
      [seed.bigDatastreamId, from, to])).rows[0]!.n));
    const postgres = await withClient(database.url, async (client) => (await client.query<{ v: string }>("select current_setting('server_version') as v")).rows[0]!.v);
    const cpu = cpus();
    const report: StaReport = {
      date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
      machine: `${cpu.length} cores (${cpu[0]?.model.trim() ?? 'unknown CPU'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM`,
      cores: cpu.length,
      node: process.version,
      postgres: `PostgreSQL ${postgres.split(' ')[0]}`,
      connections: CONNECTIONS,
      durationSeconds: DURATION,
      logLevel: LOG_LEVEL,
      loadBefore,
      loadAtReads: loadBeforeReads,
      loadAfter: load1(),
      seed,
      window: { from, to, count: windowCount },
      reads: readResults,
      gateway: { bearer, patBearer, patBasic, anonymous, handler },
      writes,
    };
    writeResults(report);
    console.log(`\n${renderSummary(report)}`);
    say('written to bench/results-sta.md and bench/README.md');
  } finally {
    if (server) await server.stop().catch(() => undefined);
    await database.drop();
    say(`dropped ${database.name}`);
  }
  rmSync(workDir, { recursive: true, force: true });
}

main().catch((error: unknown) => {
  console.error('[bench:sta] failed:', error);
  process.exitCode = 1;
});
