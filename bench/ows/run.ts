/**
 * `npm run bench:ows`: OWS named APIs (WFS, WMS) through the data API gateway and its MapServer
 * pool, beside nginx in front of an identical pool (see "OWS through MapServer" in bench/README.md).
 * Starts the built program as a child process on a fresh PostgreSQL database, publishes a closed
 * and an open dataset with a `trees` collection, loads 100,000 features into each through the API
 * (timed), then loads WFS GetFeature and WMS GetMap through the gateway, and then through nginx,
 * one after another. Writes bench/results-ows.md (newest run first) and the figures block of
 * bench/README.md; stops everything it started and drops the database, also on failure.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { prependRun } from '../report.js';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { libpqEnvironmentOf } from '../../src/ows/libpq-environment.js';
import { ADMIN_EMAIL, benchLogLevel, serverEnvironment, devToken, CONNECTIONS, DURATION, REPO_ROOT, SERVER_URL } from '../settings.js';
import { createDatabase, withClient } from '../database.js';
import { assertServerRunning, cleanUpOnSignals, startServer, type ServerProcess } from '../server-process.js';
import { httpLoad, type Run } from '../sta/load.js';
import { startNginxBaseline, type NginxBaseline } from './nginx.js';
import { NGINX_KEPT, NGINX_PER_REQUEST, renderRun, renderSummary, type OwsLoad, type OwsReport } from './report.js';
import { EXTENT, featureCount, loadFeatures, releasedOwsDataset, treeBatch, wfsGetFeature, type OwsDataset } from './setup.js';

const root = REPO_ROOT;
const WARMUP = Number(process.env['BENCH_WARMUP'] ?? 3);
const LOG_LEVEL = benchLogLevel('warn');
const OWS_WORKERS = 2;
const NGINX_WORKERS = process.env['BENCH_NGINX_WORKERS'] ?? '1';
const PER_REQUEST = 10_000;
const REQUESTS = 10;
// Ports of their own, so that this benchmark, `npm run bench` and `npm run bench:sta` never collide.
const PORTS = { api: 18280, data: 18281, idp: 18290 };
const API = `http://127.0.0.1:${PORTS.api}`;
const DATA_API = `http://127.0.0.1:${PORTS.data}`;
const IDP = `http://127.0.0.1:${PORTS.idp}`;
const ISSUER = `${IDP}/realms/platform`;
// Short: unix socket paths (OWS_MAP_DIR/mapserv-<i>.sock) must stay under 108 bytes.
const WORK_DIR = `/tmp/bench-ows-${process.pid}`;
const MAP_DIR = join(WORK_DIR, 'maps');
const NGINX_DIR = join(WORK_DIR, 'nginx');
const logFile = join(WORK_DIR, 'server.log');

const say = (message: string) => console.log(`[bench:ows] ${message}`);
const load1 = () => loadavg()[0]!.toFixed(1);
const brief = (run: Run) => `${run.perSecond.toFixed(0)}/s, p50 ${run.p50Ms.toFixed(2)} ms, p99 ${run.p99Ms.toFixed(2)} ms${run.failed ? `, ${run.failed} failed ${JSON.stringify(run.statuses)}` : ''}`;

let server: ServerProcess | null = null;
let baseline: NginxBaseline | null = null;
let database: Awaited<ReturnType<typeof createDatabase>> | null = null;

async function cleanUp(): Promise<void> {
  const steps: Array<[string, () => Promise<unknown>]> = [
    ['nginx and its MapServer pool', async () => { await baseline?.stop(); baseline = null; }],
    // The server stops its own MapServer pool on SIGTERM.
    ['the server', async () => { await server?.stop(); server = null; }],
    ['the database', async () => { if (database) { await database.drop(); say(`dropped ${database.name}`); } database = null; }],
  ];
  for (const [what, step] of steps) await step().catch((error: Error) => console.error(`[bench:ows] could not stop ${what}: ${error.message}`));
}

cleanUpOnSignals(say, cleanUp);

const checkServer = (after: string) => assertServerRunning(server, after, logFile);

const tokenOf = (email: string) => devToken(ISSUER, email);

// WMS 1.3.0 with EPSG:4326 takes the box as lat/lon. The whole grid with a small margin, and the
// box of the loads: the middle sixteenth of the grid (a quarter of each side), 6,250 points.
const FULL_BBOX = [EXTENT.minLat - 0.005, EXTENT.minLon - 0.005, EXTENT.maxLat + 0.005, EXTENT.maxLon + 0.005].map((v) => v.toFixed(3)).join(',');
const [dLat, dLon] = [(EXTENT.maxLat - EXTENT.minLat) / 4, (EXTENT.maxLon - EXTENT.minLon) / 4];
const LOAD_BOX = { minLat: EXTENT.minLat + 1.5 * dLat, minLon: EXTENT.minLon + 1.5 * dLon, maxLat: EXTENT.minLat + 2.5 * dLat, maxLon: EXTENT.minLon + 2.5 * dLon };
const BBOX = [LOAD_BOX.minLat, LOAD_BOX.minLon, LOAD_BOX.maxLat, LOAD_BOX.maxLon].map((v) => v.toFixed(4)).join(',');
const wfsQuery = (slug: string) => wfsGetFeature(slug, 10);
const wmsQuery = (bbox = BBOX) => `SERVICE=WMS&VERSION=1.3.0&REQUEST=GetMap&LAYERS=trees&STYLES=&CRS=EPSG:4326&BBOX=${bbox}&WIDTH=256&HEIGHT=256&FORMAT=image/png`;

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** One request, checked to be a real answer: 200 and 10 GeoJSON features, or 200 and a PNG. */
async function probe(url: string, kind: 'WFS' | 'WMS', headers: Record<string, string>, saveAs: string): Promise<string> {
  const t0 = performance.now();
  const response = await fetch(url, { headers });
  const body = Buffer.from(await response.arrayBuffer());
  const ms = (performance.now() - t0).toFixed(0);
  writeFileSync(join(WORK_DIR, saveAs), body);
  const show = () => `${response.status} ${response.headers.get('content-type')}: ${body.subarray(0, 400).toString('utf8')}`;
  if (response.status !== 200) throw new Error(`GET ${url} answered ${show()}`);
  if (kind === 'WFS') {
    let features: unknown[] | undefined;
    try { features = (JSON.parse(body.toString('utf8')) as { features?: unknown[] }).features; } catch { /* not JSON */ }
    if (features?.length !== 10) throw new Error(`GET ${url}: expected a FeatureCollection of 10, got ${show()}`);
    return `10 features, ${body.length} bytes, ${ms} ms`;
  }
  if (!body.subarray(0, 8).equals(PNG)) throw new Error(`GET ${url}: expected a PNG, got ${show()}`);
  return `PNG, ${body.length} bytes, ${ms} ms`;
}

async function measure(loads: OwsLoad[], entry: Omit<OwsLoad, 'probe' | 'run'>, url: string, headers: Record<string, string>): Promise<void> {
  say(`${entry.through} ${entry.kind}, ${entry.dataset} dataset, ${entry.caller}`);
  const probed = await probe(url, entry.kind, headers, `${entry.through.replace(/\W+/g, '-').slice(0, 20)}-${entry.kind}-${entry.dataset}-${entry.caller.split(' ')[0]}.${entry.kind === 'WFS' ? 'json' : 'png'}`);
  const run = await httpLoad(url, { connections: CONNECTIONS, seconds: DURATION, headers, warmupSeconds: WARMUP });
  checkServer(`${entry.through} ${entry.kind}`);
  say(`  ${probed}; ${brief(run)}`);
  loads.push({ ...entry, path: url.replace(/^https?:\/\/[^/]+/, ''), probe: probed, run });
}

/** What `command args` prints (nginx -v prints to stderr). */
function version(command: string, args: string[]): string {
  const { stdout, stderr } = spawnSync(command, args, { encoding: 'utf8' });
  return `${stdout ?? ''}${stderr ?? ''}`.trim();
}

function writeResults(report: OwsReport) {
  const resultsPath = join(root, 'bench/results-ows.md');
  prependRun(resultsPath, 'OWS through MapServer', '`npm run bench:ows` (the summary is in bench/README.md, "OWS through MapServer")', renderRun(report));
  const readmePath = join(root, 'bench/README.md');
  const readme = readFileSync(readmePath, 'utf8');
  const begin = '<!-- ows-figures:begin -->';
  const end = '<!-- ows-figures:end -->';
  const from = readme.indexOf(begin);
  const to = readme.indexOf(end);
  if (from < 0 || to < from) {
    say(`bench/README.md lacks the ${begin} … ${end} block: only bench/results-ows.md written`);
    return;
  }
  writeFileSync(readmePath, `${readme.slice(0, from + begin.length)}\n${renderSummary(report)}${readme.slice(to)}`);
}

async function main() {
  if (!existsSync(join(root, 'dist/server.js'))) throw new Error('dist/server.js is missing: run `npm run build` first (`npm run bench:ows` does)');
  process.chdir(root);
  rmSync(WORK_DIR, { recursive: true, force: true });
  mkdirSync(MAP_DIR, { recursive: true });
  const loadBefore = load1();
  say(`load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}; work directory ${WORK_DIR}; server log ${logFile}`);
  database = await createDatabase(SERVER_URL, 'bench_ows');
  say(`database ${database.name}`);
  await withClient(database.url, (client) => client.query('create extension if not exists postgis'));
  server = await startServer({
    command: process.execPath, args: ['dist/server.js', 'all'], serverCommandLine: /^\S*node dist\/server\.js/,
    env: serverEnvironment(PORTS, LOG_LEVEL, { DATABASE_URL: database.url, OWS_MAP_DIR: MAP_DIR, OWS_WORKERS: String(OWS_WORKERS) }),
    readyUrl: `${API}/health/ready`, logFile,
  });
  say(`server ready after ${(server.readyMs / 1000).toFixed(2)} s`);
  const token = await tokenOf(ADMIN_EMAIL);
  const bearer = { authorization: `Bearer ${token}` };

  const closed = await releasedOwsDataset(API, DATA_API, token, { name: 'OWS benchmark, closed', slug: 'trees', openDataAccess: false });
  const open = await releasedOwsDataset(API, DATA_API, token, { name: 'OWS benchmark, open data', slug: 'trees', openDataAccess: true });
  say(`datasets: closed ${closed.id}, open ${open.id}`);

  const batches = Array.from({ length: REQUESTS }, (_, i) => treeBatch(i * PER_REQUEST, PER_REQUEST));
  say(`feature load: ${REQUESTS} × ${PER_REQUEST.toLocaleString('en')} into the closed dataset, one after another`);
  const sequential = await loadFeatures(closed, token, batches, PER_REQUEST, 1);
  say(`  ${sequential.totalPerSecond.toFixed(0)} features/s total, median request ${sequential.medianPerSecond.toFixed(0)}/s`);
  say('feature load: the same into the open dataset, 2 at a time');
  const concurrent = await loadFeatures(open, token, batches, PER_REQUEST, 2);
  say(`  ${concurrent.totalPerSecond.toFixed(0)} features/s total, median request ${concurrent.medianPerSecond.toFixed(0)}/s`);
  checkServer('feature load');
  for (const dataset of [closed, open]) {
    const count = await featureCount(dataset, token);
    if (count !== REQUESTS * PER_REQUEST) throw new Error(`${dataset.id}: featureCount ${count}, expected ${REQUESTS * PER_REQUEST}`);
  }
  // As autovacuum leaves a bulk-loaded table soon after: statistics for MapServer's queries.
  await withClient(database.url, async (client) => {
    for (const dataset of [closed, open]) await client.query(`vacuum (analyze) "ds_${dataset.id.replaceAll('-', '')}".trees`).catch((error: Error) => say(`  vacuum: ${error.message}`));
  });

  // The service writes each map and reloads its pool on the first OGC request of a dataset.
  for (const dataset of [closed, open]) {
    const url = `${dataset.base}?SERVICE=WFS&VERSION=2.0.0&REQUEST=GetCapabilities`;
    const t0 = performance.now();
    const response = await fetch(url, { headers: bearer });
    const text = await response.text();
    if (response.status !== 200 || !text.includes('WFS_Capabilities')) throw new Error(`GetCapabilities of ${dataset.id} answered ${response.status}: ${text.slice(0, 400)}`);
    say(`warm-up: GetCapabilities of the ${dataset.openDataAccess ? 'open' : 'closed'} dataset in ${(performance.now() - t0).toFixed(0)} ms`);
  }
  const anonymousOnClosed = await fetch(`${closed.base}?${wfsQuery(closed.slug)}`);
  await anonymousOnClosed.body?.cancel();
  if (anonymousOnClosed.status === 200) throw new Error('the closed dataset answered an anonymous GetFeature with 200');

  // One GetMap of the whole grid, alone: what a map of all 100,000 points costs MapServer.
  const fullMapMs: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    await probe(`${closed.base}?${wmsQuery(FULL_BBOX)}`, 'WMS', bearer, `full-map-${i}.png`);
    fullMapMs.push(performance.now() - t0);
  }
  say(`GetMap of the whole grid alone: ${fullMapMs.map((ms) => ms.toFixed(0)).join(', ')} ms`);
  const pointsInBbox = await withClient(database.url, async (client) => Number((await client.query<{ n: string }>(
    `select count(*) as n from "ds_${closed.id.replaceAll('-', '')}".trees where geom && st_makeenvelope($1, $2, $3, $4, 4326)`,
    [LOAD_BOX.minLon, LOAD_BOX.minLat, LOAD_BOX.maxLon, LOAD_BOX.maxLat])).rows[0]!.n));

  const loadAtReads = load1();
  const loads: OwsLoad[] = [];
  const gateway = (dataset: OwsDataset, kind: 'WFS' | 'WMS') => `${dataset.base}?${kind === 'WFS' ? wfsQuery(dataset.slug) : wmsQuery()}`;
  for (const kind of ['WFS', 'WMS'] as const) {
    await measure(loads, { through: 'gateway', name: `${kind} closed token`, kind, dataset: 'closed', caller: 'token', path: '' }, gateway(closed, kind), bearer);
  }
  for (const kind of ['WFS', 'WMS'] as const) {
    await measure(loads, { through: 'gateway', name: `${kind} open anonymous`, kind, dataset: 'open', caller: 'anonymous', path: '' }, gateway(open, kind), {});
    await measure(loads, { through: 'gateway', name: `${kind} open token`, kind, dataset: 'open', caller: 'token', path: '' }, gateway(open, kind), bearer);
  }

  // The baseline, after the gateway's loads: the service's MapServer workers are idle from here on.
  const configFile = join(MAP_DIR, 'mapserver.conf');
  const conf = readFileSync(configFile, 'utf8');
  for (const dataset of [closed, open]) if (!conf.includes(dataset.alias)) throw new Error(`${configFile} does not name ${dataset.alias}`);
  const nginxConfigs: string[] = [];
  for (const [through, keepConn] of [[NGINX_KEPT, true], [NGINX_PER_REQUEST, false]] as const) {
    baseline = await startNginxBaseline({
      dir: NGINX_DIR, workers: OWS_WORKERS, mapserv: '/usr/bin/mapserv', spawnFcgi: '/usr/bin/spawn-fcgi', nginx: '/usr/sbin/nginx', nginxWorkers: NGINX_WORKERS, keepConn,
      env: { ...libpqEnvironmentOf(database.url), MAPSERVER_CONFIG_FILE: configFile },
      maps: { closed: closed.alias, open: open.alias },
    });
    say(`${through} on ${baseline.url} (pid ${baseline.nginxPid}), MapServer workers ${baseline.workerPids.join(', ')}`);
    for (const [name, dataset] of [['closed', closed], ['open', open]] as const) {
      for (const kind of ['WFS', 'WMS'] as const) {
        await measure(loads, { through, name: `${kind} ${name} nginx`, kind, dataset: name, caller: 'none (nginx)', path: '' }, `${baseline.url}/${name}?${kind === 'WFS' ? wfsQuery(dataset.slug) : wmsQuery()}`, {});
      }
    }
    nginxConfigs.push(baseline.config);
    await baseline.stop();
    baseline = null;
  }

  const postgres = await withClient(database.url, async (client) => (await client.query<{ v: string; p: string }>("select current_setting('server_version') as v, postgis_lib_version() as p")).rows[0]!);
  const cpu = cpus();
  const report: OwsReport = {
    date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
    machine: `${cpu.length} cores (${cpu[0]?.model.trim() ?? 'unknown CPU'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM`,
    cores: cpu.length,
    node: process.version,
    postgres: `PostgreSQL ${postgres.v.split(' ')[0]} + PostGIS ${postgres.p}`,
    mapserver: version('/usr/bin/mapserv', ['-v']).replace(/^(MapServer version \S+).*$/s, '$1'),
    nginx: version('/usr/sbin/nginx', ['-v']).replace('nginx version: ', ''),
    nginxWorkers: NGINX_WORKERS,
    owsWorkers: OWS_WORKERS,
    connections: CONNECTIONS,
    durationSeconds: DURATION,
    warmupSeconds: WARMUP,
    logLevel: LOG_LEVEL,
    loadBefore, loadAtReads, loadAfter: load1(),
    features: REQUESTS * PER_REQUEST,
    sequential, concurrent, loads, nginxConfigs, bbox: BBOX, fullBbox: FULL_BBOX, pointsInBbox, fullMapMs,
  };
  writeResults(report);
  console.log(`\n${renderSummary(report)}`);
  say('written to bench/results-ows.md and bench/README.md');
}

try {
  await main();
} catch (error) {
  console.error('[bench:ows] failed:', error);
  process.exitCode = 1;
} finally {
  await cleanUp();
  if (process.exitCode !== 1 && !process.env['BENCH_KEEP']) rmSync(WORK_DIR, { recursive: true, force: true });
}
