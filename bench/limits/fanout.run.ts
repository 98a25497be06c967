/**
 * `tsx bench/limits/fanout.run.ts` (after `npm run build`): measureFanout on its own. Starts the
 * built program (`node dist/server.js all`, LOG_LEVEL=info unless BENCH_LOG_LEVEL says otherwise)
 * on a fresh PostgreSQL database, releases a dataset with an STA API, creates a Thing with one
 * Datastream, and fans Observations of it out to 1,000 MQTT subscribers. Prints the table and
 * writes it to bench/results-fanout.md.
 *
 * Settings: BENCH_FANOUT1K_ROUNDS (default 5), BENCH_FANOUT1K_SUBSCRIBERS (1000), BENCH_FANOUT1K_DIST
 * (another build's dist directory, e.g. a baseline's, for interleaved before/after runs; it must lie
 * inside the checkout to resolve node_modules), BENCH_FANOUT1K_CPU_PROF (a directory: the server runs
 * with `--cpu-prof` and writes its profile there when it stops), BENCH_FANOUT1K_OUT (the results file;
 * `-` writes none).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { ADMIN_EMAIL, benchLogLevel, devToken, REPO_ROOT, SERVER_URL, serverEnvironment } from '../settings.js';
import { createDatabase } from '../database.js';
import { startServer, type ServerProcess } from '../server-process.js';
import { releasedStaDataset } from '../sta/setup.js';
import { call } from '../pipelines/setup.js';
import { measureFanout } from './fanout.js';

const ROUNDS = Number(process.env['BENCH_FANOUT1K_ROUNDS'] ?? 5);
const SUBSCRIBERS = Number(process.env['BENCH_FANOUT1K_SUBSCRIBERS'] ?? 1_000);
const DIST = process.env['BENCH_FANOUT1K_DIST'] ?? join(REPO_ROOT, 'dist');
const CPU_PROF = process.env['BENCH_FANOUT1K_CPU_PROF'];
const OUT = process.env['BENCH_FANOUT1K_OUT'] ?? join(REPO_ROOT, 'bench', 'results-fanout.md');
const LOG_LEVEL = benchLogLevel('info');
// Ports of their own, so that this and the other benchmarks never collide.
const PORTS = { api: 18680, data: 18681, mqtt: 18683, idp: 18690 };
const API = `http://127.0.0.1:${PORTS.api}`;
const DATA_API = `http://127.0.0.1:${PORTS.data}`;
const ISSUER = `http://127.0.0.1:${PORTS.idp}/realms/platform`;

const say = (message: string) => console.log(`[bench:fanout] ${message}`);
const workDir = mkdtempSync(join(tmpdir(), 'bench-fanout-'));
const database = await createDatabase(SERVER_URL, 'bench_fanout');
let server: ServerProcess | null = null;
const loadBefore = loadavg()[0]!;
try {
  say(`database ${database.name}; server log in ${workDir}; build ${DIST}`);
  server = await startServer({
    command: process.execPath,
    args: [...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : []), join(DIST, 'server.js'), 'all'],
    serverCommandLine: /node .*server\.js all/,
    env: serverEnvironment(PORTS, LOG_LEVEL, { MQTT_PORT: String(PORTS.mqtt), DATABASE_URL: database.url }),
    readyUrl: `${API}/health/ready`, logFile: join(workDir, 'server.log'),
  });
  const token = await devToken(ISSUER, ADMIN_EMAIL);
  const dataset = await releasedStaDataset(API, DATA_API, token, 'fan-out to 1,000 subscribers');
  const thing = await call<{ '@iot.id': number }>('POST', `${dataset.base}/Things`, token, {
    name: 'station', description: 'fan-out benchmark',
    Locations: [{ name: 'roof', description: 'roof', encodingType: 'application/geo+json', location: { type: 'Point', coordinates: [8.68, 50.11] } }],
    Datastreams: [{
      name: 'temperature', description: 'air temperature', observationType: 'http://www.opengis.net/def/observationType/OGC-OM/2.0/OM_Measurement',
      unitOfMeasurement: { name: 'degree Celsius', symbol: '°C', definition: 'http://unitsofmeasure.org/ucum.html#para-30' },
      Sensor: { name: 'thermometer', description: 'thermometer', encodingType: 'application/pdf', metadata: 'https://example.org/t.pdf' },
      ObservedProperty: { name: 'temperature', definition: 'https://example.org/temperature', description: 'air temperature' },
    }],
  });
  const datastreams = await call<{ value: Array<{ '@iot.id': number }> }>('GET', `${dataset.base}/Things(${thing['@iot.id']})/Datastreams`, token);
  const datastreamId = datastreams.value[0]!['@iot.id'];
  say(`dataset ${dataset.id}, Datastream ${datastreamId}; ${SUBSCRIBERS} subscribers, ${ROUNDS} rounds`);
  const result = await measureFanout({
    dataApiUrl: DATA_API, mqttUrl: `mqtt://127.0.0.1:${PORTS.mqtt}`, token, staBase: dataset.base, datastreamId, rounds: ROUNDS, subscribers: SUBSCRIBERS, serverPid: server.serverPid(),
  });
  const header = `${new Date().toISOString()}; ${cpus().length} cores (${cpus()[0]?.model}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB; Node ${process.version}; `
    + `one \`node dist/server.js all\` (LOG_LEVEL=${LOG_LEVEL}) on PostgreSQL, subscribers and writer on the same machine; `
    + `load average (1 min) before / after: ${loadBefore.toFixed(1)} / ${loadavg()[0]!.toFixed(1)}.`;
  const text = `# MQTT fan-out to ${SUBSCRIBERS} subscribers\n\n${header}\n\n${result.markdown}\n`;
  console.log(text);
  if (OUT !== '-') writeFileSync(OUT, text);
  process.exitCode = result.targetsMet ? 0 : 1;
} finally {
  await server?.stop();
  await database.drop().catch(() => {});
}
