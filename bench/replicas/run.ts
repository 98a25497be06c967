/**
 * `npm run bench:replicas`: the same work through 1, 2 and 3 replicas behind nginx, beside the
 * same SQL alone on PostgreSQL, and how soon a write or a revocation made through one replica shows
 * on another (see "Replicas behind nginx" in bench/README.md). Starts the cluster of
 * test/cluster/harness.ts (three replicas of `node dist/server.js all`, the identity provider,
 * Debian's nginx, a fresh database), seeds datasets and an STA series, loads each scenario through
 * fronts over 1, 2 and 3 replicas with the counts interleaved, and writes bench/results-replicas.md
 * plus the figures block of bench/README.md.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, SERVER_URL } from '../settings.js';
import { withClient } from '../database.js';
import { captureQueries, installQueryCapture, type CapturedQuery } from '../sql-alone.js';
import { httpLoad } from '../sta/load.js';
import { releasedStaDataset, seedSta } from '../sta/setup.js';
import { startCluster, type Cluster } from '../../test/cluster/harness.js';
import { locateNginx } from '../../test/cluster/nginx.js';
import { REALM } from '../../test/helpers/test-app.js';
import { loadConfig } from '../../src/config.js';
import { createContext } from '../../src/runtime.js';
import { buildApp } from '../../src/app.js';
import { buildDataApiApp } from '../../src/data-api/gateway.app.js';
import { startCpuMeasurement, type Parties } from './cpu.js';
import { sqlAlone } from './sql-alone.js';
import { renderResults, renderSummary, type Measured, type ReplicasReport } from './report.js';
import { DATAPOOLS, DATASETS_PER_POOL, READER_EMAIL, READER_POOLS, REVOCABLE_EMAIL, seedDatasets, startFronts, type Front } from './setup.js';
import { revocationVisibility, writeVisibility } from './visibility.js';

const SECONDS = Number(process.env['BENCH_REPLICAS_DURATION'] ?? 6);
const WARMUP = Number(process.env['BENCH_REPLICAS_WARMUP'] ?? 1);
const ROUNDS = Number(process.env['BENCH_REPLICAS_ROUNDS'] ?? 3);
const CONNECTIONS = (process.env['BENCH_REPLICAS_CONNECTIONS'] ?? '8,32').split(',').map(Number);
const OBSERVATIONS = Number(process.env['BENCH_REPLICAS_OBSERVATIONS'] ?? 5_000);
const WRITES = Number(process.env['BENCH_REPLICAS_WRITES'] ?? 300);
const REVOCATIONS = Number(process.env['BENCH_REPLICAS_REVOCATIONS'] ?? 40);
/** The deployed default; the cluster test's harness sets warn, which this overrides. */
const LOG_LEVEL = process.env['BENCH_LOG_LEVEL'] ?? 'info';
const REPLICAS = 3;

const say = (message: string) => console.log(`[bench:replicas] ${message}`);

interface Scenario {
  name: string;
  /** Path below the front's URL (management or data API). */
  path: string;
  api: 'management' | 'data';
  token: string;
  statements: CapturedQuery[];
}

/** The statements one warm request of each scenario runs, from an in-process instance of the same code on the same database. */
async function captureStatements(databaseUrl: string, issuer: string, scenarios: Array<Omit<Scenario, 'statements'>>): Promise<CapturedQuery[][]> {
  installQueryCapture();
  const config = loadConfig({ DATABASE_URL: databaseUrl, OIDC_ISSUER: issuer, DEV_IDP: 'off', NODE_ENV: 'development', LOG_LEVEL: 'silent', HOST: '127.0.0.1' });
  const ctx = await createContext(config, { url: databaseUrl, dataDir: null, poolSize: 2 });
  const apps = { management: await buildApp(ctx), data: await buildDataApiApp(ctx) };
  try {
    const captured: CapturedQuery[][] = [];
    for (const scenario of scenarios) {
      const app = apps[scenario.api];
      await app.ready();
      const { status, queries } = await captureQueries(app, scenario.path, scenario.token);
      if (status !== 200) throw new Error(`in-process GET ${scenario.path} answered ${status}`);
      // The data API's route table polls on its own schedule; that is not the request's work.
      captured.push(queries.filter((query) => !/gateway_route_version|gateway_routes/.test(query.text)));
    }
    return captured;
  } finally {
    await apps.management.close();
    await apps.data.close();
    await ctx.db.destroy();
  }
}

/** Every replica serves `path` (its route table followed the release) before the load starts. */
async function servedEverywhere(cluster: Cluster, path: string, token: string): Promise<void> {
  for (const replica of cluster.replicas) {
    const url = `http://127.0.0.1:${replica.ports.data}${path}`;
    const deadline = Date.now() + 30_000;
    for (;;) {
      const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      await response.body?.cancel();
      if (response.status === 200) break;
      if (Date.now() > deadline) throw new Error(`replica ${replica.index} answers ${response.status} to ${path}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

function checkReplicas(cluster: Cluster, after: string): void {
  const gone = cluster.replicas.filter((replica) => !replica.process);
  if (gone.length) throw new Error(`replica ${gone.map((r) => r.index).join(', ')} stopped during ${after}:\n${cluster.logTails(10)}`);
}

async function measure(cluster: Cluster, fronts: Front[], scenarios: Scenario[], databaseUrl: string): Promise<Measured[]> {
  const measured: Measured[] = [];
  const parties: Parties = {
    replicaPids: () => cluster.replicas.map((replica) => replica.process?.pid).filter((pid): pid is number => pid !== undefined),
    nginxMasterPids: () => fronts.map((front) => front.nginxPid()).filter((pid): pid is number => pid !== null),
    databaseUrl,
  };
  const record = (entry: Omit<Measured, 'load1'>) => {
    const m = { ...entry, load1: loadavg()[0]! };
    measured.push(m);
    const who = m.replicas === 0 ? 'SQL alone' : `${m.replicas} replica(s)`;
    say(`round ${m.round}, ${m.connections} conn., ${m.scenario}, ${who}: ${m.run.perSecond.toFixed(0)}/s, p50 ${m.run.p50Ms.toFixed(2)} ms, p99 ${m.run.p99Ms.toFixed(2)} ms`
      + `${m.run.failed ? `, ${m.run.failed} failed ${JSON.stringify(m.run.statuses)}` : ''}; CPU replicas ${m.cpu.replicas.toFixed(2)} pg ${m.cpu.postgres.toFixed(2)} (other pg ${m.cpu.postgresOther.toFixed(2)}) `
      + `nginx ${m.cpu.nginx.toFixed(2)} bench ${m.cpu.bench.toFixed(2)} others ${m.cpu.others.toFixed(2)}, busy ${m.cpu.busy.toFixed(2)} of ${m.cpu.cores}; load ${m.load1.toFixed(1)}`);
  };
  for (let round = 1; round <= ROUNDS; round++) {
    for (const connections of CONNECTIONS) {
      for (const scenario of scenarios) {
        for (const front of fronts) {
          const base = scenario.api === 'management' ? front.apiUrl : front.dataUrl;
          const stop = startCpuMeasurement(parties);
          const run = await httpLoad(base + scenario.path, { connections, seconds: SECONDS, warmupSeconds: WARMUP, headers: { authorization: `Bearer ${scenario.token}` } });
          record({ scenario: scenario.name, connections, replicas: front.replicas, round, run, cpu: await stop() });
          checkReplicas(cluster, scenario.name);
        }
        const alone = await sqlAlone(databaseUrl, scenario.statements, connections, SECONDS, WARMUP, parties);
        record({ scenario: scenario.name, connections, replicas: 0, round, ...alone });
      }
    }
  }
  return measured;
}

function writeReadme(summary: string): void {
  const readmePath = join(REPO_ROOT, 'bench/README.md');
  const readme = readFileSync(readmePath, 'utf8');
  const begin = '<!-- replicas-figures:begin -->';
  const end = '<!-- replicas-figures:end -->';
  const from = readme.indexOf(begin);
  const to = readme.indexOf(end);
  if (from < 0 || to < from) throw new Error(`bench/README.md lacks the ${begin} … ${end} block`);
  writeFileSync(readmePath, `${readme.slice(0, from + begin.length)}\n${summary}${readme.slice(to)}`);
}

async function main() {
  if (!existsSync(join(REPO_ROOT, 'dist/server.js'))) throw new Error('dist/server.js is missing: run `npm run build` first (`npm run bench:replicas` does)');
  const nginxBinary = locateNginx();
  if (!nginxBinary) throw new Error('nginx is missing: install the Debian package nginx (apt-get install -y nginx)');
  const loadBefore = loadavg();
  say(`load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')}; ${REPLICAS} replicas, LOG_LEVEL=${LOG_LEVEL}`);
  const cluster = await startCluster({ replicas: REPLICAS, serverUrl: SERVER_URL, nginxBinary, env: { LOG_LEVEL } });
  let fronts: Front[] = [];
  try {
    say(`cluster up in ${cluster.dir}; database ${cluster.database.name}`);
    fronts = await startFronts(cluster, nginxBinary);
    const admin = await cluster.token();
    const seeded = await seedDatasets(cluster.database.url);
    const dataset = await releasedStaDataset(cluster.apiUrl, cluster.dataUrl, admin, 'Replicas benchmark');
    const sta = await seedSta(cluster.database.url, dataset, admin, { datastreams: 2, observations: OBSERVATIONS, perOtherDatastream: 0 });
    const staPath = `/v1/datasets/${dataset.id}/sensors/Datastreams(${sta.bigDatastreamId})/Observations?$top=100&$orderby=phenomenonTime%20desc`;
    await servedEverywhere(cluster, staPath, admin);
    say(`seeded: ${DATAPOOLS * DATASETS_PER_POOL} datasets, the reader on ${READER_POOLS * DATASETS_PER_POOL}; ${OBSERVATIONS} Observations in Datastream ${sta.bigDatastreamId}`);

    const reader = await cluster.token(READER_EMAIL);
    const plain: Array<Omit<Scenario, 'statements'>> = [
      { name: 'caller profile', path: '/v1/users/me', api: 'management', token: admin },
      { name: `dataset list (reader of ${READER_POOLS * DATASETS_PER_POOL})`, path: '/v1/datasets?size=20', api: 'management', token: reader },
      { name: `STA: latest 100 of ${OBSERVATIONS} Observations`, path: staPath, api: 'data', token: admin },
    ];
    const captured = await captureStatements(cluster.database.url, `${cluster.idpUrl}/realms/${REALM}`, plain);
    const scenarios: Scenario[] = plain.map((scenario, i) => ({ ...scenario, statements: captured[i]! }));
    for (const s of scenarios) say(`${s.name}: ${s.statements.length} statements`);

    const measured = await measure(cluster, fronts, scenarios, cluster.database.url);

    const replicaApis = cluster.replicas.map((replica) => `http://127.0.0.1:${replica.ports.api}`);
    say(`cross-replica visibility: ${WRITES} writes`);
    const write = await writeVisibility(replicaApis, admin, WRITES);
    say(`cross-replica visibility: ${REVOCATIONS} grants and revocations`);
    const { grant, revoke } = await revocationVisibility(replicaApis, admin, {
      groupId: seeded.revocableGroupId, roleId: seeded.readerRoleId, poolId: seeded.revocationPoolId, datasetId: seeded.revocationDatasetId,
      readerToken: await cluster.token(REVOCABLE_EMAIL),
    }, REVOCATIONS);
    checkReplicas(cluster, 'the visibility probes');

    const postgres = await withClient(cluster.database.url, async (client) => (await client.query<{ v: string }>("select current_setting('server_version') as v")).rows[0]!.v);
    const cpu = cpus();
    const report: ReplicasReport = {
      date: `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
      machine: `${cpu.length} cores (${cpu[0]?.model.trim() ?? 'unknown CPU'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM`,
      node: process.version, postgres: `PostgreSQL ${postgres.split(' ')[0]}`, logLevel: LOG_LEVEL,
      seconds: SECONDS, warmupSeconds: WARMUP, rounds: ROUNDS, connections: CONNECTIONS, replicaCounts: fronts.map((front) => front.replicas),
      scenarios: scenarios.map((s) => ({ name: s.name, path: s.path, statements: s.statements.length })),
      seed: `${DATAPOOLS * DATASETS_PER_POOL} datasets in ${DATAPOOLS} datapools, the reader holding DATASET_READ on ${READER_POOLS} of them; `
        + `one released STA dataset with ${OBSERVATIONS} Observations in its Datastream`,
      measured, write, grant, revoke, loadBefore, loadAfter: loadavg(),
    };
    writeFileSync(join(REPO_ROOT, 'bench/results-replicas.md'), renderResults(report));
    const summary = renderSummary(report);
    writeReadme(summary);
    console.log(`\n${summary}`);
    say('written to bench/results-replicas.md and bench/README.md');
  } catch (error) {
    say(`logs:\n${cluster.logTails(10)}`);
    throw error;
  } finally {
    for (const front of fronts) await front.stop();
    await cluster.close();
  }
}

main().catch((error: unknown) => {
  console.error('[bench:replicas] failed:', error);
  process.exitCode = 1;
});
