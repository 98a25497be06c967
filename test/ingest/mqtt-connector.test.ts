import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import mqtt, { type MqttClient } from 'mqtt';
import { startMqttConnector } from '../../src/ingest/connectors/mqtt.js';
import type { Connector, ConnectorContext, ConnectorState, SourceRecord } from '../../src/ingest/types.js';
import { freePort } from '../faults/harness.js';
import { waitFor } from '../helpers/wait.js';
import { mosquittoMissing, startMosquitto, type OwnBroker } from './mosquitto.js';

/**
 * The MQTT connector against real brokers: the machine's Mosquitto (127.0.0.1:1883) for reading
 * and payloads, a Mosquitto of the test's own for what needs a broker under the test's control.
 * `deliver` stands in for the runtime: it keeps what it was given and resolves (the commit), or
 * holds batches unresolved to show what is acknowledged before a commit.
 */

const MACHINE_BROKER = 'tcp://127.0.0.1:1883';
const FAST_RETRY = { retryMinMs: 100, retryMaxMs: 400 };

interface Harness {
  context: ConnectorContext;
  /** Every record handed to deliver, committed or not. */
  delivered: SourceRecord[];
  /** Records whose deliver resolved. */
  committed: SourceRecord[];
  batchSizes: number[];
  reports: ConnectorState[];
  /** Every log line as text (object and message), to look for secrets. */
  logs: string[];
  /** Resolves every held deliver and delivers at once from then on. */
  release(): void;
}

interface HarnessOptions {
  /** deliver does not resolve until `release`. */
  hold?: boolean;
  /** deliver takes this long (a commit). */
  commitMs?: number;
}

function harness(configuration: Record<string, unknown>, options: HarnessOptions = {}): Harness {
  let holding = options.hold ?? false;
  let releaseAll = () => {};
  const held = new Promise<void>((resolve) => (releaseAll = resolve));
  const h: Harness = {
    delivered: [],
    committed: [],
    batchSizes: [],
    reports: [],
    logs: [],
    release() {
      holding = false;
      releaseAll();
    },
    context: {
      pipelineId: randomUUID(),
      dataSource: { id: randomUUID(), name: 'sensors', connectorType: 'MQTT', configuration },
      schedule: null,
      signal: new AbortController().signal,
      async deliver(batch) {
        h.delivered.push(...batch.records);
        h.batchSizes.push(batch.records.length);
        if (holding) await held;
        else if (options.commitMs) await sleep(options.commitMs);
        h.committed.push(...batch.records);
      },
      position: async () => undefined,
      report: (state) => h.reports.push(state),
      log: {
        info: (object, message) => h.logs.push(`${JSON.stringify(object)} ${message}`),
        warn: (object, message) => h.logs.push(`${JSON.stringify(object)} ${message}`),
        error: (object, message) => h.logs.push(`${JSON.stringify(object)} ${message}`),
      },
    },
  };
  return h;
}

const lastReport = (h: Harness) => h.reports.at(-1);
const running = (h: Harness) => waitFor(() => lastReport(h)?.state === 'RUNNING', { what: 'the connector to report RUNNING', timeoutMs: 10_000, last: () => JSON.stringify(h.reports) });
const valuesOf = (records: SourceRecord[]) => records.map((record) => record.value);
const uniqueBase = () => `connector-test/${randomUUID().slice(0, 8)}`;
const uniqueClientId = () => `ct${randomUUID().replaceAll('-', '').slice(0, 20)}`;

async function publisher(url: string): Promise<MqttClient> {
  return mqtt.connectAsync(url.replace(/^tcp:/, 'mqtt:'), { protocolVersion: 4, reconnectPeriod: 0, clientId: uniqueClientId() });
}

describe('MQTT connector: reading from the machine Mosquitto', () => {
  let pub: MqttClient;
  const connectors: Connector[] = [];
  const start = async (h: Harness) => {
    const connector = await startMqttConnector(h.context, FAST_RETRY);
    connectors.push(connector);
    return connector;
  };

  before(async () => {
    pub = await publisher(MACHINE_BROKER);
  });
  after(async () => {
    await Promise.all(connectors.map((connector) => connector.stop()));
    await pub.endAsync();
  });

  test('object and array payloads become records with topic and receivedAt; others one unreadable record each', async () => {
    const base = uniqueBase();
    const h = harness({ urls: [MACHINE_BROKER], topics: [`${base}/#`], qos: 1 });
    await start(h);
    await running(h);
    const before = new Date();
    await pub.publishAsync(`${base}/one`, JSON.stringify({ t: 21.5 }), { qos: 1 });
    await pub.publishAsync(`${base}/many`, JSON.stringify([{ t: 1 }, { t: 2 }]), { qos: 1 });
    await pub.publishAsync(`${base}/bad`, 'temperature=20', { qos: 1 });
    await pub.publishAsync(`${base}/bad`, '42', { qos: 1 });
    await pub.publishAsync(`${base}/bad`, Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { qos: 1 });
    await pub.publishAsync(`${base}/bad`, `${'['.repeat(100)}${']'.repeat(100)}`, { qos: 1 });
    await waitFor(() => h.committed.length >= 7, { what: '7 records', last: () => JSON.stringify(h.committed) });
    const received = h.committed;
    assert.equal(received.length, 7);
    for (const record of received) {
      assert.ok(record.receivedAt instanceof Date && record.receivedAt >= before && record.receivedAt <= new Date(), 'receivedAt is when it arrived');
    }
    assert.deepEqual(received.slice(0, 3).map(({ value, topic }) => ({ value, topic })), [
      { value: { t: 21.5 }, topic: `${base}/one` },
      { value: { t: 1 }, topic: `${base}/many` },
      { value: { t: 2 }, topic: `${base}/many` },
    ]);
    for (const record of received.slice(0, 3)) assert.equal(record.unreadable, undefined);
    const unreadable = received.slice(3);
    for (const record of unreadable) {
      assert.equal(record.value, undefined);
      assert.equal(record.topic, `${base}/bad`);
    }
    assert.equal(unreadable[0]!.text, 'temperature=20');
    assert.match(unreadable[0]!.unreadable!, /not JSON/);
    assert.equal(unreadable[1]!.text, '42');
    assert.match(unreadable[1]!.unreadable!, /JSON number, not an object or an array/);
    assert.equal(unreadable[2]!.text, '{\ufffd\ufffd}');
    assert.match(unreadable[2]!.unreadable!, /not valid UTF-8/);
    assert.match(unreadable[3]!.unreadable!, /deeper than 64 levels/);
  });

  test('wildcard topics: + and # select what is read, other topics are not', async () => {
    const base = uniqueBase();
    const h = harness({ urls: [MACHINE_BROKER], topics: [`${base}/+/temperature`, `${base}/hall/#`], qos: 0 });
    await start(h);
    await running(h);
    await pub.publishAsync(`${base}/room1/temperature`, '{"n":1}', { qos: 1 });
    await pub.publishAsync(`${base}/room1/humidity`, '{"n":2}', { qos: 1 });
    await pub.publishAsync(`${base}/hall/east/door`, '{"n":3}', { qos: 1 });
    await pub.publishAsync(`${base}/room1/deeper/temperature`, '{"n":4}', { qos: 1 });
    await pub.publishAsync(`${base}/hall`, '{"n":5}', { qos: 1 });
    // The last one published is read; what was not read by then never will be (one publisher, in order).
    await waitFor(() => h.committed.some((record) => (record.value as { n: number }).n === 5), { what: 'the last message' });
    assert.deepEqual(h.committed.map((record) => [record.topic, record.value]), [
      [`${base}/room1/temperature`, { n: 1 }],
      [`${base}/hall/east/door`, { n: 3 }],
      [`${base}/hall`, { n: 5 }],
    ]);
  });

  test('the broker URLs are tried in order: one that refuses is passed over for the next', async () => {
    const closedPort = await freePort();
    const base = uniqueBase();
    const h = harness({ urls: [`tcp://127.0.0.1:${closedPort}`, MACHINE_BROKER], topics: [`${base}/#`], qos: 1, connect_timeout: '5s', keepalive: '30s' });
    await start(h);
    await running(h);
    assert.deepEqual(h.reports[0], { state: 'RETRYING', message: `mqtt://127.0.0.1:${closedPort}: connection refused` });
    assert.match(lastReport(h)!.message, /on mqtt:\/\/127\.0\.0\.1:1883$/);
    await pub.publishAsync(`${base}/x`, '{"ok":true}', { qos: 1 });
    await waitFor(() => h.committed.length === 1, { what: 'the message through the second URL' });
  });

  test('a configuration the connector cannot run is refused naming the member, not its value', async () => {
    const h = harness({ urls: ['gopher://127.0.0.1:1883'], topics: ['a'], qos: 1, password: 'gopher-secret' });
    await assert.rejects(startMqttConnector(h.context), (error: Error) => {
      assert.match(error.message, /configuration\.urls/);
      assert.doesNotMatch(error.message, /gopher-secret/);
      return true;
    });
    const noQos = harness({ urls: [MACHINE_BROKER], topics: ['a'], qos: 3 });
    await assert.rejects(startMqttConnector(noQos.context), /configuration\.qos must be 0, 1 or 2/);
  });
});

describe('MQTT connector: acknowledgement after commit, sessions, bursts (a Mosquitto of its own)', { skip: mosquittoMissing }, () => {
  let broker: OwnBroker;
  let pub: MqttClient;

  before(async () => {
    // Room for the bursts below: a session's queue beyond in-flight (Mosquitto's default 1,000 drops the rest).
    broker = await startMosquitto(await freePort(), { maxQueuedMessages: 30_000 });
    pub = await publisher(broker.url);
  });
  after(async () => {
    await pub?.endAsync();
    await broker?.stop();
  });

  for (const qos of [1, 2] as const) {
    test(`QoS ${qos}: what was not committed is delivered again to the next connector of the session; what was committed is not; what came meanwhile arrives`, async () => {
      const base = uniqueBase();
      const configuration = { urls: [broker.url], topics: [`${base}/#`], qos, client_id: uniqueClientId() };
      const values = (records: SourceRecord[]) => valuesOf(records).map((value) => (value as { n: number }).n);

      // 1. Three messages delivered, none committed: the connector stops (as a crash would) before the commit.
      const first = harness(configuration, { hold: true });
      const firstConnector = await startMqttConnector(first.context, FAST_RETRY);
      await running(first);
      for (const n of [1, 2, 3]) await pub.publishAsync(`${base}/s`, JSON.stringify({ n }), { qos });
      await waitFor(() => first.delivered.length === 3, { what: 'three records handed over' });
      await firstConnector.stop();
      // The commit comes after the stop: the stopped connector must not acknowledge it any more.
      first.release();
      await waitFor(() => first.committed.length === 3, { what: 'the late commit' });

      // 2. The next connector of the session gets them again, and commits them.
      const second = harness(configuration);
      const secondConnector = await startMqttConnector(second.context, FAST_RETRY);
      await waitFor(() => second.committed.length >= 3, { what: 'the three redelivered', last: () => JSON.stringify(second.committed) });
      await running(second);
      await pub.publishAsync(`${base}/s`, JSON.stringify({ n: 4 }), { qos });
      await waitFor(() => values(second.committed).includes(4), { what: 'message 4' });
      assert.deepEqual(values(second.committed), [1, 2, 3, 4]);
      await secondConnector.stop();

      // 3. Published while no connector runs: kept for the session.
      await pub.publishAsync(`${base}/s`, JSON.stringify({ n: 5 }), { qos });

      // 4. The third connector gets 5 and what follows, nothing committed before.
      const third = harness(configuration);
      const thirdConnector = await startMqttConnector(third.context, FAST_RETRY);
      await running(third);
      await pub.publishAsync(`${base}/s`, JSON.stringify({ n: 6 }), { qos });
      await waitFor(() => values(third.committed).includes(6), { what: 'message 6' });
      assert.deepEqual(values(third.committed), [5, 6]);
      await thirdConnector.stop();
    });
  }

  test('a burst of 5,000 QoS 1 messages is delivered in batches and all acknowledged', async () => {
    const base = uniqueBase();
    const configuration = { urls: [broker.url], topics: [`${base}/#`], qos: 1, client_id: uniqueClientId() };
    const h = harness(configuration);
    const connector = await startMqttConnector(h.context, FAST_RETRY);
    await running(h);
    await Promise.all(Array.from({ length: 5_000 }, (_, n) => pub.publishAsync(`${base}/burst`, JSON.stringify({ n }), { qos: 1 })));
    await waitFor(() => h.committed.length >= 5_000, { what: '5,000 records', timeoutMs: 60_000, last: () => String(h.committed.length) });
    assert.equal(new Set(h.committed.map((record) => (record.value as { n: number }).n)).size, 5_000);
    assert.ok(h.batchSizes.length < 5_000 && Math.max(...h.batchSizes) > 1, `batches of more than one record (${h.batchSizes.length} batches)`);
    assert.ok(Math.max(...h.batchSizes) <= 1_000, 'no batch above the maximum');
    await connector.stop();

    // Everything was acknowledged: the session holds nothing for the next connector but what is new.
    const next = harness(configuration);
    const nextConnector = await startMqttConnector(next.context, FAST_RETRY);
    await running(next);
    await pub.publishAsync(`${base}/burst`, JSON.stringify({ n: 'after' }), { qos: 1 });
    await waitFor(() => next.committed.length > 0, { what: 'the message after the burst' });
    assert.deepEqual(valuesOf(next.committed), [{ n: 'after' }]);
    await nextConnector.stop();
  });

  test('throughput: 20,000 QoS 1 messages with a 2 ms commit per batch (logged, not asserted)', async () => {
    const base = uniqueBase();
    const h = harness({ urls: [broker.url], topics: [`${base}/#`], qos: 1, client_id: uniqueClientId() }, { commitMs: 2 });
    const connector = await startMqttConnector(h.context, FAST_RETRY);
    await running(h);
    const total = 20_000;
    const started = performance.now();
    let published = 0;
    const publishing = Promise.all(Array.from({ length: total }, (_, n) => pub.publishAsync(`${base}/flood`, `{"n":${n}}`, { qos: 1 }).then(() => published++)));
    await publishing;
    const publishSeconds = (performance.now() - started) / 1000;
    await waitFor(() => h.committed.length >= total, { what: `${total} records`, timeoutMs: 120_000, last: () => String(h.committed.length) });
    const seconds = (performance.now() - started) / 1000;
    const batches = h.batchSizes.length;
    console.log(`# MQTT connector throughput: ${total} QoS 1 messages committed in ${seconds.toFixed(2)} s = ${Math.round(total / seconds)} msg/s ` +
      `(publisher done after ${publishSeconds.toFixed(2)} s; ${batches} batches, ${(total / batches).toFixed(1)} records per batch on average; the broker configured with max_inflight_messages 20)`);
    assert.equal(published, total);
    await connector.stop();
  });
});

describe('MQTT connector: unreachable and refusing brokers (a Mosquitto of its own)', { skip: mosquittoMissing }, () => {
  const brokers: OwnBroker[] = [];
  const connectors: Connector[] = [];
  after(async () => {
    await Promise.all(connectors.map((connector) => connector.stop()));
    await Promise.all(brokers.map((broker) => broker.stop()));
  });

  test('a broker down at start: RETRYING naming the URL and the reason, then RUNNING once it is up', async () => {
    const port = await freePort();
    const h = harness({ urls: [`tcp://127.0.0.1:${port}`], topics: ['late/#'], qos: 1 });
    connectors.push(await startMqttConnector(h.context, FAST_RETRY));
    await waitFor(() => lastReport(h)?.state === 'RETRYING', { what: 'RETRYING' });
    assert.deepEqual(lastReport(h), { state: 'RETRYING', message: `mqtt://127.0.0.1:${port}: connection refused` });
    brokers.push(await startMosquitto(port));
    await running(h);
    assert.equal(lastReport(h)!.message, `subscribed to "late/#" on mqtt://127.0.0.1:${port}`);
  });

  test('wrong credentials: RETRYING with the refusal, never the password; the right ones: RUNNING', async () => {
    const broker = await startMosquitto(await freePort(), { users: { reader: 'right-Pass-1' } });
    brokers.push(broker);
    const wrong = 'wrong-Secret-7431';
    const h = harness({ urls: [broker.url.replace('tcp://', `tcp://reader:${wrong}@`)], topics: ['t/#'], qos: 1, user: 'reader', password: wrong });
    const connector = await startMqttConnector(h.context, FAST_RETRY);
    connectors.push(connector);
    await waitFor(() => lastReport(h)?.state === 'RETRYING', { what: 'RETRYING' });
    const { message } = lastReport(h)!;
    assert.match(message, /^mqtt:\/\/127\.0\.0\.1:\d+: refused: (not authorized|bad user name or password)$/);
    for (const text of [...h.reports.map((report) => report.message), ...h.logs]) assert.ok(!text.includes(wrong), `no password in: ${text}`);
    await connector.stop();

    const right = harness({ urls: [broker.url], topics: ['t/#'], qos: 1, user: 'reader', password: 'right-Pass-1' });
    connectors.push(await startMqttConnector(right.context, FAST_RETRY));
    await running(right);
  });
});
