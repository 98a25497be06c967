/**
 * `npx tsx bench/limits/create-vs-copy.run.ts` (after `npm run build`): create-vs-copy.ts on its
 * own, for work on the bulk write path. Starts the built server (`node dist/server.js all`) on a
 * fresh database, releases an STA dataset with a Thing and a Datastream (bench/sta/setup.ts, no
 * Observations seeded), prints the table and the server's CPU time. `CPU_PROF=<dir>` runs the server
 * under `node --cpu-prof`; `BENCH_SERVER_JS=<path>` runs another build (an A/B beside a copy of the
 * old dist/); `BENCH_ROUNDS` (4), `BENCH_CREATE_VS_COPY_ROWS` (100,000).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADMIN_EMAIL, benchLogLevel, CLIENT_ID, devToken, REPO_ROOT, SERVER_URL } from '../settings.js';
import { createDatabase } from '../database.js';
import { startServer } from '../server-process.js';
import { releasedStaDataset, seedSta } from '../sta/setup.js';
import { measureCreateVsCopy } from './create-vs-copy.js';

// Ports of their own, so that this never collides with the other benchmarks.
const PORTS = { api: 18480, data: 18481, idp: 18490 };
const API = `http://127.0.0.1:${PORTS.api}`;
const DATA_API = `http://127.0.0.1:${PORTS.data}`;
const IDP = `http://127.0.0.1:${PORTS.idp}`;
const ISSUER = `${IDP}/realms/platform`;
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 4);

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat (in clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

process.chdir(REPO_ROOT);
const logFile = join(mkdtempSync(join(tmpdir(), 'bench-create-vs-copy-')), 'server.log');
const profile = process.env['CPU_PROF'];
const database = await createDatabase(SERVER_URL, 'bench_copy');
const server = await startServer({
  command: process.execPath,
  args: [...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []), process.env['BENCH_SERVER_JS'] ?? 'dist/server.js', 'all'],
  serverCommandLine: /^\S*node .*server\.js all/,
  env: {
    HOST: '127.0.0.1', PORT: String(PORTS.api), DATA_PORT: String(PORTS.data), IDP_PORT: String(PORTS.idp), IDP_URL: IDP,
    BASE_URL: API, DATA_API_URL: DATA_API, OIDC_ISSUER: ISSUER, OIDC_CLIENT_ID: CLIENT_ID,
    BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL, DEV_IDP: 'on', NODE_ENV: 'development', DEV_IDP_TTL: '3600',
    DATABASE_URL: database.url, LOG_LEVEL: benchLogLevel('info'),
  },
  readyUrl: `${API}/health/ready`,
  logFile,
});
try {
  const token = await devToken(ISSUER, ADMIN_EMAIL);
  const dataset = await releasedStaDataset(API, DATA_API, token, 'CreateObservations beside COPY');
  const seed = await seedSta(database.url, dataset, token, { datastreams: 2, observations: 1, perOtherDatastream: 0 });
  const cpuBefore = cpuSeconds(server.serverPid());
  const { markdown, targetsMet } = await measureCreateVsCopy({
    databaseUrl: database.url, dataApiUrl: DATA_API, token, staBase: dataset.base, storageSchema: dataset.schema,
    datastreamId: seed.writeDatastreamId, rounds: ROUNDS,
  });
  console.log(markdown);
  // The server is idle during the COPY rounds: its CPU time is that of the created rows (warm-up included).
  console.log(`\nserver CPU (user + system) over the run: ${(cpuSeconds(server.serverPid()) - cpuBefore).toFixed(2)} s`);
  if (!targetsMet) process.exitCode = 1;
} finally {
  await server.stop();
  // BENCH_KEEP_DATABASE=1 keeps it, for a look at the statements' plans and timings in psql.
  if (process.env['BENCH_KEEP_DATABASE'] === '1') console.log(`database kept: ${database.url}`);
  else await database.drop();
  console.log(`server log: ${logFile}`);
}
