import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { grant, uniqueEmail } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { startTestRedis, type TestRedis } from '../helpers/redis-server.js';
import { eventually, freePort, request, startDataApiBeside, type ChildServer } from '../faults/harness.js';
import { closedByBroker, connect, createThingIn, mqttGateway, namesReceived, nextMessage, subscribeOne, thingsTopicOf, topicOf } from './mqtt-helpers.js';

/**
 * MQTT_CLUSTER (contract "MQTT across replicas", on a Redis cluster): the brokers of all processes
 * form one broker as aedes clusters, on a Redis of the test's own. Two gateways of this process are
 * two brokers of the cluster (each its own aedes instance, its own Redis connections); a data API
 * process beside it is a third.
 */
const MAX_QUEUED = 3;
const IDENTIFIER_REJECTED = 2;
const SERVER_UNAVAILABLE = 3;

describe('MQTT on a Redis cluster (postgres)', { skip: !process.env['TEST_DATABASE_URL'] && 'needs TEST_DATABASE_URL' }, () => {
  let redis: TestRedis;
  let t: TestApp;
  let dataset: PublishedDataset;
  let a: { app: FastifyInstance; mqttUrl: string };
  let b: { app: FastifyInstance; mqttUrl: string };
  const clients: MqttClient[] = [];
  const track = (client: MqttClient) => (clients.push(client), client);
  const things = () => thingsTopicOf(dataset);
  const createThing = (name: string) => createThingIn(dataset, name);
  /** Every Thing name a client receives on the Things topic (or `on`), with the QoS it came at. */
  const record = (client: MqttClient, on = things()) => namesReceived(client, on);
  const settle = () => new Promise((resolve) => setTimeout(resolve, 300));
  const metric = async (name: string) => {
    const line = (await t.app.inject({ method: 'GET', url: '/metrics' })).body.split('\n').find((l) => l.startsWith(`${name} `));
    assert.ok(line, `${name} in /metrics`);
    return Number(line.split(' ')[1]);
  };

  before(async () => {
    redis = await startTestRedis();
    t = await buildTestApp('postgres', { MQTT_CLUSTER: redis.url, MQTT_MAX_QUEUED_MESSAGES: String(MAX_QUEUED) });
    dataset = await publishStaDataset(t, { openDataAccess: true, slug: 'redis' });
    a = await mqttGateway(t, { maxQueuedMessages: MAX_QUEUED });
    b = await mqttGateway(t, { maxQueuedMessages: MAX_QUEUED });
  });
  after(async () => {
    await Promise.all(clients.map((client) => client.endAsync(true).catch(() => {})));
    await a?.app.close();
    await b?.app.close();
    await t?.close();
    await redis?.kill();
  });

  test('a change reaches the subscribers of every broker once, at the QoS each asked for, as a GET answers it', async () => {
    const onA = track(await connect(a.mqttUrl, t.adminToken));
    const onB = track(await connect(b.mqttUrl, t.adminToken));
    const seenA = record(onA);
    const seenB = record(onB);
    assert.deepEqual(await onA.subscribeAsync(things(), { qos: 1 }), [{ topic: things(), qos: 1 }]);
    assert.equal(await subscribeOne(onB, things()), 0);
    const message = nextMessage(onB, things());
    const created = await createThing('first');
    await createThing('second');
    assert.deepEqual(await message, (await dataset.request('GET', `/Things(${created['@iot.id']})`)).json());
    await eventually('both messages on both brokers', 5_000, () => (seenA.length >= 2 && seenB.length >= 2 ? true : undefined));
    await settle(); // a second copy would come now
    assert.deepEqual(seenA, [{ name: 'first', qos: 1 }, { name: 'second', qos: 1 }]);
    assert.deepEqual(seenB, [{ name: 'first', qos: 0 }, { name: 'second', qos: 0 }]);
    // How far the brokers were behind Redis at their last delivery: measured (a burst waits at
    // least a turn of the event loop for its rights check), and small; there is no outbox.
    const lag = await metric('mqtt_cluster_delivery_lag_seconds');
    assert.ok(lag > 0 && lag < 5, `mqtt_cluster_delivery_lag_seconds ${lag}`);
    assert.equal(await metric('mqtt_outbox_read_rows_total'), 0);
  });

  test('a persistent session that comes back on another broker keeps its subscription and gets what was published meanwhile, up to MQTT_MAX_QUEUED_MESSAGES', async () => {
    const options = { clientId: `redis-station-${Date.now()}`, clean: false };
    // A topic no connected client has (the v1.1 alias): while the client is away, only its stored session wants it.
    const topic = topicOf(dataset.datasetId, dataset.slug, '/v1.1/Things');
    const first = await connect(a.mqttUrl, t.adminToken, options);
    assert.deepEqual(await first.subscribeAsync(topic, { qos: 1 }), [{ topic, qos: 1 }]);
    await first.endAsync();
    // At once: rendered in one burst, their messages are queued at the same moment (the bound must hold then too).
    await Promise.all([1, 2, 3, 4, 5].map((n) => createThing(`while away ${n}`)));
    await settle();

    // Back on the other broker, without subscribing again: the session is the cluster's.
    const back = track(await connect(b.mqttUrl, t.adminToken, { ...options, resubscribe: false }));
    const seen = record(back, topic);
    await eventually('the queued messages', 5_000, () => (seen.length >= MAX_QUEUED ? true : undefined));
    await createThing('after the return');
    await eventually('the message after the return', 5_000, () => (seen.some((m) => m.name === 'after the return') ? true : undefined));
    await settle();
    // Three of the five (which three: the order the creations committed in), once each, then the live one.
    assert.equal(seen.length, MAX_QUEUED + 1, JSON.stringify(seen));
    assert.equal(new Set(seen.slice(0, MAX_QUEUED).map((m) => m.name)).size, MAX_QUEUED);
    assert.ok(seen.slice(0, MAX_QUEUED).every((m) => /^while away [1-5]$/.test(m.name) && m.qos === 1), JSON.stringify(seen));
    assert.deepEqual(seen.at(-1), { name: 'after the return', qos: 1 });
  });

  test('a client id held on one broker is refused to another identity on the other (0x02); its holder keeps receiving', async () => {
    const reader = (name: string) => grant(t, uniqueEmail(name), ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: dataset.datasetId });
    const clientId = `redis-owned-${Date.now()}`;
    const owner = track(await connect(a.mqttUrl, await reader('owner'), { clientId }));
    assert.equal(await subscribeOne(owner, things()), 0);
    await assert.rejects(connect(b.mqttUrl, await reader('intruder'), { clientId }), (error: { code?: number }) => error.code === IDENTIFIER_REJECTED);
    await assert.rejects(connect(b.mqttUrl, undefined, { clientId }), (error: { code?: number }) => error.code === IDENTIFIER_REJECTED);
    const received = nextMessage(owner, things());
    await createThing('still held');
    assert.equal((await received)['name'], 'still held');
    assert.ok(owner.connected);
  });

  test('a revocation holds on every broker: the revoked subscriber on one gets nothing after it, a control subscriber on the other still does', async () => {
    // A dataset not open to everyone: a reader without the right has none.
    const closed = await publishStaDataset(t, { openDataAccess: false, slug: 'closed' });
    const closedThings = topicOf(closed.datasetId, closed.slug, '/Things');
    const email = uniqueEmail('revoked');
    const readerOf = (who: string) => grant(t, who, ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: closed.datasetId });
    const createClosedThing = async (name: string) => assert.equal((await closed.request('POST', '/Things', { name, description: 'x' })).statusCode, 201);
    const revoked = track(await connect(b.mqttUrl, await readerOf(email)));
    const control = track(await connect(a.mqttUrl, await readerOf(uniqueEmail('control'))));
    const revokedSeen = record(revoked, closedThings);
    const controlSeen = record(control, closedThings);
    assert.equal(await subscribeOne(revoked, closedThings), 0);
    assert.equal(await subscribeOne(control, closedThings), 0);
    const tag = uniqueEmail('thing');
    await createClosedThing(`${tag} before`);
    await eventually('both received the message before the revocation', 5_000, () => (revokedSeen.some((m) => m.name === `${tag} before`) && controlSeen.some((m) => m.name === `${tag} before`)) || undefined);
    const groups = t.ctx.db.selectFrom('group_members').innerJoin('users', 'users.id', 'group_members.user_id').select('group_members.group_id').where('users.email', '=', email);
    assert.equal((await t.ctx.db.deleteFrom('assignments').where('group_id', 'in', groups).executeTakeFirst()).numDeletedRows, 1n);
    // Published right after the revocation committed.
    await createClosedThing(`${tag} after`);
    await eventually('the control subscriber received the message', 5_000, () => controlSeen.some((m) => m.name === `${tag} after`) || undefined);
    // Both brokers got the message from Redis alike; a round trip on the revoked connection brings anything sent to it before.
    await subscribeOne(revoked, topicOf(closed.datasetId, closed.slug, '/Things(1)'));
    await settle();
    assert.deepEqual(revokedSeen.filter((m) => m.name.startsWith(tag)).map((m) => m.name), [`${tag} before`]);
  });

  test('a process beside this one is a broker of the cluster too: its writes reach subscribers here, and ours its', async () => {
    let other: ChildServer | null = null;
    try {
      const mqttPort = await freePort();
      const started = await startDataApiBeside(t, { MQTT_PORT: String(mqttPort), DATA_API_URL: t.ctx.config.dataApi.baseUrl, MQTT_CLUSTER: redis.url });
      other = started.server;
      const here = track(await connect(a.mqttUrl, t.adminToken));
      const there = track(await connect(`mqtt://127.0.0.1:${mqttPort}`, t.adminToken));
      const seenHere = record(here);
      const seenThere = record(there);
      assert.equal(await subscribeOne(here, things()), 0);
      assert.equal(await subscribeOne(there, things()), 0);
      // Written here: rendered and published by this process, delivered by the other.
      await createThing('written here');
      await eventually('the other process to deliver what this one wrote', 10_000, () => seenThere.some((m) => m.name === 'written here') || undefined);
      // Written there: by the other process, delivered here.
      const written = await request(`${started.url}${dataset.base}/Things`, { method: 'POST', token: t.adminToken, body: { name: 'written there', description: 'x' } });
      assert.equal(written.status, 201, JSON.stringify(written.body));
      await eventually('this process to deliver what the other wrote', 10_000, () => seenHere.some((m) => m.name === 'written there') || undefined);
    } catch (error) {
      console.log(other?.lines.join('\n'));
      throw error;
    } finally {
      await other?.kill('SIGTERM');
    }
  });

  test('Redis down: clients are disconnected and CONNECTs refused (0x03) within 10 s, HTTP answers; within 15 s of its return the brokers take clients again, by themselves', async () => {
    const subscriber = track(await connect(a.mqttUrl, t.adminToken));
    assert.equal(await subscribeOne(subscriber, things()), 0);
    const dropped = closedByBroker(subscriber, 10_000);
    const downAt = Date.now();
    await redis.kill();
    await dropped;
    await eventually('a CONNECT refused with 0x03', 10_000 - (Date.now() - downAt), async () => {
      try {
        const client = await connect(b.mqttUrl, t.adminToken);
        await client.endAsync(true);
        return undefined;
      } catch (error) {
        return (error as { code?: number }).code === SERVER_UNAVAILABLE ? true : undefined;
      }
    });
    assert.equal((await dataset.request('GET', '/Things?$top=1')).statusCode, 200);
    assert.equal((await dataset.request('POST', '/Things', { name: 'while Redis is down', description: 'x' })).statusCode, 201);

    await redis.start();
    const upAt = Date.now();
    // Every broker, each within 15 s of Redis's return.
    const backOn = (url: string, which: string) => eventually(`broker ${which} taking clients again`, 15_000 - (Date.now() - upAt), async () => {
      try {
        return await connect(url, t.adminToken);
      } catch {
        return undefined;
      }
    });
    const [back, backOnA] = await Promise.all([backOn(b.mqttUrl, 'B'), backOn(a.mqttUrl, 'A')]);
    track(back);
    track(backOnA);
    assert.equal(await subscribeOne(back, things()), 0);
    const received = nextMessage(back, things(), 10_000);
    await eventually('a change announced again', 10_000, async () => {
      await createThing('after Redis came back');
      return true;
    });
    assert.equal((await received)['name'], 'after Redis came back');
  });
  test('a broker stopping while Redis is away closes at once, and nothing it leaves rejects unheard', async () => {
    const stopping = await mqttGateway(t, { maxQueuedMessages: MAX_QUEUED });
    try {
      // On the cluster: it takes clients.
      track(await eventually('the new broker taking clients', 15_000, async () => connect(stopping.mqttUrl, t.adminToken).catch(() => undefined)));
      await redis.kill();
      // Its connections between two reconnections.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const unheard: unknown[] = [];
      const hear = (reason: unknown) => unheard.push(reason);
      process.on('unhandledRejection', hear);
      const startedAt = Date.now();
      try {
        await stopping.app.close();
        await new Promise((resolve) => setTimeout(resolve, 300));
      } finally {
        process.off('unhandledRejection', hear);
      }
      // It hung on mqemitter-redis's QUITs (Fastify gave up on it after 10 s), and the refused QUITs rejected unheard.
      assert.ok(Date.now() - startedAt < 5_000, `closing took ${Date.now() - startedAt} ms`);
      assert.deepEqual(unheard.map(String), []);
    } finally {
      await redis.start();
    }
  });
});
