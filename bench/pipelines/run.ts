/**
 * `npm run bench:pipelines`: pipelines at their limit (see "Pipelines" in bench/README.md). Starts
 * the built program (`node dist/server.js all`, deployed defaults, log level info) on a fresh
 * PostgreSQL database and a Mosquitto of its own, then measures, each beside its ceiling (the
 * same rows written by `CreateObservations` directly), interleaved over rounds:
 *   - sustained MQTT → SensorThings ingestion into one pipeline and into ten;
 *   - end-to-end latency at a steady 1,000 messages/s, publish → Observation received over the data API's MQTT;
 *   - SQL polling of 100,000 rows;
 *   - memory over a soak at a steady rate;
 *   - takeover after `kill -9` of the process running a pipeline, while messages keep coming.
 * Writes bench/results-pipelines.md.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import mqtt from 'mqtt';
import pg from 'pg';
import { ADMIN_EMAIL, benchLogLevel, CLIENT_ID, devToken, REPO_ROOT, SERVER_URL } from '../settings.js';
import { createDatabase } from '../database.js';
import { startServer, type ServerProcess } from '../server-process.js';
import { percentile } from '../load.js';
import { startMosquitto } from '../../test/ingest/mosquitto.js';
import { availableSource, call, releasedPipeline, until, type PipelineTarget } from './setup.js';

const MESSAGES = Number(process.env['BENCH_PIPELINE_MESSAGES'] ?? 100_000);
const ROUNDS = Number(process.env['BENCH_PIPELINE_ROUNDS'] ?? 3);
const QOS = Number(process.env['BENCH_PIPELINE_QOS'] ?? 1) as 0 | 1 | 2;
const SQL_ROWS = Number(process.env['BENCH_PIPELINE_SQL_ROWS'] ?? 100_000);
const LATENCY_RATE = 1000;
const LATENCY_SECONDS = Number(process.env['BENCH_PIPELINE_LATENCY_S'] ?? 30);
const SOAK_SECONDS = Number(process.env['BENCH_PIPELINE_SOAK_S'] ?? 300);
const SOAK_RATE = Number(process.env['BENCH_PIPELINE_SOAK_RATE'] ?? 8000);
const LOG_LEVEL = benchLogLevel('info');
/** Which scenarios run (default all): sustained, latency, ten, sql, soak, takeover. */
const SCENARIOS = new Set((process.env['BENCH_PIPELINE_SCENARIOS'] ?? 'sustained,latency,ten,sql,soak,takeover').split(','));
const PORTS = { api: 18280, data: 18281, idp: 18290, mqtt: 18283, broker: 18300, second: 18285 };
const API = `http://127.0.0.1:${PORTS.api}`;
const DATA_API = `http://127.0.0.1:${PORTS.data}`;
const IDP = `http://127.0.0.1:${PORTS.idp}`;
const ISSUER = `${IDP}/realms/platform`;
const workDir = mkdtempSync(join(tmpdir(), 'bench-pipelines-'));
const say = (message: string) => console.log(`[bench:pipelines] ${message}`);

function serverEnv(extra: Record<string, string>): Record<string, string> {
  return {
    HOST: '127.0.0.1', PORT: String(PORTS.api), DATA_PORT: String(PORTS.data), IDP_PORT: String(PORTS.idp), IDP_URL: IDP, MQTT_PORT: String(PORTS.mqtt),
    BASE_URL: API, DATA_API_URL: DATA_API, OIDC_ISSUER: ISSUER, OIDC_CLIENT_ID: CLIENT_ID, BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL,
    DEV_IDP: 'on', NODE_ENV: 'development', DEV_IDP_TTL: '3600', LOG_LEVEL, ...extra,
  };
}

const rss = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

/** Publishes `count` messages as fast as the client takes them, `window` unacknowledged at most. */
async function publishBurst(client: mqtt.MqttClient, topicOf: (n: number) => string, first: number, count: number, window = 2000): Promise<void> {
  let inFlight = 0;
  let acked = 0;
  let wake: (() => void) | null = null;
  const base = Date.parse('2027-01-01T00:00:00Z');
  // A publisher whose acknowledgements stop coming fails the run rather than hanging it.
  let lastAcked = -1;
  const watchdog = setInterval(() => {
    if (acked === lastAcked) {
      clearInterval(watchdog);
      client.end(true);
      const stuck = wake as (() => void) | null;
      wake = null;
      failure = new Error(`publisher: no acknowledgement for 30 s (${acked} of ${count} acknowledged, ${inFlight} in flight, connected ${client.connected})`);
      stuck?.();
    }
    lastAcked = acked;
  }, 30_000);
  let failure: Error | null = null;
  for (let n = first; n < first + count; n++) {
    while (inFlight >= window && !failure) await new Promise<void>((resolve) => (wake = resolve));
    inFlight++;
    if (failure) break;
    client.publish(topicOf(n), JSON.stringify({ s: n % 10, v: n, t: new Date(base + n * 10).toISOString() }), { qos: QOS }, () => {
      inFlight--;
      acked++;
      const resume = wake;
      wake = null;
      resume?.();
    });
  }
  while (inFlight > 0 && !failure) await new Promise<void>((resolve) => (wake = resolve));
  clearInterval(watchdog);
  if (failure) throw failure;
}

/** Publishes at a steady rate (messages per second) for `seconds`, calling `sent` with each message's number. */
async function publishPaced(client: mqtt.MqttClient, topicOf: (n: number) => string, first: number, rate: number, seconds: number, sent: (n: number, at: number) => void = () => {}): Promise<number> {
  const started = performance.now();
  const total = rate * seconds;
  const base = Date.parse('2028-01-01T00:00:00Z');
  let n = 0;
  while (n < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate));
    for (; n < due; n++) {
      const id = first + n;
      sent(id, performance.now());
      client.publish(topicOf(id), JSON.stringify({ s: id % 10, v: id, t: new Date(base + id * 10).toISOString() }), { qos: QOS });
    }
    await sleep(5);
  }
  return total;
}

async function countIn(db: pg.Client, targets: PipelineTarget[]): Promise<number> {
  let total = 0;
  for (const target of targets) total += Number((await db.query(`select count(*)::int as n from "${target.schema}".observations`)).rows[0].n);
  return total;
}

/** The highest Observation id of each target, summed: a probe that costs an index look-up, where count(*) scans the table. */
async function highestIds(db: pg.Client, targets: PipelineTarget[]): Promise<number> {
  let total = 0;
  for (const target of targets) total += Number((await db.query(`select coalesce(max(id), 0)::bigint as n from "${target.schema}".observations`)).rows[0].n);
  return total;
}

/**
 * Waits until the targets hold `expected` Observations; answers when (performance.now()) that was
 * first seen. Progress is followed by the highest id (ids are given in order, one writer per
 * table meanwhile), then the count is checked once: a probe that scanned the table every 20 ms
 * would take a core from what it measures.
 */
async function storedAt(db: pg.Client, targets: PipelineTarget[], expected: number, timeoutMs = 600_000): Promise<number> {
  // Count and highest id from one snapshot per table, so that rows written meanwhile are in both or neither.
  let counted = 0;
  let highest = 0;
  for (const target of targets) {
    const { rows } = await db.query(`select count(*)::bigint as n, coalesce(max(id), 0)::bigint as m from "${target.schema}".observations`);
    counted += Number(rows[0].n);
    highest += Number(rows[0].m);
  }
  const at = await until(`${expected} Observations stored`, timeoutMs, async () => ((await highestIds(db, targets)) - highest >= expected - counted ? performance.now() : undefined), 20);
  const stored = await countIn(db, targets);
  if (stored < expected) throw new Error(`${stored} Observations stored, ${expected} expected (ids skipped: a rolled-back batch?)`);
  return at;
}

/** The same rows through `CreateObservations`, 1,000 per request, 4 requests in flight: the write path's own speed. */
async function createObservationsDirectly(target: PipelineTarget, token: string, ceiling: { datastreamId: number; featureId: number }, first: number, count: number): Promise<number> {
  const base = Date.parse('2029-01-01T00:00:00Z');
  const started = performance.now();
  let next = first;
  const worker = async () => {
    while (next < first + count) {
      const from = next;
      next += 1000;
      const rows = Array.from({ length: Math.min(1000, first + count - from) }, (_, i) => [new Date(base + (from + i) * 10).toISOString(), from + i, ceiling.featureId]);
      await call('POST', `${target.base}/CreateObservations`, token, [{
        Datastream: { '@iot.id': ceiling.datastreamId }, components: ['phenomenonTime', 'result', 'FeatureOfInterest/id'], dataArray: rows,
      }], [201]);
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return count / ((performance.now() - started) / 1000);
}

const spread = (values: number[]) => `${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)}`;
const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 0.5);

const database = await createDatabase(SERVER_URL, 'bench_pipelines');
const BROKER_INFLIGHT = Number(process.env['BENCH_PIPELINE_BROKER_INFLIGHT'] ?? 1000);
const broker = await startMosquitto(PORTS.broker, { maxQueuedMessages: 1_000_000, maxInflightMessages: BROKER_INFLIGHT });
let server: ServerProcess | null = null;
let second: ServerProcess | null = null;
const db = new pg.Client({ connectionString: database.url });
const lines: string[] = [];
const report = (line: string) => {
  say(line);
  lines.push(line);
};
try {
  say(`database ${database.name}; broker ${broker.url} (max_inflight_messages ${BROKER_INFLIGHT}, max_queued_messages 1,000,000); QoS ${QOS}`);
  server = await startServer({
    // BENCH_SERVER_NODE_ARGS: e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to see where the server's time goes.
    command: process.execPath, args: [...(process.env['BENCH_SERVER_NODE_ARGS']?.split(' ').filter(Boolean) ?? []), 'dist/server.js', 'all'],
    serverCommandLine: /^\S*node (?:-\S+ )*dist\/server\.js all/,
    env: serverEnv({ DATABASE_URL: database.url }), readyUrl: `${API}/health/ready`, logFile: join(workDir, 'server.log'),
  });
  await db.connect();
  const token = await devToken(ISSUER, ADMIN_EMAIL);
  const serverPid = server.serverPid();
  const publisher = await mqtt.connectAsync(broker.url, { clientId: 'bench-publisher' });

  // One pipeline: sustained, beside CreateObservations of the same number of rows, interleaved.
  const oneSource = await availableSource(API, token, 'one', 'MQTT', { urls: [broker.url], topics: ['bench/one/+'], qos: QOS });
  const one = await releasedPipeline(API, DATA_API, token, 'one pipeline', oneSource);
  await publishBurst(publisher, (n) => `bench/one/${n % 10}`, 0, 1000);
  await storedAt(db, [one], 1000);
  // The ceiling writes into a Datastream and FeatureOfInterest the pipeline made.
  const sample = await call<{ value: Array<{ Datastream: { '@iot.id': number }; FeatureOfInterest: { '@iot.id': number } }> }>(
    'GET', `${one.base}/Observations?$top=1&$select=id&$expand=Datastream($select=id),FeatureOfInterest($select=id)`, token);
  const ceilingDatastream = { datastreamId: sample.value[0]!.Datastream['@iot.id'], featureId: sample.value[0]!.FeatureOfInterest['@iot.id'] };
  const sustained: number[] = [];
  const ceiling: number[] = [];
  let offset = 1000;
  let directOffset = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    const before = await countIn(db, [one]);
    const started = performance.now();
    await publishBurst(publisher, (n) => `bench/one/${n % 10}`, offset, MESSAGES);
    const published = performance.now();
    say(`round ${round}: ${MESSAGES} published in ${((published - started) / 1000).toFixed(1)} s`);
    const done = await storedAt(db, [one], before + MESSAGES);
    offset += MESSAGES;
    sustained.push(MESSAGES / ((done - started) / 1000));
    // BENCH_PIPELINE_CEILING=off: the pipeline alone (for a profile of it).
    const direct = process.env['BENCH_PIPELINE_CEILING'] === 'off' ? Number.NaN : await createObservationsDirectly(one, token, ceilingDatastream, directOffset, MESSAGES);
    directOffset += MESSAGES;
    ceiling.push(direct);
    say(`round ${round}: pipeline ${sustained.at(-1)!.toFixed(0)} msg/s (published in ${((published - started) / 1000).toFixed(1)} s), CreateObservations ${direct.toFixed(0)} rows/s; server RSS ${rss(serverPid).toFixed(0)} MiB; load ${loadavg()[0]!.toFixed(1)}`);
  }
  report(`| MQTT → STA, one pipeline, ${MESSAGES.toLocaleString('en')} messages QoS ${QOS} | ${median(sustained).toFixed(0)} msg/s (${spread(sustained)}) | CreateObservations ${median(ceiling).toFixed(0)} rows/s (${spread(ceiling)}) | ${(median(sustained) / median(ceiling)).toFixed(2)}× |`);

  if (SCENARIOS.has('latency')) {
    // Latency at a steady 1,000 messages/s, twice: without a subscriber (publish → visible to a
    // read), then with one on the data API's MQTT (publish → Observation received as well).
    const measure = async (first: number, subscribe: boolean) => {
      const sentAt = new Map<number, number>();
      const received: number[] = [];
      const visible: number[] = [];
      const subscriber = subscribe
        ? await mqtt.connectAsync(`mqtt://127.0.0.1:${PORTS.mqtt}`, { username: 'token', password: token, clientId: `bench-subscriber-${first}` })
        : null;
      if (subscriber) {
        subscriber.on('message', (_topic, payload) => {
          const at = performance.now();
          const sent = sentAt.get((JSON.parse(payload.toString()) as { result: number }).result);
          if (sent !== undefined) received.push(at - sent);
        });
        await subscriber.subscribeAsync(`v1/datasets/${one.datasetId}/sensors/Observations`, { qos: 0 });
      }
      // Visible to a read: new rows of the table the data API reads, by id (an index probe every 10 ms).
      let polling = true;
      let lastId = Number((await db.query(`select coalesce(max(id), 0)::bigint as m from "${one.schema}".observations`)).rows[0].m);
      const poller = (async () => {
        const reader = new pg.Client({ connectionString: database.url });
        await reader.connect();
        while (polling) {
          const { rows } = await reader.query(`select id, (result #>> '{}')::bigint as v from "${one.schema}".observations where id > $1 order by id`, [lastId]);
          const at = performance.now();
          for (const row of rows) {
            lastId = Math.max(lastId, Number(row.id));
            const sent = sentAt.get(Number(row.v));
            if (sent !== undefined) visible.push(at - sent);
          }
          await sleep(10);
        }
        await reader.end();
      })();
      const count = await publishPaced(publisher, (n) => `bench/one/${n % 10}`, first, LATENCY_RATE, LATENCY_SECONDS, (n, at) => sentAt.set(n, at));
      await until('every latency sample', 60_000, async () => (visible.length >= count && (!subscriber || received.length >= count) ? true : undefined), 100).catch(() => undefined);
      polling = false;
      await poller;
      await subscriber?.endAsync();
      return { count, visible: visible.sort((a, b) => a - b), received: received.sort((a, b) => a - b) };
    };
    const ms = (values: number[], p: number) => percentile(values, p).toFixed(0);
    const alone = await measure(10_000_000, false);
    report(`| End to end at ${LATENCY_RATE} msg/s for ${LATENCY_SECONDS} s: publish → visible to a read (the stored row, polled every 10 ms), no MQTT subscriber | p50 ${ms(alone.visible, 0.5)} ms, p99 ${ms(alone.visible, 0.99)} ms, max ${alone.visible.at(-1)?.toFixed(0)} ms | ${alone.visible.length} of ${alone.count} | |`);
    const watched = await measure(11_000_000, true);
    report(`| … the same with a subscriber on the data API's MQTT: publish → visible to a read | p50 ${ms(watched.visible, 0.5)} ms, p99 ${ms(watched.visible, 0.99)} ms, max ${watched.visible.at(-1)?.toFixed(0)} ms | ${watched.visible.length} of ${watched.count} | |`);
    report(`| … publish → Observation received from the data API's MQTT | p50 ${ms(watched.received, 0.5)} ms, p99 ${ms(watched.received, 0.99)} ms, max ${watched.received.at(-1)?.toFixed(0)} ms | ${watched.received.length} of ${watched.count} received | |`);
  }

  if (SCENARIOS.has('ten')) {
    // Ten pipelines, one dataset each, messages spread over them.
    const ten: PipelineTarget[] = [];
    for (let i = 0; i < 10; i++) {
      const source = await availableSource(API, token, `ten-${i}`, 'MQTT', { urls: [broker.url], topics: [`bench/ten/${i}/+`], qos: QOS });
      ten.push(await releasedPipeline(API, DATA_API, token, `pipeline ${i} of ten`, source));
    }
    const tenRates: number[] = [];
    let tenOffset = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      const before = await countIn(db, ten);
      const started = performance.now();
      await publishBurst(publisher, (n) => `bench/ten/${n % 10}/${n % 7}`, tenOffset, MESSAGES);
      const done = await storedAt(db, ten, before + MESSAGES);
      tenOffset += MESSAGES;
      tenRates.push(MESSAGES / ((done - started) / 1000));
      say(`ten pipelines round ${round}: ${tenRates.at(-1)!.toFixed(0)} msg/s`);
    }
    report(`| MQTT → STA, ten pipelines (ten datasets), ${MESSAGES.toLocaleString('en')} messages QoS ${QOS} | ${median(tenRates).toFixed(0)} msg/s (${spread(tenRates)}) | (ceiling as above) | ${(median(tenRates) / median(ceiling)).toFixed(2)}× |`);
  }

  if (SCENARIOS.has('sql')) {
    // SQL polling of 100,000 rows, beside CreateObservations of the same rows.
    await db.query(`create schema bench_src; create table bench_src.readings (id bigserial primary key, s int, v double precision, t timestamptz)`);
    await db.query(`insert into bench_src.readings (s, v, t) select n % 10, n, timestamptz '2030-01-01' + n * interval '10 ms' from generate_series(1, $1) n`, [SQL_ROWS]);
    const sqlSource = await availableSource(API, token, 'sql', 'SQL', { driver: 'postgres', dsn: database.url, table: 'bench_src.readings', columns: ['s', 'v', 't'], cursor_column: 'id' });
    const sqlStarted = performance.now();
    const sqlTarget = await releasedPipeline(API, DATA_API, token, 'sql pipeline', sqlSource, '*/1 * * * * *');
    const sqlDone = await storedAt(db, [sqlTarget], SQL_ROWS);
    const sqlRate = SQL_ROWS / ((sqlDone - sqlStarted) / 1000);
    const sqlCeiling = await createObservationsDirectly(one, token, ceilingDatastream, directOffset, SQL_ROWS);
    directOffset += SQL_ROWS;
    report(`| SQL polling, ${SQL_ROWS.toLocaleString('en')} rows (release → all stored, first poll within 1 s) | ${sqlRate.toFixed(0)} rows/s | CreateObservations ${sqlCeiling.toFixed(0)} rows/s | ${(sqlRate / sqlCeiling).toFixed(2)}× |`);
  }

  if (SCENARIOS.has('soak')) {
    // Soak: a steady rate for SOAK_SECONDS, the server's RSS sampled every 5 s.
    const samples: number[] = [];
    const sampler = setInterval(() => samples.push(rss(serverPid)), 5000);
    const soakBefore = await countIn(db, [one]);
    const soakCount = await publishPaced(publisher, (n) => `bench/one/${n % 10}`, 20_000_000, SOAK_RATE, SOAK_SECONDS);
    await storedAt(db, [one], soakBefore + soakCount);
    clearInterval(sampler);
    const settled = samples[Math.min(samples.length - 1, 6)]!; // after the first 30 s
    report(`| Memory over ${SOAK_SECONDS} s at ${SOAK_RATE} msg/s (server RSS, sampled every 5 s) | ${settled.toFixed(0)} MiB at 30 s, max ${Math.max(...samples).toFixed(0)} MiB, end ${samples.at(-1)!.toFixed(0)} MiB | growth after 30 s: ${(Math.max(...samples.slice(6)) - settled).toFixed(0)} MiB | |`);
  }

  if (SCENARIOS.has('takeover')) {
    // Takeover: a second process (pipelines only), then kill -9 of the first while 1,000 msg/s keep coming.
    second = await startServer({
      command: process.execPath, args: ['dist/server.js', 'api'], serverCommandLine: /^\S*node dist\/server\.js api/,
      env: serverEnv({ DATABASE_URL: database.url, PORT: String(PORTS.second), BASE_URL: `http://127.0.0.1:${PORTS.second}`, DEV_IDP: 'off' }),
      readyUrl: `http://127.0.0.1:${PORTS.second}/health/ready`, logFile: join(workDir, 'second.log'),
    });
    const statusOf = async () => (await db.query(`select runtime_status from pipelines where id = $1`, [one.pipelineId])).rows[0].runtime_status as { lastEventId: string; state: string };
    const takeoverBefore = await countIn(db, [one]);
    const eventBefore = (await statusOf()).lastEventId;
    const paced = publishPaced(publisher, (n) => `bench/one/${n % 10}`, 30_000_000, 1000, 20);
    await sleep(5000);
    process.kill(serverPid, 'SIGKILL');
    const killedAt = performance.now();
    const takenAt = await until('the second process to run the pipeline', 60_000, async () => {
      const status = await statusOf();
      return status.lastEventId !== eventBefore && status.state === 'RUNNING' ? performance.now() : undefined;
    }, 20);
    const takeoverCount = await paced;
    await storedAt(db, [one], takeoverBefore + takeoverCount, 120_000);
    await sleep(2000);
    const stored = (await countIn(db, [one])) - takeoverBefore;
    report(`| Takeover after kill -9 (1,000 msg/s kept coming) | RUNNING on the other process ${((takenAt - killedAt) / 1000).toFixed(1)} s after the kill | ${stored} stored of ${takeoverCount} published | ${stored === takeoverCount ? 'none lost or doubled' : 'MISMATCH'} |`);
  }

  await publisher.endAsync();

  const header = [
    '# Pipeline benchmark results', '',
    `${new Date().toISOString()}; ${cpus().length} cores (${cpus()[0]?.model}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB; Node ${process.version}; log level ${LOG_LEVEL}; QoS ${QOS}; ${ROUNDS} rounds interleaved with the ceiling.`,
    '', '| scenario | figure (median, spread) | beside it | ratio |', '|---|---|---|---|',
  ];
  writeFileSync(join(REPO_ROOT, 'bench', 'results-pipelines.md'), `${[...header, ...lines].join('\n')}\n`);
  say('wrote bench/results-pipelines.md');
} finally {
  await db.end().catch(() => {});
  await second?.stop().catch(() => {});
  await server?.stop().catch(() => {});
  await broker.stop();
  await database.drop().catch(() => {});
}
