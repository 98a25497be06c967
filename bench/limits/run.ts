/**
 * `npm run bench`: the speed limits (see "Speed limits" in bench/README.md). Starts
 * the built program (`node dist/server.js all`, deployed defaults) on a fresh PostgreSQL database,
 * seeds the management tables, an STA dataset with a million Observations in one Datastream and two
 * OWS datasets with a `trees` collection, then measures each read against its baseline, interleaved
 * round by round at 8 and 32 connections: the read's own SQL behind a bare node:http + pg server
 * (bench/limits/sql-server.ts), nginx with a FastCGI connection per request to the gateway's own
 * MapServer workers, anonymous against authenticated. Calls the MQTT fan-out and CreateObservations
 * vs COPY measurements when their modules exist. Writes bench/results-limits.md and the figures
 * block of bench/README.md; stops everything it started and drops the database, also on failure.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ADMIN_EMAIL, benchLogLevel, devToken, REPO_ROOT, SERVER_URL, serverEnvironment } from '../settings.js';
import { createDatabase, seed, SEED, withClient } from '../database.js';
import { assertServerRunning, cleanUpOnSignals, startServer, type ServerProcess } from '../server-process.js';
import { captureReads, installQueryCapture, type CapturedQuery } from '../sql-alone.js';
import { openForAnonymousReads, releasedStaDataset, seedSta, emptyDatastream } from '../sta/setup.js';
import { featureCount, loadFeatures, releasedOwsDataset, treeBatch, wfsGetFeature } from '../ows/setup.js';
import { freePort, startNginxFront, type NginxFront } from '../ows/nginx.js';
import { libpqEnvironmentOf } from '../../src/ows/libpq-environment.js';
import { NO_NETWORK } from '../../src/ows/ows-server.js';
import { loadConfig } from '../../src/config.js';
import { createContext } from '../../src/runtime.js';
import { buildApp } from '../../src/app.js';
import { buildDataApiApp } from '../../src/data-api/gateway.app.js';
import { startSqlBaseline, type SqlBaseline } from './sql-baseline.js';
import { startChildServer, type ChildServer } from './child-server.js';
import type { FastCgiFrontSettings } from './fastcgi-front-server.js';
import { measurePair, type Pair, type PairResult } from './pairs.js';
import { measureCreateVsCopySafely, measureFanoutSafely, type Extra } from './extras.js';
import { allVerdicts, renderResults, renderSummary, type LimitsReport } from './report.js';

const root = REPO_ROOT;
const FASTCGI_FRONT = join(REPO_ROOT, 'bench/limits/fastcgi-front-server.ts');
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const SECONDS = Number(process.env['BENCH_DURATION'] ?? 5);
const WARMUP = Number(process.env['BENCH_WARMUP'] ?? 2);
const CONNECTIONS = [8, 32];
const OBSERVATIONS = Number(process.env['BENCH_STA_OBSERVATIONS'] ?? 1_000_000);
const DATASTREAMS = 100;
const PER_OTHER_DATASTREAM = 100;
const FEATURES_PER_REQUEST = 10_000;
const FEATURES = Math.max(FEATURES_PER_REQUEST, Number(process.env['BENCH_FEATURES'] ?? 100_000));
const NGINX_WORKERS = process.env['BENCH_NGINX_WORKERS'] ?? '1';
const STA_P99_TARGET_MS = 30;
// The deployed default; the suite sets nothing that tunes the service (OWS_MAP_DIR only says where its sockets are).
const LOG_LEVEL = benchLogLevel('info');
// Ports of their own, so that this suite and the other benchmarks never collide (BENCH_PORT_BASE moves them all).
const PORT_BASE = Number(process.env['BENCH_PORT_BASE'] ?? 18680);
const PORTS = { api: PORT_BASE, data: PORT_BASE + 1, idp: PORT_BASE + 10, mqtt: PORT_BASE + 3 };
const API = `http://127.0.0.1:${PORTS.api}`;
const DATA_API = `http://127.0.0.1:${PORTS.data}`;
const ISSUER = `http://127.0.0.1:${PORTS.idp}/realms/platform`;
// Short: unix socket paths (OWS_MAP_DIR/mapserv-<i>.sock) must stay under 108 bytes.
const WORK_DIR = `/tmp/bench-limits-${process.pid}`;
const MAP_DIR = join(WORK_DIR, 'maps');
const logFile = join(WORK_DIR, 'server.log');

const say = (message: string) => console.log(`[bench] ${message}`);
const load1 = () => loadavg()[0]!.toFixed(1);
/** The machine's CPU time so far (/proc/stat, all CPUs, in ticks): in all, and stolen by the hypervisor for other guests. */
function cpuTicks(): { total: number; steal: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is counted in user already).
  return { total: fields.slice(0, 8).reduce((sum, n) => sum + n, 0), steal: fields[7] ?? 0 };
}
const stolenPercent = (from: { total: number; steal: number }, to: { total: number; steal: number }) =>
  to.total > from.total ? (100 * (to.steal - from.steal) / (to.total - from.total)).toFixed(1) : '–';
// The fan-out's 1,000 subscribers all come from 127.0.0.1, where a city's come from as many
// addresses: the per-address cap (default 1,000) is raised past them; every other setting is the default.
const env = (extra: Record<string, string>) => serverEnvironment(PORTS, LOG_LEVEL, { MQTT_PORT: String(PORTS.mqtt), OWS_MAP_DIR: MAP_DIR, MQTT_MAX_CONNECTIONS_PER_ADDRESS: '1100', ...extra });
/** STA query strings keep `$`, `(`, `;` and `,` as clients send them; spaces are encoded. */
const q = (text: string) => text.replaceAll(' ', '%20');
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

let server: ServerProcess | null = null;
let sqlBaseline: SqlBaseline | null = null;
let nginx: NginxFront | null = null;
let nodeFront: ChildServer | null = null;
let database: Awaited<ReturnType<typeof createDatabase>> | null = null;

async function cleanUp(): Promise<void> {
  const steps: Array<[string, () => Promise<unknown>]> = [
    ['nginx', async () => { await nginx?.stop(); nginx = null; }],
    ['the bare Node front', async () => { await nodeFront?.stop(); nodeFront = null; }],
    ['the SQL server', async () => { await sqlBaseline?.stop(); sqlBaseline = null; }],
    // The server stops its own MapServer pool on SIGTERM.
    ['the server', async () => { await server?.stop(); server = null; }],
    ['the database', async () => { if (database) { await database.drop(); say(`dropped ${database.name}`); } database = null; }],
  ];
  for (const [what, step] of steps) await step().catch((error: Error) => console.error(`[bench] could not stop ${what}: ${error.message}`));
}

cleanUpOnSignals(say, cleanUp);

const checkServer = (after: string) => assertServerRunning(server, after, logFile);

/** Fails when a port is taken: the readiness probe would otherwise find another program's server. */
async function assertPortsFree(ports: number[]): Promise<void> {
  for (const port of ports) {
    await new Promise<void>((resolve, reject) => {
      const probe = createServer();
      probe.once('error', () => reject(new Error(`port ${port} is in use; the suite needs ${ports.join(', ')} (BENCH_PORT_BASE moves them)`)));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve()));
    });
  }
}

/** One GET; fails unless it answers 200. */
async function get(url: string, headers: Record<string, string> = {}): Promise<Buffer> {
  const response = await fetch(url, { headers });
  const body = Buffer.from(await response.arrayBuffer());
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${body.subarray(0, 400).toString('utf8')}`);
  return body;
}

/** Whether both ends give the same body, for the report (a difference is said, not fatal: the figures still hold). */
async function sameBody(what: string, a: { url: string; headers?: Record<string, string> }, b: { url: string; headers?: Record<string, string> }): Promise<string> {
  const [x, y] = [await get(a.url, a.headers), await get(b.url, b.headers)];
  const verdict = x.equals(y) ? 'the same body' : `**different bodies** (${x.length} and ${y.length} bytes)`;
  say(`check: ${what}: ${verdict}`);
  return `${what}: ${verdict}`;
}

/**
 * `cold`: captured on the caller's first request. `/v1/users/me` answers the caller itself, which
 * the service keeps between requests: a bare server has to read it (user, groups, grants), so its
 * SQL is that query, not the access-version read the cached request is left with.
 */
interface Read { name: string; app: 'management' | 'data'; path: string; token: string; cold?: boolean }

/**
 * The statements each read runs, captured from in-process applications (management API and data
 * API gateway) on the same database and identity provider as the child; also the pool size the
 * child's configuration gives.
 */
async function captureStatements(databaseUrl: string, reads: Read[]): Promise<{ statements: Record<string, CapturedQuery[]>; poolSize: number }> {
  installQueryCapture();
  // No background work: the saga runner's poll would be captured with the reads.
  const config = loadConfig(env({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', BACKGROUND_WORK: 'off' }));
  const statements: Record<string, CapturedQuery[]> = {};
  // One application at a time, each on a context of its own, as each runs in a process of its own.
  for (const [kind, build] of [['management', buildApp], ['data', buildDataApiApp]] as const) {
    const ofKind = reads.filter((read) => read.app === kind);
    const ctx = await createContext(config, { url: databaseUrl, dataDir: null, poolSize: 2 });
    const app = await build(ctx);
    try {
      await app.ready();
      const captured = await captureReads(app, ofKind);
      ofKind.forEach((read, i) => { statements[read.name] = captured[i]!; });
    } finally {
      await app.close();
      await ctx.db.destroy();
    }
  }
  return { statements, poolSize: config.database.poolSize };
}

function writeResults(report: LimitsReport) {
  writeFileSync(join(root, 'bench/results-limits.md'), renderResults(report));
  const readmePath = join(root, 'bench/README.md');
  const readme = readFileSync(readmePath, 'utf8');
  const begin = '<!-- limits-figures:begin -->';
  const end = '<!-- limits-figures:end -->';
  const from = readme.indexOf(begin);
  const to = readme.indexOf(end);
  if (from < 0 || to < from) throw new Error(`bench/README.md lacks the ${begin} … ${end} block`);
  writeFileSync(readmePath, `${readme.slice(0, from + begin.length)}\n${renderSummary(report)}${readme.slice(to)}`);
}

async function main() {
  if (!existsSync(join(root, 'dist/server.js'))) throw new Error('dist/server.js is missing: run `npm run build` first (`npm run bench` does)');
  process.chdir(root);
  const startedAt = performance.now();
  rmSync(WORK_DIR, { recursive: true, force: true });
  mkdirSync(MAP_DIR, { recursive: true });
  const loadBefore = load1();
  say(`load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}; work directory ${WORK_DIR}; server log ${logFile}`);
  await assertPortsFree(Object.values(PORTS));
  database = await createDatabase(SERVER_URL, 'bench_limits');
  const databaseUrl = database.url;
  say(`database ${database.name}`);
  await withClient(databaseUrl, (client) => client.query('create extension if not exists postgis'));
  server = await startServer({
    command: process.execPath, args: ['dist/server.js', 'all'], serverCommandLine: /^\S*node dist\/server\.js/,
    env: env({ DATABASE_URL: databaseUrl }), readyUrl: `${API}/health/ready`, logFile,
  });
  say(`server ready after ${(server.readyMs / 1000).toFixed(2)} s`);

  // 2. Seed: management tables, the STA dataset, the OWS datasets.
  const seedLines: string[] = [];
  say('seeding the management tables');
  const seeded = await seed(databaseUrl, ADMIN_EMAIL);
  seedLines.push(`management (bench/database.ts): ${Object.entries(seeded.counts).map(([table, n]) => `${n.toLocaleString('en')} ${table}`).join(', ')} in ${seeded.seconds.toFixed(1)} s`);
  say(`  ${seedLines.at(-1)}`);
  const admin = await devToken(ISSUER, ADMIN_EMAIL);
  const reader = await devToken(ISSUER, SEED.readerEmail);

  const sta = await releasedStaDataset(API, DATA_API, admin, 'Limits: SensorThings');
  say(`seeding ${OBSERVATIONS.toLocaleString('en')} Observations into ${sta.base}`);
  const staSeed = await seedSta(databaseUrl, sta, admin, { datastreams: DATASTREAMS, observations: OBSERVATIONS, perOtherDatastream: PER_OTHER_DATASTREAM });
  // Empty Datastreams for the write measurements, so that they never touch the read series.
  const fanoutDatastream = await emptyDatastream(sta, admin, staSeed.thingId, DATASTREAMS + 1);
  const writeDatastream = await emptyDatastream(sta, admin, staSeed.thingId, DATASTREAMS + 2);
  seedLines.push(`STA (bench/sta/setup.ts): Thing ${staSeed.thingId}, ${DATASTREAMS} Datastreams, ${OBSERVATIONS.toLocaleString('en')} Observations in Datastream ${staSeed.bigDatastreamId}, ${PER_OTHER_DATASTREAM} in each other, in ${staSeed.seconds.toFixed(1)} s; empty Datastreams ${fanoutDatastream} (MQTT fan-out) and ${writeDatastream} (CreateObservations vs COPY)`);
  say(`  ${seedLines.at(-1)}`);

  const closed = await releasedOwsDataset(API, DATA_API, admin, { name: 'Limits: OWS, closed', slug: 'trees', openDataAccess: false });
  const open = await releasedOwsDataset(API, DATA_API, admin, { name: 'Limits: OWS, open data', slug: 'trees', openDataAccess: true });
  const batches = Array.from({ length: Math.ceil(FEATURES / FEATURES_PER_REQUEST) }, (_, i) => treeBatch(i * FEATURES_PER_REQUEST, FEATURES_PER_REQUEST));
  for (const dataset of [closed, open]) {
    // One request at a time: both datasets get the same ids in the same order, so that their first 100 are the same trees.
    const loaded = await loadFeatures(dataset, admin, batches, FEATURES_PER_REQUEST, 1);
    const count = await featureCount(dataset, admin);
    if (count !== loaded.features) throw new Error(`${dataset.id}: featureCount ${count}, expected ${loaded.features}`);
    seedLines.push(`OWS (bench/ows/setup.ts), ${dataset.openDataAccess ? 'open' : 'closed'} dataset ${dataset.id}: ${count.toLocaleString('en')} trees through the items endpoint in ${loaded.seconds.toFixed(1)} s`);
    say(`  ${seedLines.at(-1)}`);
  }
  await withClient(databaseUrl, async (client) => {
    for (const dataset of [closed, open]) await client.query(`vacuum (analyze) "ds_${dataset.id.replaceAll('-', '')}".trees`);
  });
  checkServer('seeding');

  // The gateway writes each map and reloads its workers on a dataset's first OGC request: both
  // maps are written before nginx is pointed at the workers, so that no reload happens after.
  const wfs = (base: string) => `${base}?${wfsGetFeature('trees', 100)}`;
  for (const dataset of [closed, open]) {
    await get(`${dataset.base}?SERVICE=WFS&VERSION=2.0.0&REQUEST=GetCapabilities`, bearer(admin));
    const features = (JSON.parse((await get(wfs(dataset.base), bearer(admin))).toString('utf8')) as { features?: unknown[] }).features;
    if (features?.length !== 100) throw new Error(`GetFeature COUNT=100 on ${dataset.id} gave ${features?.length} features`);
  }
  const anonymousOnClosed = await fetch(wfs(closed.base));
  await anonymousOnClosed.body?.cancel();
  if (anonymousOnClosed.status === 200) throw new Error('the closed OWS dataset answered an anonymous GetFeature with 200');

  // 3a. The SQL baseline.
  const staPrefix = new URL(sta.base).pathname;
  const latest = `/Datastreams(${staSeed.bigDatastreamId})/Observations?${q('$top=100&$orderby=phenomenonTime desc')}`;
  const expand = `/Datastreams?${q('$top=100&$expand=Observations($top=1;$orderby=phenomenonTime desc)')}`;
  const toMany = `/Things?${q('$filter=Datastreams/Observations/result gt 5')}`;
  const reads: Read[] = [
    { name: 'users-me', app: 'management', path: '/v1/users/me', token: admin, cold: true },
    { name: 'datasets', app: 'management', path: '/v1/datasets?size=20', token: reader },
    { name: 'sta-latest', app: 'data', path: staPrefix + latest, token: admin },
    { name: 'sta-expand', app: 'data', path: staPrefix + expand, token: admin },
    { name: 'sta-filter', app: 'data', path: staPrefix + toMany, token: admin },
  ];
  say('capturing the statements of each read');
  const { statements, poolSize } = await captureStatements(databaseUrl, reads);
  for (const read of reads) say(`  ${read.name}: ${statements[read.name]!.length} statements`);
  sqlBaseline = await startSqlBaseline(WORK_DIR, databaseUrl, poolSize, statements, join(WORK_DIR, 'sql-server.log'));
  say(`SQL server on ${sqlBaseline.url} (pid ${sqlBaseline.pid}), pool of ${poolSize}`);
  const checks: string[] = [];
  for (const read of reads) {
    const body = await get(`${sqlBaseline.url}/${read.name}`);
    const perStatement = (JSON.parse(body.toString('utf8')) as unknown[][]).map((rows) => rows.length);
    checks.push(`SQL server /${read.name}: 200, ${body.length} bytes, rows per statement ${perStatement.join(' + ')}`);
  }

  // 3b. nginx, a FastCGI connection per request, to the gateway's own MapServer workers.
  const sockets = readdirSync(MAP_DIR).filter((name) => /^mapserv-\d+\.sock$/.test(name)).sort().map((name) => join(MAP_DIR, name));
  if (sockets.length === 0) throw new Error(`no MapServer worker sockets in ${MAP_DIR}`);
  // What the gateway passes each request (src/ows/ows-server.ts): its config file, no network, the database.
  const fastCgiEnv = { MAPSERVER_CONFIG_FILE: join(MAP_DIR, 'mapserver.conf'), ...NO_NETWORK, ...libpqEnvironmentOf(databaseUrl) };
  const maps = { closed: closed.alias, open: open.alias };
  nginx = await startNginxFront({ dir: join(WORK_DIR, 'nginx'), nginx: '/usr/sbin/nginx', nginxWorkers: NGINX_WORKERS, keepConn: false, env: fastCgiEnv, maps }, sockets);
  say(`nginx on ${nginx.url} (pid ${nginx.nginxPid}) in front of the gateway's workers: ${sockets.join(', ')}`);
  const nginxWfs = `${nginx.url}/closed?${wfsGetFeature('trees', 100)}`;
  checks.push(await sameBody('WFS GetFeature COUNT=100: gateway (token, closed) and nginx (closed map)', { url: wfs(closed.base), headers: bearer(admin) }, { url: nginxWfs }));
  // 3c. The floor of any Node front: node:http and a FastCGI connection per request to the same workers.
  const frontSettings: FastCgiFrontSettings = { port: await freePort(), sockets, maps, env: fastCgiEnv };
  nodeFront = await startChildServer(FASTCGI_FRONT, frontSettings, WORK_DIR, 'fastcgi-front', join(WORK_DIR, 'fastcgi-front.log'));
  say(`bare Node front on ${nodeFront.url} (pid ${nodeFront.pid})`);
  const nodeFrontWfs = `${nodeFront.url}/closed?${wfsGetFeature('trees', 100)}`;
  checks.push(await sameBody('WFS GetFeature COUNT=100: bare Node front and nginx (closed map)', { url: nodeFrontWfs }, { url: nginxWfs }));
  checks.push(await sameBody('WFS GetFeature COUNT=100: gateway token on the closed, anonymous on the open dataset', { url: wfs(closed.base), headers: bearer(admin) }, { url: wfs(open.base) }));

  // 4. The pairs.
  const sql = (name: string) => ({ label: 'its SQL on node:http + pg', url: `${sqlBaseline!.url}/${name}` });
  const staPair = (name: string, title: string, path: string): Pair => ({
    name: `STA: ${title}`, group: 'STA vs its SQL', compare: 'latency', p99TargetMs: STA_P99_TARGET_MS,
    subject: { label: 'gateway, token, closed dataset', url: sta.base + path, headers: bearer(admin) }, baseline: sql(name),
  });
  const pairs: Pair[] = [
    { name: 'management: GET /v1/users/me (admin)', group: 'management vs its SQL', compare: 'latency', subject: { label: 'management API, admin token', url: `${API}/v1/users/me`, headers: bearer(admin) }, baseline: sql('users-me') },
    { name: 'management: GET /v1/datasets?size=20 (dataset reader)', group: 'management vs its SQL', compare: 'latency', subject: { label: 'management API, reader token', url: `${API}/v1/datasets?size=20`, headers: bearer(reader) }, baseline: sql('datasets') },
    staPair('sta-latest', 'latest 100 Observations of a Datastream', latest),
    staPair('sta-expand', '100 Datastreams, each with its latest Observation', expand),
    staPair('sta-filter', 'Things whose Datastreams have an Observation with result > 5', toMany),
    { name: 'WFS GetFeature 100: gateway (token) vs nginx (FastCGI conn. per request)', group: 'gateway vs nginx', compare: 'throughput', pauseMs: 1_500, subject: { label: 'gateway, token, closed dataset', url: wfs(closed.base), headers: bearer(admin) }, baseline: { label: 'nginx, the same workers, closed map', url: nginxWfs } },
    // Informational: what nginx's place costs when Node takes it with nothing of the gateway's own work.
    { name: 'WFS GetFeature 100: bare node:http FastCGI front vs nginx (the floor of a Node front)', group: 'gateway vs nginx', compare: 'throughput', pauseMs: 1_500, informational: true, subject: { label: 'node:http + FastCGI per request, no auth, no log', url: nodeFrontWfs }, baseline: { label: 'nginx, the same workers, closed map', url: nginxWfs } },
    { name: 'WFS GetFeature 100: gateway (token) vs the bare Node front', group: 'gateway vs nginx', compare: 'throughput', pauseMs: 1_500, informational: true, subject: { label: 'gateway, token, closed dataset', url: wfs(closed.base), headers: bearer(admin) }, baseline: { label: 'node:http + FastCGI per request, no auth, no log', url: nodeFrontWfs } },
    { name: 'WFS GetFeature 100: token (closed) vs anonymous (open)', group: 'authenticated vs anonymous', compare: 'throughput', subject: { label: 'gateway, token, closed dataset', url: wfs(closed.base), headers: bearer(admin) }, baseline: { label: 'gateway, anonymous, open dataset', url: wfs(open.base) } },
  ];
  const options = { connections: CONNECTIONS, rounds: ROUNDS, seconds: SECONDS, warmupSeconds: WARMUP, check: checkServer, say };
  const loadAtPairs = load1();
  const ticksAtPairs = cpuTicks();
  const results: PairResult[] = [];
  for (const pair of pairs) results.push(await measurePair(pair, options));

  const stolenAtPairs = stolenPercent(ticksAtPairs, cpuTicks());
  // Last: the STA dataset opened for anonymous reads (the reads against its SQL above ran on it closed).
  await openForAnonymousReads(API, admin, sta, latest);
  checks.push(await sameBody('STA latest 100: token and anonymous on the opened dataset', { url: sta.base + latest, headers: bearer(admin) }, { url: sta.base + latest }));
  results.push(await measurePair({
    name: 'STA latest 100: token vs anonymous (the same dataset, opened)', group: 'authenticated vs anonymous', compare: 'throughput',
    subject: { label: 'gateway, token', url: sta.base + latest, headers: bearer(admin) }, baseline: { label: 'gateway, anonymous', url: sta.base + latest },
  }, options));

  // 5. MQTT fan-out and CreateObservations beside COPY.
  const nginxConfig = nginx.config;
  await nginx.stop();
  nginx = null;
  await nodeFront.stop();
  nodeFront = null;
  const extras: Extra[] = [];
  say('MQTT fan-out');
  extras.push(await measureFanoutSafely({ dataApiUrl: DATA_API, mqttUrl: `mqtt://127.0.0.1:${PORTS.mqtt}`, token: admin, staBase: sta.base, datastreamId: fanoutDatastream, rounds: ROUNDS }));
  checkServer('MQTT fan-out');
  say('CreateObservations vs COPY');
  extras.push(await measureCreateVsCopySafely({ databaseUrl, dataApiUrl: DATA_API, token: admin, staBase: sta.base, storageSchema: sta.schema, datastreamId: writeDatastream, rounds: ROUNDS }));
  checkServer('CreateObservations vs COPY');
  for (const extra of extras) say(`  ${extra.name}: ${extra.error ? `failed: ${extra.error}` : `targets ${extra.result!.targetsMet ? 'met' : 'missed'}`}`);

  const postgres = await withClient(databaseUrl, async (client) => (await client.query<{ v: string; p: string }>("select current_setting('server_version') as v, postgis_lib_version() as p")).rows[0]!);
  const cpu = cpus();
  const report: LimitsReport = {
    date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
    machine: `${cpu.length} cores (${cpu[0]?.model.trim() ?? 'unknown CPU'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM`,
    node: process.version,
    postgres: `PostgreSQL ${postgres.v.split(' ')[0]} + PostGIS ${postgres.p}`,
    settings: {
      rounds: String(ROUNDS), 'seconds per run': String(SECONDS), 'warm-up per side and connection count (s)': String(WARMUP),
      connections: CONNECTIONS.join(', '), 'server': '`node dist/server.js all`', LOG_LEVEL, 'OWS_WORKERS': 'default', 'SQL server pool': String(poolSize),
      'nginx worker_processes': NGINX_WORKERS, 'MapServer workers shared with nginx': String(sockets.length),
    },
    loadBefore, loadAtPairs, loadAfter: load1(), stolenAtPairs,
    seed: seedLines, pairs: results, statements, checks, nginxConfig,
    extras, seconds: (performance.now() - startedAt) / 1000,
  };
  writeResults(report);
  console.log(`\n${renderSummary(report)}`);
  const missed = allVerdicts(report).filter((v) => v.met === false).length;
  say(`written to bench/results-limits.md and bench/README.md; ${missed} targets missed`);
}

try {
  await main();
} catch (error) {
  console.error('[bench] failed:', error);
  process.exitCode = 1;
} finally {
  await cleanUp();
  if (process.exitCode !== 1 && !process.env['BENCH_KEEP']) rmSync(WORK_DIR, { recursive: true, force: true });
}
