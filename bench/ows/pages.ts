/**
 * `npm run bench:ows:pages`: WFS 2.0 GetFeature pages of 100 features (GeoJSON and GML) through the
 * data API gateway beside nginx passing the same request to MapServer workers of its own with a
 * FastCGI connection per request, at several connection counts, in interleaved rounds (gateway,
 * nginx, gateway, nginx, …) so that other work on the machine weighs on both alike. Also the
 * authenticated ÷ anonymous read of an open dataset. Besides req/s, the CPU time per request of the
 * front end alone (the Node process, or nginx's processes), which other load disturbs far less.
 *
 * Variants: `BENCH_OWS_VARIANTS=before=.bench-baseline/ows-dist,after=dist` starts one server per
 * built tree (each on a database of its own, set up identically), so that two builds are compared
 * in the same interleaved rounds; default `gateway=dist`. `BENCH_CPU_PROF=<dir>` runs the servers
 * with `node --cpu-prof` (profiles written there when they stop). Settings: `BENCH_CONNECTIONS_LIST`
 * (default `8,32`), `BENCH_DURATION` (seconds per load, default 5 here), `BENCH_WARMUP` (2),
 * `BENCH_ROUNDS` (2), `BENCH_OWS_FEATURES` (100000), `BENCH_OWS_FORMATS` (`json,gml`),
 * `BENCH_OWS_ONLY` (`nginx`, `auth`: one comparison only). Writes bench/results-ows-pages.md (newest run first).
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { prependRun } from '../report.js';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { libpqEnvironmentOf } from '../../src/ows/libpq-environment.js';
import { ADMIN_EMAIL, benchLogLevel, CLIENT_ID, devToken, REPO_ROOT, SERVER_URL } from '../settings.js';
import { createDatabase, withClient } from '../database.js';
import { processTree, startServer, type ServerProcess } from '../server-process.js';
import { httpLoad, type Run } from '../sta/load.js';
import { startNginxBaseline, type NginxBaseline } from './nginx.js';
import { loadFeatures, releasedOwsDataset, treeBatch, type OwsDataset } from './setup.js';

const env = (name: string, fallback: string) => process.env[name] ?? fallback;
const DURATION = Number(env('BENCH_DURATION', '5'));
const WARMUP = Number(env('BENCH_WARMUP', '2'));
const ROUNDS = Number(env('BENCH_ROUNDS', '2'));
const CONNECTIONS = env('BENCH_CONNECTIONS_LIST', '8,32').split(',').map(Number);
const FEATURES = Number(env('BENCH_OWS_FEATURES', '100000'));
const FORMATS = env('BENCH_OWS_FORMATS', 'json,gml').split(',') as Array<'json' | 'gml'>;
const ONLY = process.env['BENCH_OWS_ONLY'];
const CPU_PROF = process.env['BENCH_CPU_PROF'];
const LOG_LEVEL = benchLogLevel('info');
// `name=dist` or `name=dist@NAME=value@NAME=value`: the server's build, and settings of its own.
const VARIANTS = env('BENCH_OWS_VARIANTS', 'gateway=dist').split(',').map((spec) => {
  const [head, ...settings] = spec.split('@');
  const at = head!.indexOf('=');
  return { name: head!.slice(0, at), dist: resolve(REPO_ROOT, head!.slice(at + 1)), env: Object.fromEntries(settings.map((s) => [s.slice(0, s.indexOf('=')), s.slice(s.indexOf('=') + 1)])) };
});
const OWS_WORKERS = 2;
const PER_REQUEST = 10_000;
const PAGE = 100;
const WORK_DIR = `/tmp/bench-owsp-${process.pid}`;

const say = (message: string) => console.log(`[bench:ows:pages] ${message}`);

interface Variant {
  name: string;
  server: ServerProcess;
  database: Awaited<ReturnType<typeof createDatabase>>;
  token: string;
  closed: OwsDataset;
  open: OwsDataset;
}

const started: { variants: Variant[]; databases: Array<Awaited<ReturnType<typeof createDatabase>>>; servers: ServerProcess[]; nginx: NginxBaseline | null } = {
  variants: [], databases: [], servers: [], nginx: null,
};

async function cleanUp(): Promise<void> {
  await started.nginx?.stop().catch((error: Error) => say(`could not stop nginx: ${error.message}`));
  for (const server of started.servers) await server.stop().catch((error: Error) => say(`could not stop a server: ${error.message}`));
  for (const database of started.databases) await database.drop().catch((error: Error) => say(`could not drop ${database.name}: ${error.message}`));
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void cleanUp().finally(() => process.exit(130)));

const query = (slug: string, format: 'json' | 'gml') =>
  `SERVICE=WFS&VERSION=2.0.0&REQUEST=GetFeature&TYPENAMES=${slug}:trees&COUNT=${PAGE}${format === 'json' ? '&OUTPUTFORMAT=application/json' : ''}`;

/** One request, checked to be a real page of 100 features. */
async function probe(url: string, format: 'json' | 'gml', headers: Record<string, string>): Promise<void> {
  const response = await fetch(url, { headers });
  const text = await response.text();
  const ok = response.status === 200 && (format === 'json'
    ? (JSON.parse(text) as { features?: unknown[] }).features?.length === PAGE
    : text.includes(`numberReturned="${PAGE}"`));
  if (!ok) throw new Error(`GET ${url} answered ${response.status}: ${text.slice(0, 400)}`);
}

async function startVariant(name: string, dist: string, settings: Record<string, string>, index: number): Promise<Variant> {
  const ports = { api: 18380 + index * 10, data: 18381 + index * 10, idp: 18382 + index * 10 };
  const api = `http://127.0.0.1:${ports.api}`;
  const issuer = `http://127.0.0.1:${ports.idp}/realms/platform`;
  const mapDir = join(WORK_DIR, `maps-${index}`);
  mkdirSync(mapDir, { recursive: true });
  if (!existsSync(join(dist, 'server.js'))) throw new Error(`${dist}/server.js is missing`);
  const database = await createDatabase(SERVER_URL, 'bench_owsp');
  started.databases.push(database);
  await withClient(database.url, (client) => client.query('create extension if not exists postgis'));
  const profile = CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', resolve(CPU_PROF, name)] : [];
  const server = await startServer({
    command: process.execPath, args: [...profile, join(dist, 'server.js'), 'all'], serverCommandLine: /node .*server\.js all/,
    env: {
      HOST: '127.0.0.1', PORT: String(ports.api), DATA_PORT: String(ports.data), IDP_PORT: String(ports.idp), IDP_URL: `http://127.0.0.1:${ports.idp}`,
      BASE_URL: api, DATA_API_URL: `http://127.0.0.1:${ports.data}`, OIDC_ISSUER: issuer, OIDC_CLIENT_ID: CLIENT_ID,
      BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL, DEV_IDP: 'on', NODE_ENV: 'development', DEV_IDP_TTL: '3600',
      DATABASE_URL: database.url, LOG_LEVEL, OWS_MAP_DIR: mapDir, OWS_WORKERS: String(OWS_WORKERS), ...settings,
    },
    readyUrl: `${api}/health/ready`, logFile: join(WORK_DIR, `server-${name}.log`),
  });
  started.servers.push(server);
  const token = await devToken(issuer, ADMIN_EMAIL);
  const dataApi = `http://127.0.0.1:${ports.data}`;
  const closed = await releasedOwsDataset(api, dataApi, token, { name: 'WFS pages, closed', slug: 'trees', openDataAccess: false });
  const open = await releasedOwsDataset(api, dataApi, token, { name: 'WFS pages, open', slug: 'trees', openDataAccess: true });
  const batches = Array.from({ length: Math.ceil(FEATURES / PER_REQUEST) }, (_, i) => treeBatch(i * PER_REQUEST, Math.min(PER_REQUEST, FEATURES - i * PER_REQUEST)));
  for (const dataset of [closed, open]) await loadFeatures(dataset, token, batches, Math.min(PER_REQUEST, FEATURES), 2);
  await withClient(database.url, async (client) => {
    for (const dataset of [closed, open]) await client.query(`vacuum (analyze) "ds_${dataset.id.replaceAll('-', '')}".trees`);
  });
  // The first OGC request of a dataset writes its map and replaces the workers.
  for (const dataset of [closed, open]) for (const format of FORMATS) await probe(`${dataset.base}?${query(dataset.slug, format)}`, format, { authorization: `Bearer ${token}` });
  say(`${name}: ${dist}, server ready, datasets closed ${closed.id} and open ${open.id} with ${FEATURES} features each`);
  return { name, server, database, token, closed, open };
}

/** The middle value (the mean of the middle two of an even count). */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  return sorted.length === 0 ? Number.NaN : sorted.length % 2 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** CPU time (user + system, ms) the processes used so far: robust to other work on the machine, unlike req/s. */
function cpuMs(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone
    }
  }
  return ticks * 10; // USER_HZ is 100 on Linux
}

interface Cell { label: string; runs: Run[]; frontCpuMsPerRequest: number[] }

/**
 * One load; `front` are the processes in front of MapServer (the Node server alone, or nginx and
 * its workers), whose CPU time per request (after the warm-up) is recorded.
 */
async function load(cells: Map<string, Cell>, label: string, url: string, connections: number, format: 'json' | 'gml', headers: Record<string, string>, front: number[]): Promise<void> {
  await probe(url, format, headers);
  if (WARMUP > 0) await httpLoad(url, { connections, seconds: WARMUP, headers });
  const cpuBefore = cpuMs(front);
  const run = await httpLoad(url, { connections, seconds: DURATION, headers });
  const cpu = (cpuMs(front) - cpuBefore) / (run.ok + run.failed);
  const cell = cells.get(label) ?? { label, runs: [], frontCpuMsPerRequest: [] };
  cell.runs.push(run);
  cell.frontCpuMsPerRequest.push(cpu);
  cells.set(label, cell);
  say(`  ${label}: ${run.perSecond.toFixed(0)}/s, p50 ${run.p50Ms.toFixed(1)} ms, p99 ${run.p99Ms.toFixed(1)} ms, front end ≈${cpu.toFixed(2)} ms CPU/request${run.failed ? `, ${run.failed} failed ${JSON.stringify(run.statuses)}` : ''}`);
}

async function main() {
  rmSync(WORK_DIR, { recursive: true, force: true });
  mkdirSync(WORK_DIR, { recursive: true });
  const loadBefore = loadavg()[0]!.toFixed(1);
  for (const [index, { name, dist, env: settings }] of VARIANTS.entries()) started.variants.push(await startVariant(name, dist, settings, index));
  const first = started.variants[0]!;
  started.nginx = await startNginxBaseline({
    dir: join(WORK_DIR, 'nginx'), workers: OWS_WORKERS, mapserv: '/usr/bin/mapserv', spawnFcgi: '/usr/bin/spawn-fcgi', nginx: '/usr/sbin/nginx', nginxWorkers: '1', keepConn: false,
    env: { ...libpqEnvironmentOf(first.database.url), MAPSERVER_CONFIG_FILE: join(WORK_DIR, 'maps-0', 'mapserver.conf') },
    maps: { closed: first.closed.alias, open: first.open.alias },
  });
  for (const format of FORMATS) await probe(`${started.nginx.url}/closed?${query(first.closed.slug, format)}`, format, {});
  const cells = new Map<string, Cell>();
  const nginxPids = processTree(started.nginx.nginxPid);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const connections of CONNECTIONS) {
      for (const format of FORMATS) {
        say(`round ${round}, ${connections} connections, ${format}`);
        if (ONLY !== 'auth') {
          for (const v of started.variants) {
            await load(cells, `${connections}|${format}|closed token|${v.name}`, `${v.closed.base}?${query(v.closed.slug, format)}`, connections, format, { authorization: `Bearer ${v.token}` }, [v.server.serverPid()]);
            await load(cells, `${connections}|${format}|closed|nginx`, `${started.nginx.url}/closed?${query(first.closed.slug, format)}`, connections, format, {}, nginxPids);
          }
        }
        if (ONLY !== 'nginx' && format === 'json') {
          for (const v of started.variants) {
            await load(cells, `${connections}|${format}|open anonymous|${v.name}`, `${v.open.base}?${query(v.open.slug, format)}`, connections, format, {}, [v.server.serverPid()]);
            await load(cells, `${connections}|${format}|open token|${v.name}`, `${v.open.base}?${query(v.open.slug, format)}`, connections, format, { authorization: `Bearer ${v.token}` }, [v.server.serverPid()]);
          }
        }
      }
    }
  }
  const rate = (label: string) => median(cells.get(label)?.runs.map((run) => run.perSecond) ?? [Number.NaN]);
  const lines = [
    `## Run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    '',
    `${cpus().length} cores; load average (1 min) before / after: ${loadBefore} / ${loadavg()[0]!.toFixed(1)}; ${ROUNDS} interleaved rounds of ${DURATION} s (after ${WARMUP} s warm-up) per load; server LOG_LEVEL=${LOG_LEVEL}, OWS_WORKERS=${OWS_WORKERS}; nginx with a FastCGI connection per request to ${OWS_WORKERS} workers of its own; WFS 2.0 GetFeature COUNT=${PAGE} of ${FEATURES} features. Variants: ${VARIANTS.map((v) => `${v.name} = ${v.dist.replace(REPO_ROOT, '')}${Object.entries(v.env).map(([k, val]) => ` ${k}=${val}`).join('')}`).join(', ')}.`,
    '',
    '| load | req/s per round | median req/s | p50 ms (median) | p99 ms (median) | front end CPU ms/request (median) |',
    '|---|---|---:|---:|---:|---:|',
    ...[...cells.values()].map((cell) => `| ${cell.label.replaceAll('|', ', ')} | ${cell.runs.map((run) => run.perSecond.toFixed(0)).join(', ')} | ${rate(cell.label).toFixed(0)} | ${median(cell.runs.map((run) => run.p50Ms)).toFixed(1)} | ${median(cell.runs.map((run) => run.p99Ms)).toFixed(1)} | ${median(cell.frontCpuMsPerRequest).toFixed(2)} |`),
    '',
    // Issue 33's targets: the gateway ≥ 0.85 × nginx to the same workers, a token ≥ 0.95 × anonymous.
    '| ratio (median req/s) | value | target |',
    '|---|---:|---|',
  ];
  for (const connections of CONNECTIONS) for (const format of FORMATS) for (const v of started.variants) {
    const ratios: Array<[string, number, number]> = [
      [`${v.name} (token, closed) ÷ nginx, ${format}, ${connections} conn.`, rate(`${connections}|${format}|closed token|${v.name}`) / rate(`${connections}|${format}|closed|nginx`), 0.85],
      [`${v.name} token ÷ anonymous (open), ${format}, ${connections} conn.`, rate(`${connections}|${format}|open token|${v.name}`) / rate(`${connections}|${format}|open anonymous|${v.name}`), 0.95],
    ];
    for (const [what, value, target] of ratios) if (Number.isFinite(value)) lines.push(`| ${what} | ${value.toFixed(3)} | ≥ ${target}: ${value >= target ? 'met' : '**missed**'} |`);
  }
  const text = `${lines.join('\n')}\n`;
  console.log(`\n${text}`);
  prependRun(join(REPO_ROOT, 'bench/results-ows-pages.md'), 'WFS pages through the gateway and nginx', '`npm run bench:ows:pages` (bench/ows/pages.ts)', text);
}

try {
  await main();
} catch (error) {
  console.error('[bench:ows:pages] failed:', error);
  process.exitCode = 1;
} finally {
  await cleanUp();
  if (process.exitCode !== 1) rmSync(WORK_DIR, { recursive: true, force: true });
}
