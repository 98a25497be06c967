/**
 * `npm run bench:open-data`: the open-data reads against their targets (issue "Open data"), on the
 * real `node dist/server.js all` at the deployed defaults (LOG_LEVEL=info, the image's NODE_OPTIONS)
 * on a fresh PostgreSQL database with PostGIS:
 *
 * - the DCAT-AP catalogue of 10,000 released open datasets (`BENCH_CATALOGUE_DATASETS`): a page of
 *   100 in Turtle, p50 at 8 and 32 connections (target p50 ≤ 50 ms at 8), and each of the 100 pages
 *   asked once in turn (the first answer of a page, which renders it);
 * - OGC API – Features `items?limit=100` against the WFS 2.0 GetFeature of the same 100 features
 *   (COUNT=100, GeoJSON) through the gateway, anonymous on an open dataset of 100,000 points
 *   (`BENCH_OWS_FEATURES`), interleaved rounds (target items ≥ 0.9 × WFS in req/s).
 *
 * The 10,000 catalogue datasets are written straight into the tables (as their RELEASE sagas would
 * leave them: AVAILABLE, open, an OWS named API, a storage schema with its empty collection
 * catalogue); making them through the API would take an hour of sagas. Settings: `BENCH_DURATION`
 * (5 s), `BENCH_WARMUP` (2 s), `BENCH_ROUNDS` (3), `BENCH_CONNECTIONS_LIST` (8,32). Writes
 * bench/results-open-data.md (newest run first).
 */
import { mkdirSync, rmSync } from 'node:fs';
import { prependRun } from '../report.js';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { ADMIN_EMAIL, benchLogLevel, devToken, REPO_ROOT, SERVER_URL, serverEnvironment } from '../settings.js';
import { createDatabase, withClient } from '../database.js';
import { startServer, type ServerProcess } from '../server-process.js';
import { httpLoad, type Run } from '../sta/load.js';
import { loadFeatures, releasedOwsDataset, treeBatch, wfsGetFeature } from '../ows/setup.js';
import { percentile } from '../load.js';

const env = (name: string, fallback: string) => process.env[name] ?? fallback;
const DURATION = Number(env('BENCH_DURATION', '5'));
const WARMUP = Number(env('BENCH_WARMUP', '2'));
const ROUNDS = Number(env('BENCH_ROUNDS', '3'));
const CONNECTIONS = env('BENCH_CONNECTIONS_LIST', '8,32').split(',').map(Number);
const DATASETS = Number(env('BENCH_CATALOGUE_DATASETS', '10000'));
const FEATURES = Number(env('BENCH_OWS_FEATURES', '100000'));
const LOG_LEVEL = benchLogLevel('info');
const PORTS = { api: 18780, data: 18781, idp: 18790 };
const WORK_DIR = `/tmp/bench-open-data-${process.pid}`;
const PAGE_SIZE = 100;

const say = (message: string) => console.log(`[bench:open-data] ${message}`);
const started: { server: ServerProcess | null; database: Awaited<ReturnType<typeof createDatabase>> | null } = { server: null, database: null };

async function cleanUp(): Promise<void> {
  await started.server?.stop().catch((error: Error) => say(`could not stop the server: ${error.message}`));
  await started.database?.drop().catch((error: Error) => say(`could not drop the database: ${error.message}`));
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void cleanUp().finally(() => process.exit(130)));

/** Released open datasets, as their sagas leave them, in batches of one statement each. */
async function seedCatalogue(url: string): Promise<void> {
  const themes = ['TRAN', 'ENVI', 'ECON', 'GOVE', 'SOCI'];
  await withClient(url, async (client) => {
    for (let from = 0; from < DATASETS; from += 1000) {
      const ids = Array.from({ length: Math.min(1000, DATASETS - from) }, () => randomUUID());
      const rows = ids.map((id, i) => ({
        id, name: `Open dataset ${from + i}`, description: `Measurements of the city, part ${from + i}`,
        catalogue: JSON.stringify({ license: 'CC_BY_4_0', themes: [themes[(from + i) % 5]], keywords: ['city', `part ${from + i}`], accrualPeriodicity: 'DAILY' }),
      }));
      await client.query(`
        insert into datasets (id, name, description, open_data_access, status, pending_saga_type, provisioned, catalogue, first_released_at, record_modified_at)
        select id, name, description, true, 'AVAILABLE', null, true, catalogue::jsonb, now(), now()
          from json_to_recordset($1::json) as r(id uuid, name text, description text, catalogue text)`, [JSON.stringify(rows)]);
      await client.query(`
        insert into dataset_named_apis (dataset_id, position, slug, name, standard)
        select id, 0, 'maps', 'City maps', 'OWS' from unnest($1::uuid[]) as id`, [ids]);
      // Each OWS API's storage: its schema with the (empty) catalogue of feature collections.
      // Ids are our own UUIDs: the array literal holds nothing but hex digits and underscores.
      const schemas = ids.map((id) => `ds_${id.replaceAll('-', '')}`).join(',');
      await client.query(`do $$ declare s text; begin
        foreach s in array '{${schemas}}'::text[] loop
          execute format('create schema %I', s);
          execute format('create table %I.feature_collections (name text primary key, title text, geometry_type text not null, srid integer not null, properties jsonb not null default ''{}'', created_at timestamptz not null default now())', s);
        end loop; end $$`);
      say(`catalogue: ${from + ids.length} of ${DATASETS} datasets`);
    }
    await client.query('analyze datasets; analyze dataset_named_apis');
  });
}

interface Cell { label: string; runs: Run[] }
const median = (values: readonly number[]) => percentile([...values].sort((a, b) => a - b), 0.5);

async function main() {
  rmSync(WORK_DIR, { recursive: true, force: true });
  mkdirSync(WORK_DIR, { recursive: true });
  const loadBefore = loadavg()[0]!.toFixed(1);
  const database = await createDatabase(SERVER_URL, 'bench_open');
  started.database = database;
  await withClient(database.url, (client) => client.query('create extension if not exists postgis'));
  const api = `http://127.0.0.1:${PORTS.api}`;
  const dataApi = `http://127.0.0.1:${PORTS.data}`;
  started.server = await startServer({
    command: process.execPath, args: [join(REPO_ROOT, 'dist', 'server.js'), 'all'], serverCommandLine: /node .*server\.js all/,
    env: serverEnvironment(PORTS, LOG_LEVEL, { DATABASE_URL: database.url, OWS_MAP_DIR: join(WORK_DIR, 'maps') }),
    readyUrl: `${api}/health/ready`, logFile: join(WORK_DIR, 'server.log'),
  });
  const token = await devToken(`http://127.0.0.1:${PORTS.idp}/realms/platform`, ADMIN_EMAIL);

  const trees = await releasedOwsDataset(api, dataApi, token, { name: 'Trees, open', slug: 'trees', openDataAccess: true });
  const batches = Array.from({ length: Math.ceil(FEATURES / 10_000) }, (_, i) => treeBatch(i * 10_000, Math.min(10_000, FEATURES - i * 10_000)));
  await loadFeatures(trees, token, batches, Math.min(10_000, FEATURES), 2);
  await withClient(database.url, (client) => client.query(`vacuum (analyze) "ds_${trees.id.replaceAll('-', '')}".trees`));
  say(`OWS dataset ${trees.id} with ${FEATURES} trees`);
  await seedCatalogue(database.url);

  const items = `${trees.base}/collections/trees/items?limit=100`;
  const wfs = `${trees.base}?${wfsGetFeature(trees.slug, 100)}`;
  for (const url of [items, wfs]) {
    const response = await fetch(url);
    const body = await response.json() as { features?: unknown[] };
    if (response.status !== 200 || body.features?.length !== 100) throw new Error(`${url}: ${response.status}`);
  }
  const totalPages = Math.ceil((DATASETS + 1) / PAGE_SIZE);

  // Each page once, in turn: what a harvester meets (every page rendered for the first time).
  const firstAnswers: number[] = [];
  for (let page = 1; page <= totalPages; page++) {
    const started = performance.now();
    const response = await fetch(`${dataApi}/v1/catalogue?page=${page}`);
    const text = await response.text();
    firstAnswers.push(performance.now() - started);
    if (response.status !== 200 || !text.includes('dcat:Catalog')) throw new Error(`catalogue page ${page}: ${response.status}`);
  }
  firstAnswers.sort((a, b) => a - b);
  say(`catalogue, each of ${totalPages} pages once: p50 ${percentile(firstAnswers, 0.5).toFixed(1)} ms, p99 ${percentile(firstAnswers, 0.99).toFixed(1)} ms`);

  const cells = new Map<string, Cell>();
  const load = async (label: string, url: string, connections: number) => {
    const run = await httpLoad(url, { connections, seconds: DURATION, warmupSeconds: WARMUP });
    const cell = cells.get(label) ?? { label, runs: [] };
    cell.runs.push(run);
    cells.set(label, cell);
    say(`  ${label}: ${run.perSecond.toFixed(0)}/s, p50 ${run.p50Ms.toFixed(1)} ms, p99 ${run.p99Ms.toFixed(1)} ms${run.failed ? `, ${run.failed} failed ${JSON.stringify(run.statuses)}` : ''}`);
  };
  for (let round = 1; round <= ROUNDS; round++) {
    for (const connections of CONNECTIONS) {
      say(`round ${round}, ${connections} connections`);
      await load(`${connections}|catalogue page (Turtle, 100 datasets)`, `${dataApi}/v1/catalogue?page=${Math.ceil(totalPages / 2)}`, connections);
      await load(`${connections}|OGC API items?limit=100`, items, connections);
      await load(`${connections}|WFS GetFeature COUNT=100 (GeoJSON)`, wfs, connections);
    }
  }
  const value = (label: string, pick: (run: Run) => number) => median(cells.get(label)?.runs.map(pick) ?? [Number.NaN]);
  const lines = [
    `## Run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    '',
    `${cpus().length} cores; load average (1 min) before / after: ${loadBefore} / ${loadavg()[0]!.toFixed(1)}; ${ROUNDS} interleaved rounds of ${DURATION} s (after ${WARMUP} s warm-up) per load; server LOG_LEVEL=${LOG_LEVEL}, the image's NODE_OPTIONS; ${DATASETS} open datasets in the catalogue, ${FEATURES} trees in the OWS dataset; anonymous reads of open data.`,
    '',
    `Each of the ${totalPages} catalogue pages asked once, in turn (first answers): p50 ${percentile(firstAnswers, 0.5).toFixed(1)} ms, p99 ${percentile(firstAnswers, 0.99).toFixed(1)} ms.`,
    '',
    '| load | connections | req/s per round | median req/s | p50 ms per round | p99 ms (median) |',
    '|---|---:|---|---:|---|---:|',
    ...[...cells.values()].map((cell) => {
      const [connections, label] = cell.label.split('|');
      return `| ${label} | ${connections} | ${cell.runs.map((run) => run.perSecond.toFixed(0)).join(', ')} | ${value(cell.label, (run) => run.perSecond).toFixed(0)} | ${cell.runs.map((run) => run.p50Ms.toFixed(1)).join(', ')} | ${value(cell.label, (run) => run.p99Ms).toFixed(1)} |`;
    }),
    '',
    '| target | value | |',
    '|---|---:|---|',
  ];
  for (const connections of CONNECTIONS) {
    const p50 = value(`${connections}|catalogue page (Turtle, 100 datasets)`, (run) => run.p50Ms);
    if (connections === 8) lines.push(`| catalogue page p50 at 8 connections ≤ 50 ms | ${p50.toFixed(1)} ms | ${p50 <= 50 ? 'met' : '**missed**'} |`);
    const ratio = value(`${connections}|OGC API items?limit=100`, (run) => run.perSecond) / value(`${connections}|WFS GetFeature COUNT=100 (GeoJSON)`, (run) => run.perSecond);
    lines.push(`| items ÷ WFS GetFeature (req/s), ${connections} connections ≥ 0.9 | ${ratio.toFixed(2)} | ${ratio >= 0.9 ? 'met' : '**missed**'} |`);
  }
  const text = `${lines.join('\n')}\n`;
  console.log(`\n${text}`);
  prependRun(join(REPO_ROOT, 'bench/results-open-data.md'), 'Open data', '`npm run bench:open-data` (bench/open-data/run.ts)', text);
}

try {
  await main();
} catch (error) {
  console.error('[bench:open-data] failed:', error);
  process.exitCode = 1;
} finally {
  await cleanUp();
  if (process.exitCode !== 1) rmSync(WORK_DIR, { recursive: true, force: true });
}
