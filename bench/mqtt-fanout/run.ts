/**
 * `npm run bench:mqtt-fanout`: how fast a write through one replica reaches MQTT subscribers on the
 * others (see "MQTT fan-out across replicas" in bench/README.md). Starts an identity provider and
 * BENCH_FANOUT_REPLICAS replicas of the built program on a fresh PostgreSQL database, releases a
 * dataset with an STA API, subscribes one MQTT client per replica to a Datastream's Observations,
 * then POSTs Observations round-robin over the replicas at each rate, for several rounds (the
 * rates interleaved), timing each message from the POST's 201 to its arrival on another replica.
 * With BENCH_FANOUT_BASELINE=<git revision> that revision is built and run beside this checkout
 * (its own processes and database), the rounds of the two alternating: the figure to beat, on this
 * machine under the same conditions. BENCH_FANOUT_TRANSPORTS=postgres,redis runs each build once per
 * transport the change messages cross the replicas by: the PostgreSQL outbox (the default), or
 * Redis (MQTT_CLUSTER, on a redis-server of the run's own), interleaved the same way. Writes
 * bench/results-mqtt-fanout.md.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import mqtt from 'mqtt';
import { Redis } from 'ioredis';
import { ADMIN_EMAIL, devToken, REPO_ROOT, SERVER_URL } from '../settings.js';
import { createDatabase } from '../database.js';
import { percentile } from '../load.js';
import { releasedStaDataset } from '../sta/setup.js';
import { call, until } from '../pipelines/setup.js';
import { buildRevision, startCluster, type Cluster } from './cluster.js';
import { FanoutProbe, type RoundResult } from './load.js';
import { startTestRedis, type TestRedis } from '../../test/helpers/redis-server.js';

const REPLICAS = Number(process.env['BENCH_FANOUT_REPLICAS'] ?? 3);
const RATES = (process.env['BENCH_FANOUT_RATES'] ?? '200,500,1000').split(',').map(Number);
const SECONDS = Number(process.env['BENCH_FANOUT_SECONDS'] ?? 10);
const ROUNDS = Number(process.env['BENCH_FANOUT_ROUNDS'] ?? 3);
const MAX_IN_FLIGHT = Number(process.env['BENCH_FANOUT_MAX_IN_FLIGHT'] ?? 256);
/** How long a round waits for late messages once nothing new arrives. */
const SETTLE_MS = Number(process.env['BENCH_FANOUT_SETTLE_MS'] ?? 5000);
const BASELINE = process.env['BENCH_FANOUT_BASELINE'];
/** How change messages cross the replicas: the PostgreSQL outbox, or Redis (MQTT_CLUSTER). */
type Transport = 'postgres' | 'redis';
const TRANSPORTS = (process.env['BENCH_FANOUT_TRANSPORTS'] ?? 'postgres').split(',') as Transport[];
if (TRANSPORTS.some((t) => t !== 'postgres' && t !== 'redis')) throw new Error(`BENCH_FANOUT_TRANSPORTS: postgres and/or redis, not ${TRANSPORTS.join(',')}`);
const say = (message: string) => console.log(`[bench:mqtt-fanout] ${message}`);
const workDir = mkdtempSync(join(tmpdir(), 'bench-mqtt-fanout-'));

/**
 * What the replicas' /metrics counted over a round (null: a build without the outbox): the most
 * outbox reads one replica made per write in the cluster, and the most wake-ups (NOTIFY) one
 * writing replica sent per second.
 */
interface OutboxFigures { readsPerWrite: number; notifiesPerSecond: number }
interface Measured { rate: number; round: number; result: RoundResult; benchLoopP99Ms: number; outbox: OutboxFigures | null }

type Counters = Array<{ reads: number; notifies: number } | null>;

/** Each replica's outbox counters now. */
async function outboxCounters(metricsUrls: string[]): Promise<Counters> {
  return Promise.all(metricsUrls.map(async (url) => {
    const text = await (await fetch(url)).text();
    const value = (name: string) => {
      const line = text.split('\n').find((l) => l.startsWith(`${name} `));
      return line === undefined ? null : Number(line.split(' ')[1]);
    };
    const reads = value('mqtt_outbox_reads_total');
    const notifies = value('mqtt_outbox_notifies_total');
    return reads === null || notifies === null ? null : { reads, notifies };
  }));
}

function outboxFigures(before: Counters, after: Counters, created: number, seconds: number): OutboxFigures | null {
  if (before.some((c) => c === null) || after.some((c) => c === null) || created === 0) return null;
  const deltas = after.map((c, i) => ({ reads: c!.reads - before[i]!.reads, notifies: c!.notifies - before[i]!.notifies }));
  return {
    readsPerWrite: Math.max(...deltas.map((d) => d.reads)) / created,
    notifiesPerSecond: Math.max(...deltas.map((d) => d.notifies)) / seconds,
  };
}

/** One build on one transport running: its cluster on a fresh database (and Redis), subscribed, warmed up, ready for rounds. */
interface Prepared {
  label: string;
  transport: Transport;
  probe: FanoutProbe;
  targets: string[];
  /** Each replica's GET /metrics. */
  metricsUrls: string[];
  token: string;
  close(): Promise<void>;
}

async function prepare(index: number, label: string, distDir: string, transport: Transport): Promise<Prepared> {
  const database = await createDatabase(SERVER_URL, 'bench_mqtt_fanout');
  const logDir = join(workDir, label.replace(/\W+/g, '-'));
  mkdirSync(logDir);
  const subscribers: mqtt.MqttClient[] = [];
  let cluster: Cluster | null = null;
  let redis: TestRedis | null = null;
  const close = async () => {
    await Promise.all(subscribers.map((client) => client.endAsync(true).catch(() => {})));
    await cluster?.stop();
    await redis?.kill();
    await database.drop().catch(() => {});
  };
  try {
    if (transport === 'redis') redis = await startTestRedis();
    say(`${label}: database ${database.name}${redis ? `, ${redis.url}` : ''}; ${REPLICAS} replicas; logs in ${logDir}`);
    cluster = await startCluster(index, distDir, database.url, REPLICAS, logDir, redis ? { MQTT_CLUSTER: redis.url } : {});
    const token = await devToken(cluster.issuer, ADMIN_EMAIL);
    const first = cluster.replicas[0]!;
    const dataset = await releasedStaDataset(first.api, first.dataApi, token, `fan-out ${label}`);
    const bases = cluster.replicas.map((replica) => `${replica.dataApi}/v1/datasets/${dataset.id}/sensors`);
    const thing = await call('POST', `${bases[0]}/Things`, token, {
      name: 'station', description: 'fan-out benchmark',
      Locations: [{ name: 'roof', description: 'roof', encodingType: 'application/geo+json', location: { type: 'Point', coordinates: [8.68, 50.11] } }],
      Datastreams: [{
        name: 'temperature', description: 'air temperature', observationType: 'http://www.opengis.net/def/observationType/OGC-OM/2.0/OM_Measurement',
        unitOfMeasurement: { name: 'degree Celsius', symbol: '°C', definition: 'http://unitsofmeasure.org/ucum.html#para-30' },
        Sensor: { name: 'thermometer', description: 'thermometer', encodingType: 'application/pdf', metadata: 'https://example.org/t.pdf' },
        ObservedProperty: { name: 'temperature', definition: 'https://example.org/temperature', description: 'air temperature' },
      }],
    });
    const datastreams = await call<{ value: Array<{ '@iot.id': number }> }>('GET', `${bases[0]}/Things(${thing['@iot.id']})/Datastreams`, token);
    const datastreamId = datastreams.value[0]!['@iot.id'];
    // Every replica serves the dataset (its route table polls) before it is subscribed to.
    for (const base of bases) await until(`${base} serving the dataset`, 30_000, async () => ((await fetch(base, { headers: { authorization: `Bearer ${token}` } })).status === 200 ? true : undefined));
    const topic = `v1/datasets/${dataset.id}/sensors/Datastreams(${datastreamId})/Observations`;
    for (const [replicaIndex, replica] of cluster.replicas.entries()) {
      const client = await mqtt.connectAsync(replica.mqttUrl, { protocolVersion: 4, clientId: `bench-fanout-${index}-${replicaIndex}`, username: 'bench', password: token, reconnectPeriod: 0 });
      subscribers.push(client);
      const granted = await client.subscribeAsync(topic, { qos: 0 });
      if (granted[0]?.qos === 128) throw new Error(`replica ${replicaIndex} refused the subscription`);
    }
    const probe = new FanoutProbe(subscribers);
    const targets = bases.map((base) => `${base}/Datastreams(${datastreamId})/Observations`);
    // Warm-up: the path works on every replica (and the FeatureOfInterest of the Location exists).
    const warm = await probe.round(targets, token, 0, 20, 2, MAX_IN_FLIGHT, SETTLE_MS);
    if (warm.received !== warm.expected) throw new Error(`warm-up: ${warm.received} of ${warm.expected} cross-replica messages arrived`);
    // A build that does not know MQTT_CLUSTER would pass through the outbox unnoticed.
    if (redis && (await redisClients(redis.url)) <= REPLICAS) throw new Error(`${label}: the replicas are not on Redis (does this build know MQTT_CLUSTER?)`);
    return { label, transport, probe, targets, token, close, metricsUrls: cluster.replicas.map((replica) => `${replica.api}/metrics`) };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Clients connected to a Redis, this one included. */
async function redisClients(url: string): Promise<number> {
  const redis = new Redis(url);
  try {
    return Number(/connected_clients:(\d+)/.exec(await redis.info('clients'))?.[1] ?? 0);
  } finally {
    redis.disconnect();
  }
}

/** Every round of every rate on each run (build, transport), interleaved (round, rate, run), so that a busy moment of the machine falls on all runs alike. */
async function measure(prepared: Prepared[]): Promise<Map<string, Measured[]>> {
  const measured = new Map(prepared.map((build) => [build.label, [] as Measured[]]));
  const loop = monitorEventLoopDelay({ resolution: 5 });
  let seq = 1000;
  for (let round = 1; round <= ROUNDS; round++) {
    for (const rate of RATES) {
      for (const build of prepared) {
        loop.reset();
        loop.enable();
        // Redis carries the messages: the outbox counters stay 0 (n/a).
        const countersBefore = build.transport === 'postgres' ? await outboxCounters(build.metricsUrls) : null;
        const result = await build.probe.round(build.targets, build.token, seq, rate, SECONDS, MAX_IN_FLIGHT, SETTLE_MS);
        const outbox = countersBefore && outboxFigures(countersBefore, await outboxCounters(build.metricsUrls), Math.round(result.achievedRate * SECONDS), SECONDS);
        loop.disable();
        seq += rate * SECONDS + 1000;
        const benchLoopP99Ms = loop.percentile(99) / 1e6;
        measured.get(build.label)!.push({ rate, round, result, benchLoopP99Ms, outbox });
        say(`${build.label} round ${round} at ${rate}/s: ${result.achievedRate.toFixed(0)} created/s (${result.failed} failed, ${result.skipped} skipped), `
          + `${result.received}/${result.expected} received; from the 201: p50 ${ms(result.fromAnswer, 0.5)} p95 ${ms(result.fromAnswer, 0.95)} p99 ${ms(result.fromAnswer, 0.99)} max ${ms(result.fromAnswer, 1)} ms; `
          + `bench event loop p99 ${benchLoopP99Ms.toFixed(0)} ms; load ${loadavg()[0]!.toFixed(1)}`
          + (outbox ? `; outbox reads per write per replica ${outbox.readsPerWrite.toFixed(3)}, NOTIFY/s per writer ${outbox.notifiesPerSecond.toFixed(0)}` : ''));
      }
    }
  }
  return measured;
}

/** The highest over rounds: outbox reads per write per replica, NOTIFY/s per writing replica. */
function outboxColumns(of: Measured[]): string {
  const figures = of.map((m) => m.outbox).filter((f): f is OutboxFigures => f !== null);
  if (figures.length === 0) return 'n/a | n/a';
  return `${Math.max(...figures.map((f) => f.readsPerWrite)).toFixed(3)} | ${Math.max(...figures.map((f) => f.notifiesPerSecond)).toFixed(0)}`;
}

const ms = (sorted: number[], p: number) => (sorted.length === 0 ? 'n/a' : percentile(sorted, p).toFixed(0));
const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 0.5);
const range = (values: number[]) => `${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)}`;

/** One table row per rate: the median over rounds of each figure, with the p50's and p99's spread. */
function rows(label: string, measured: Measured[]): string[] {
  return RATES.map((rate) => {
    const of = measured.filter((m) => m.rate === rate);
    const figure = (p: number, from: 'fromAnswer' | 'fromSend' = 'fromAnswer') => of.map((m) => percentile(m.result[from], p));
    const received = of.reduce((sum, m) => sum + m.result.received, 0);
    const expected = of.reduce((sum, m) => sum + m.result.expected, 0);
    const delivered = received === expected ? 'all' : `**${expected - received} lost**`;
    return `| ${label} | ${rate} | ${median(of.map((m) => m.result.achievedRate)).toFixed(0)} | ${median(figure(0.5)).toFixed(0)} (${range(figure(0.5))}) | ${median(figure(0.95)).toFixed(0)} | `
      + `**${median(figure(0.99)).toFixed(0)}** (${range(figure(0.99))}) | ${Math.max(...figure(1)).toFixed(0)} | ${median(figure(0.99, 'fromSend')).toFixed(0)} | `
      + `${received}/${expected} (${delivered}) | ${Math.max(...of.map((m) => m.benchLoopP99Ms)).toFixed(0)} | ${outboxColumns(of)} |`;
  });
}

const lines: string[] = [];
const builds: Array<{ label: string; distDir: string; remove?: () => void }> = [];
if (BASELINE) {
  say(`building ${BASELINE} for the baseline`);
  const built = buildRevision(BASELINE);
  builds.push({ label: `${BASELINE} (baseline)`, distDir: built.distDir, remove: built.remove });
}
builds.push({ label: 'this checkout', distDir: join(REPO_ROOT, 'dist') });
const prepared: Prepared[] = [];
const loadBefore = loadavg()[0]!;
try {
  const runs = builds.flatMap((build) => TRANSPORTS.map((transport) => ({ transport, distDir: build.distDir, label: TRANSPORTS.length > 1 ? `${build.label}, ${transport}` : build.label })));
  for (const [index, run] of runs.entries()) prepared.push(await prepare(index, run.label, run.distDir, run.transport));
  const measured = await measure(prepared);
  for (const build of prepared) lines.push(...rows(build.label, measured.get(build.label)!));
} finally {
  for (const build of prepared) await build.close();
  for (const build of builds) build.remove?.();
}
const header = [
  '# MQTT fan-out across replicas: benchmark results', '',
  `${new Date().toISOString()}; ${cpus().length} cores (${cpus()[0]?.model}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB; Node ${process.version}; `
  + `${REPLICAS} replicas (\`node dist/server.js all\`) and one \`idp\` on one PostgreSQL database, all on this machine; ${ROUNDS} rounds of ${SECONDS} s per rate, rates interleaved; `
  + `one subscriber per replica on the Datastream's Observations; POSTs round-robin over the replicas, at most ${MAX_IN_FLIGHT} unanswered. `
  + `Change messages across the replicas: ${TRANSPORTS.map((t) => (t === 'redis' ? 'Redis (MQTT_CLUSTER, a redis-server of the run\'s own)' : 'the PostgreSQL outbox')).join('; ')}. `
  + `The runs (build × transport) ran side by side (each its own processes and database), their rounds interleaved. Load average (1 min) before / after: ${loadBefore.toFixed(1)} / ${loadavg()[0]!.toFixed(1)}.`,
  '', 'Latency: from the 201 answer of the POST (headers received by the writer) to the message\'s arrival at a subscriber on another replica; '
  + 'negative when the message came before the answer. Figures are the median over rounds; p50 and p99 with their spread over rounds; max over all rounds; '
  + 'received/expected summed over rounds. The outbox columns are n/a where Redis carries the messages.',
  '', '| run | rate (POST/s) | created/s | p50 ms (spread) | p95 ms | p99 ms (spread) | max ms | p99 from the POST sent, ms | received/expected | bench event loop p99 ms | outbox reads per write per replica (max) | NOTIFY/s per writer (max) |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|',
];
writeFileSync(join(REPO_ROOT, 'bench', 'results-mqtt-fanout.md'), `${[...header, ...lines].join('\n')}\n`);
say('wrote bench/results-mqtt-fanout.md');
