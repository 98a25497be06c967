/**
 * `npm run bench:management`: the management API benchmark of bench/README.md. Builds nothing itself (the npm script
 * builds first), starts the real program as a child process, seeds PostgreSQL with bulk SQL,
 * loads three read paths with autocannon, times the same SQL alone, and writes
 * bench/results.md plus the figures block of bench/README.md.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_EMAIL, benchLogLevel, CLIENT_ID, devToken, CONNECTIONS, DURATION, REPO_ROOT, SERVER_URL, serverEnvironment } from './settings.js';
import { createDatabase, seed, withClient, SEED } from './database.js';
import { rssMiB, startServer, type ServerProcess, type StartOptions } from './server-process.js';
import { runLoad, type LoadResult } from './load.js';
import { captureQueries, installQueryCapture, timeQueries } from './sql-alone.js';
import { benchTokenCheck } from './token-check.js';
import { renderReport, type BenchReport, type StartMeasurement } from './report.js';
import { measureDatasetWrites } from './dataset-writes.js';
import { loadConfig } from '../src/config.js';
import { createContext } from '../src/runtime.js';
import { buildApp } from '../src/app.js';

const root = REPO_ROOT;
const SINGLE_SECONDS = Number(process.env['BENCH_SINGLE_DURATION'] ?? 5);
const LOG_LEVEL = benchLogLevel('info');
const PORTS = { api: 18080, data: 18081, idp: 18090 };
const SQL_RUNS = 15;
const SETTLE_MS = 2000;

const API = `http://127.0.0.1:${PORTS.api}`;
const IDP = `http://127.0.0.1:${PORTS.idp}`;
const ISSUER = `${IDP}/realms/platform`;
const workDir = mkdtempSync(join(tmpdir(), 'bench-'));
const logFile = join(workDir, 'server.log');

const say = (message: string) => console.log(`[bench] ${message}`);

/** The settings every child gets: its own ports, no inherited database, a fixed IdP URL. */
const serverEnv = (extra: Record<string, string>) => serverEnvironment(PORTS, LOG_LEVEL, extra);

async function start(label: string, opts: Pick<StartOptions, 'command' | 'args' | 'serverCommandLine'>, extraEnv: Record<string, string>) {
  say(`start: ${label}`);
  const server = await startServer({ ...opts, env: serverEnv(extraEnv), readyUrl: `${API}/health/ready`, logFile });
  await sleep(SETTLE_MS);
  const measurement: StartMeasurement = { label, readyMs: server.readyMs, rssMiB: rssMiB(server.serverPid()) };
  say(`  ready after ${(server.readyMs / 1000).toFixed(2)} s, RSS ${measurement.rssMiB.toFixed(0)} MiB`);
  return { server, measurement };
}

const NODE_DIST = { command: process.execPath, args: ['dist/server.js', 'all'], serverCommandLine: /^\S*node dist\/server\.js/ };
const NPM_START = { command: 'npm', args: ['start', '--silent'], serverCommandLine: /^\S*node dist\/server\.js/ };

/** `npm start` and `node dist/server.js` on the embedded PGlite database, first and later starts. */
async function measureEmbeddedStarts(): Promise<StartMeasurement[]> {
  const dataDir = join(workDir, 'pglite');
  const results: StartMeasurement[] = [];
  const runs: Array<[string, typeof NODE_DIST, string | undefined]> = [
    ['`npm start`, PGlite, first start', NPM_START, 'creates the database'],
    ['`npm start`, PGlite, restart', NPM_START, undefined],
    ['`node dist/server.js all`, PGlite, restart', NODE_DIST, undefined],
  ];
  for (const [label, command, note] of runs) {
    const { server, measurement } = await start(label, command, { DATA_DIR: dataDir });
    if (note) measurement.note = note;
    results.push(measurement);
    await stopServer(server);
  }
  return results;
}

async function stopServer(server: ServerProcess) {
  const code = await server.stop();
  if (code !== 0) throw new Error(`server did not stop cleanly (exit ${code}); see ${logFile}`);
}

const tokenOf = (email: string) => devToken(ISSUER, email);

/** The statements each scenario runs, captured from an in-process application on the same database. */
async function sqlAlone(databaseUrl: string, scenarios: Array<{ path: string; token: string }>) {
  installQueryCapture();
  // No background work: the saga runner's poll would be captured with the requests.
  const config = loadConfig({ ...serverEnv({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', BACKGROUND_WORK: 'off' }) });
  const ctx = await createContext(config, { url: databaseUrl, dataDir: null, poolSize: 2 });
  const app = await buildApp(ctx);
  try {
    await app.ready();
    const results = [];
    for (const { path, token } of scenarios) {
      const { status, queries } = await captureQueries(app, path, token);
      results.push(status === 200 ? await timeQueries(databaseUrl, path, queries, SQL_RUNS) : { path, status });
    }
    return results;
  } finally {
    await app.close();
    await ctx.db.destroy();
  }
}

function machine(): string {
  const cpu = cpus();
  return `${cpu.length} cores (${cpu[0]?.model.trim() ?? 'unknown CPU'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM`;
}

function writeResults(markdown: string) {
  writeFileSync(join(root, 'bench/results.md'), `# Benchmark results\n\nWritten by \`npm run bench:management\`; see README.md in this folder for the scenarios.\n\n${markdown}`);
  const readmePath = join(root, 'bench/README.md');
  if (!existsSync(readmePath)) return;
  const readme = readFileSync(readmePath, 'utf8');
  const begin = '<!-- results:begin -->';
  const end = '<!-- results:end -->';
  const from = readme.indexOf(begin);
  const to = readme.indexOf(end);
  if (from < 0 || to < from) return;
  writeFileSync(readmePath, `${readme.slice(0, from + begin.length)}\n${markdown}${readme.slice(to)}`);
}

async function main() {
  if (!existsSync(join(root, 'dist/server.js'))) throw new Error('dist/server.js is missing: run `npm run build` first (`npm run bench:management` does)');
  process.chdir(root);
  const loadBefore = loadavg()[0]!;
  say(`work directory ${workDir}; server log ${logFile}`);

  const starts = process.env['BENCH_SKIP_EMBEDDED'] ? [] : await measureEmbeddedStarts();

  const database = await createDatabase(SERVER_URL, 'bench');
  say(`database ${database.name}`);
  let server: ServerProcess | null = null;
  try {
    const pgEnv = { DATABASE_URL: database.url };
    const first = await start('`node dist/server.js all`, PostgreSQL, empty database', NODE_DIST, pgEnv);
    first.measurement.note = 'migrates and bootstraps';
    starts.push(first.measurement);
    await stopServer(first.server);

    say('seeding');
    const seeded = await seed(database.url, ADMIN_EMAIL);
    say(`  ${JSON.stringify(seeded.counts)} in ${seeded.seconds.toFixed(1)} s`);

    const second = await start('`node dist/server.js all`, PostgreSQL, seeded database', NODE_DIST, pgEnv);
    server = second.server;
    starts.push(second.measurement);

    const token = await tokenOf(ADMIN_EMAIL);
    const reader = await tokenOf(SEED.readerEmail);
    const q = SEED.groupWord;
    const scenarios = [
      { name: 'caller profile', path: '/v1/users/me', token },
      { name: 'group search', path: `/v1/groups?size=20&q=${q}`, token },
      { name: 'assignments of a group', path: `/v1/assignments?groupId=${seeded.sampleGroupId}`, token },
      { name: `datasets of ${SEED.readerDatapools} datapools`, path: '/v1/datasets?size=20', token: reader },
      { name: `dataset search in ${SEED.readerDatapools} datapools`, path: `/v1/datasets?size=20&q=${q}`, token: reader },
    ];
    const loads: LoadResult[] = [];
    for (const scenario of scenarios) {
      say(`load: GET ${scenario.path}`);
      const load = await runLoad(API, scenario.path, scenario.token, { durationSeconds: DURATION, connections: CONNECTIONS, singleSeconds: SINGLE_SECONDS });
      if (load.loaded && load.single) {
        say(`  ${CONNECTIONS} connections: ${load.loaded.requestsPerSecond.toFixed(0)} req/s, p50 ${load.loaded.p50Ms.toFixed(2)} ms, p99 ${load.loaded.p99Ms.toFixed(2)} ms`);
        say(`  1 connection: ${load.single.requestsPerSecond.toFixed(0)} req/s, p50 ${load.single.p50Ms.toFixed(2)} ms, p99 ${load.single.p99Ms.toFixed(2)} ms`);
      } else {
        say(`  not run: the probe answered ${load.probeStatus}`);
      }
      loads.push(load);
    }
    const rssAfterLoadMiB = rssMiB(server.serverPid());

    say('SQL alone');
    const sql = await sqlAlone(database.url, scenarios);
    for (const result of sql) say(`  ${result.path}: ${'queries' in result ? `${result.queries.length} statements, EXPLAIN ${result.explainMs.toFixed(2)} ms, round trips ${result.clientMs.toFixed(2)} ms` : `answered ${result.status}`}`);

    say('dataset writes');
    const datasetWrites = await measureDatasetWrites(API, token, { sagas: 100, creates: 1000 });
    say(`  CREATE saga p50 ${datasetWrites.sagaP50Ms.toFixed(1)} ms, p99 ${datasetWrites.sagaP99Ms.toFixed(1)} ms; ${datasetWrites.createsPerSecond.toFixed(0)} creates/s`);

    say('token check');
    const tokenCheck = await benchTokenCheck(ISSUER, CLIENT_ID, token);
    say(`  verifyCached ${tokenCheck.cachedNs.toFixed(0)} ns, await verify ${tokenCheck.awaitedNs.toFixed(0)} ns`);

    const postgres = await withClient(database.url, async (client) => (await client.query<{ v: string }>("select current_setting('server_version') as v")).rows[0]!.v);
    const report: BenchReport = {
      date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
      machine: machine(),
      node: process.version,
      postgres: `PostgreSQL ${postgres.split(' ')[0]}`,
      durationSeconds: DURATION,
      connections: CONNECTIONS,
      singleSeconds: SINGLE_SECONDS,
      loadAverage: `${loadBefore.toFixed(1)} / ${loadavg()[0]!.toFixed(1)}`,
      logLevel: LOG_LEVEL,
      seed: seeded,
      starts,
      rssAfterLoadMiB,
      scenarios: scenarios.map((scenario, i) => ({ name: scenario.name, load: loads[i]!, sql: sql[i]! })),
      token: tokenCheck,
      datasetWrites,
    };
    const markdown = renderReport(report);
    writeResults(markdown);
    console.log(`\n${markdown}`);
    say('written to bench/results.md and bench/README.md');
  } finally {
    if (server) await server.stop().catch(() => undefined);
    await database.drop();
    say(`dropped ${database.name}`);
  }
  rmSync(workDir, { recursive: true, force: true });
}

main().catch((error: unknown) => {
  console.error('[bench] failed:', error);
  process.exitCode = 1;
});
