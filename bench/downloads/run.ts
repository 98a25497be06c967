/**
 * `npm run bench:downloads`: the bulk downloads against their targets (issue "Open data"), on the
 * real `node dist/server.js all` at the deployed defaults (LOG_LEVEL=info, the image's NODE_OPTIONS)
 * on a fresh PostgreSQL database with PostGIS, anonymous on open datasets:
 *
 * Each file is read to its last byte by curl, as a user downloads it.
 *
 * - `observations.csv` of 1,000,000 Observations (streamed by COPY; with `DOWNLOAD_COPY_CONCURRENCY=0`
 *   in this environment, which the server inherits, read in keyset batches) (`BENCH_OBSERVATIONS`: one Datastream of half of
 *   them, 99 of the rest shared out), to its last byte: rows per second (target ≥ 200,000) and the
 *   server's resident memory during it, sampled every 50 ms, above what it was just before (target
 *   growth ≤ 50 MiB); beside it, PostgreSQL's own `COPY` of the same rows in the same order to
 *   /dev/null (psql), what the database alone takes;
 * - `download.gpkg` of 100,000 points (`BENCH_GPKG_FEATURES`) to its last byte, against `ogr2ogr`
 *   run alone on the same table with the same options (target ≤ 2 × ogr2ogr alone).
 *
 * Each pair is measured in interleaved rounds (`BENCH_ROUNDS`, 3), after one unmeasured download.
 * Writes bench/results-downloads.md (newest run first).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { prependRun } from '../report.js';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { ADMIN_EMAIL, benchLogLevel, devToken, REPO_ROOT, SERVER_URL, serverEnvironment } from '../settings.js';
import { createDatabase, withClient } from '../database.js';
import { rssMiB, startServer, type ServerProcess } from '../server-process.js';
import { openForAnonymousReads, releasedStaDataset, seedSta } from '../sta/setup.js';
import { loadFeatures, releasedOwsDataset, treeBatch } from '../ows/setup.js';
import { libpqEnvironmentOf } from '../../src/ows/libpq-environment.js';

const env = (name: string, fallback: string) => process.env[name] ?? fallback;
const ROUNDS = Number(env('BENCH_ROUNDS', '3'));
const OBSERVATIONS = Number(env('BENCH_OBSERVATIONS', '1000000'));
const GPKG_FEATURES = Number(env('BENCH_GPKG_FEATURES', '100000'));
const LOG_LEVEL = benchLogLevel('info');
const PORTS = { api: 18880, data: 18881, idp: 18890 };
const WORK_DIR = `/tmp/bench-downloads-${process.pid}`;
const DATASTREAMS = 100;
/** The server's setting, from this environment (`DOWNLOAD_COPY_CONCURRENCY=0` measures the keyset batches instead of COPY). */
const COPY_CONCURRENCY = process.env['DOWNLOAD_COPY_CONCURRENCY'] ?? '4';

const say = (message: string) => console.log(`[bench:downloads] ${message}`);
const started: { server: ServerProcess | null; database: Awaited<ReturnType<typeof createDatabase>> | null } = { server: null, database: null };

async function cleanUp(): Promise<void> {
  await started.server?.stop().catch((error: Error) => say(`could not stop the server: ${error.message}`));
  await started.database?.drop().catch((error: Error) => say(`could not drop the database: ${error.message}`));
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void cleanUp().finally(() => process.exit(130)));

interface Transfer { seconds: number; bytes: number; lines: number; rssGrowthMiB: number }

/**
 * A whole download as a user takes it, with curl (to /dev/null), while the server's RSS is sampled
 * every 50 ms. `lines`: counted only where asked (the unmeasured pass), with Node reading the body.
 */
function download(url: string, serverPid: number): Promise<Transfer> {
  const before = rssMiB(serverPid);
  let peak = before;
  const sampler = setInterval(() => { peak = Math.max(peak, rssMiB(serverPid)); }, 50);
  const startedAt = performance.now();
  return new Promise<Transfer>((resolve, reject) => {
    const curl = spawn('curl', ['-s', '-f', '-o', '/dev/null', '-w', '%{size_download}', url], { stdio: ['ignore', 'pipe', 'inherit'] });
    let written = '';
    curl.stdout.setEncoding('utf8').on('data', (text: string) => { written += text; });
    curl.on('error', reject);
    curl.on('close', (code) => {
      if (code !== 0) return reject(new Error(`curl ${url}: exit ${code}`));
      resolve({ seconds: (performance.now() - startedAt) / 1000, bytes: Number(written), lines: Number.NaN, rssGrowthMiB: peak - before });
    });
  }).finally(() => clearInterval(sampler));
}

/** The number of lines of a download (the unmeasured pass checks that every row came). */
async function countLines(url: string): Promise<number> {
  const response = await fetch(url);
  let lines = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines += 1;
  }
  return lines;
}

/** Runs a program and measures it; throws on failure. */
function timed(command: string, args: string[], extraEnv: Record<string, string>): number {
  const startedAt = performance.now();
  const run = spawnSync(command, args, { env: { ...process.env, ...extraEnv }, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`${command} failed: ${run.stderr}`);
  return (performance.now() - startedAt) / 1000;
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};
const spread = (values: readonly number[], digits = 2) => `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;

async function main() {
  rmSync(WORK_DIR, { recursive: true, force: true });
  mkdirSync(WORK_DIR, { recursive: true });
  const loadBefore = loadavg()[0]!.toFixed(1);
  const database = await createDatabase(SERVER_URL, 'bench_downloads');
  started.database = database;
  await withClient(database.url, (client) => client.query('create extension if not exists postgis'));
  const api = `http://127.0.0.1:${PORTS.api}`;
  const dataApi = `http://127.0.0.1:${PORTS.data}`;
  started.server = await startServer({
    command: process.execPath, args: [join(REPO_ROOT, 'dist', 'server.js'), 'all'], serverCommandLine: /node .*server\.js all/,
    env: serverEnvironment(PORTS, LOG_LEVEL, { DATABASE_URL: database.url, OWS_MAP_DIR: join(WORK_DIR, 'maps'), DOWNLOAD_TEMP_DIR: WORK_DIR }),
    readyUrl: `${api}/health/ready`, logFile: join(WORK_DIR, 'server.log'),
  });
  const serverPid = started.server.serverPid();
  const token = await devToken(`http://127.0.0.1:${PORTS.idp}/realms/platform`, ADMIN_EMAIL);

  // SensorThings: one Thing, 100 Datastreams; half the Observations in the first, the rest shared by the others.
  const sta = await releasedStaDataset(api, dataApi, token, 'Downloads, Observations');
  const perOther = Math.ceil(OBSERVATIONS / 2 / (DATASTREAMS - 1));
  const big = OBSERVATIONS - perOther * (DATASTREAMS - 1);
  const seeded = await seedSta(database.url, sta, token, { datastreams: DATASTREAMS, observations: big, perOtherDatastream: perOther });
  const observations = big + perOther * (DATASTREAMS - 1);
  await openForAnonymousReads(api, token, sta, '/Things');
  say(`STA dataset with ${observations} Observations in ${DATASTREAMS} Datastreams (${seeded.seconds.toFixed(0)} s)`);

  // OWS: 100,000 points in one collection.
  const trees = await releasedOwsDataset(api, dataApi, token, { name: 'Downloads, trees', slug: 'trees', openDataAccess: true });
  const batches = Array.from({ length: Math.ceil(GPKG_FEATURES / 10_000) }, (_, i) => treeBatch(i * 10_000, Math.min(10_000, GPKG_FEATURES - i * 10_000)));
  await loadFeatures(trees, token, batches, Math.min(10_000, GPKG_FEATURES), 2);
  const treesSchema = `ds_${trees.id.replaceAll('-', '')}`;
  await withClient(database.url, (client) => client.query(`vacuum (analyze) "${treesSchema}".trees`));
  say(`OWS dataset with ${GPKG_FEATURES} trees`);

  const csvUrl = `${sta.base}/download/observations.csv`;
  const gpkgUrl = `${trees.base}/download.gpkg`;
  const libpq = libpqEnvironmentOf(database.url);
  const copySql = `copy (select o.datastream_id, d.name, o.phenomenon_time_start, o.result_time, o.result, o.feature_of_interest_id
    from "${sta.schema}".observations o join "${sta.schema}".datastreams d on d.id = o.datastream_id
    order by o.datastream_id, o.phenomenon_time_start, o.id) to stdout with (format csv, header)`;
  const copyAlone = () => timed('sh', ['-c', `psql -X -q -c '${copySql.replaceAll("'", "'\\''")}' > /dev/null`], libpq);
  const gpkgFile = join(WORK_DIR, 'alone.gpkg');
  // The server's own arguments (src/ows/geopackage.ts).
  const ogr2ogrAlone = () => {
    rmSync(gpkgFile, { force: true });
    return timed('ogr2ogr', ['-f', 'GPKG', gpkgFile, `PG:schemas=${treesSchema}`, 'trees', '-lco', 'GEOMETRY_NAME=geom', '-lco', 'FID=fid',
      '-gt', '100000', '--config', 'OGR_SQLITE_SYNCHRONOUS', 'OFF', '-nomd'], libpq);
  };

  // One unmeasured pass of each: caches warm, the server's code paths compiled.
  const counted = await countLines(csvUrl);
  if (counted !== observations + 1) throw new Error(`observations.csv: ${counted} lines for ${observations} Observations`);
  await download(gpkgUrl, serverPid);
  copyAlone();
  ogr2ogrAlone();

  const csv: Transfer[] = [];
  const copy: number[] = [];
  const gpkg: Transfer[] = [];
  const alone: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const c = await download(csvUrl, serverPid);
    csv.push(c);
    copy.push(copyAlone());
    const g = await download(gpkgUrl, serverPid);
    gpkg.push(g);
    alone.push(ogr2ogrAlone());
    say(`round ${round}: observations.csv ${c.seconds.toFixed(2)} s (${(observations / c.seconds).toFixed(0)} rows/s, RSS +${c.rssGrowthMiB.toFixed(1)} MiB), COPY alone ${copy.at(-1)!.toFixed(2)} s; download.gpkg ${g.seconds.toFixed(2)} s, ogr2ogr alone ${alone.at(-1)!.toFixed(2)} s`);
  }
  const rowsPerSecond = csv.map((run) => observations / run.seconds);
  const growth = csv.map((run) => run.rssGrowthMiB);
  const ratio = gpkg.map((run, i) => run.seconds / alone[i]!);
  const lines = [
    `## Run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    '',
    `${cpus().length} cores; load average (1 min) before / after: ${loadBefore} / ${loadavg()[0]!.toFixed(1)}; ${ROUNDS} interleaved rounds after one unmeasured pass; server LOG_LEVEL=${LOG_LEVEL}, the image's NODE_OPTIONS; anonymous downloads of open datasets, read to the last byte by curl (to /dev/null).`,
    '',
    '| download | size | seconds per round | median | what it is measured against |',
    '|---|---:|---|---:|---|',
    `| observations.csv, ${observations.toLocaleString('en')} rows, ${COPY_CONCURRENCY === '0' ? 'in keyset batches' : 'by COPY'} (DOWNLOAD_COPY_CONCURRENCY=${COPY_CONCURRENCY}) | ${(csv[0]!.bytes / 2 ** 20).toFixed(0)} MiB | ${csv.map((run) => run.seconds.toFixed(2)).join(', ')} | ${median(csv.map((run) => run.seconds)).toFixed(2)} | PostgreSQL's COPY of the same rows, same order, to /dev/null: ${copy.map((s) => s.toFixed(2)).join(', ')} s |`,
    `| download.gpkg, ${GPKG_FEATURES.toLocaleString('en')} points | ${(gpkg[0]!.bytes / 2 ** 20).toFixed(1)} MiB | ${gpkg.map((run) => run.seconds.toFixed(2)).join(', ')} | ${median(gpkg.map((run) => run.seconds)).toFixed(2)} | ogr2ogr alone, same table and options: ${alone.map((s) => s.toFixed(2)).join(', ')} s |`,
    '',
    '| target | value (median; spread) | |',
    '|---|---:|---|',
    `| observations.csv ≥ 200,000 rows/s | ${median(rowsPerSecond).toFixed(0)} rows/s (${spread(rowsPerSecond, 0)}) | ${median(rowsPerSecond) >= 200_000 ? 'met' : '**missed**'} |`,
    `| observations.csv: server RSS growth ≤ 50 MiB | ${median(growth).toFixed(1)} MiB (${spread(growth, 1)}) | ${Math.max(...growth) <= 50 ? 'met' : '**missed**'} |`,
    `| download.gpkg ÷ ogr2ogr alone ≤ 2 | ${median(ratio).toFixed(2)} (${spread(ratio)}) | ${median(ratio) <= 2 ? 'met' : '**missed**'} |`,
  ];
  const text = `${lines.join('\n')}\n`;
  console.log(`\n${text}`);
  prependRun(join(REPO_ROOT, 'bench/results-downloads.md'), 'Bulk downloads', '`npm run bench:downloads` (bench/downloads/run.ts)', text);
}

try {
  await main();
} catch (error) {
  console.error('[bench:downloads] failed:', error);
  process.exitCode = 1;
} finally {
  await cleanUp();
  if (process.exitCode !== 1) rmSync(WORK_DIR, { recursive: true, force: true });
}
