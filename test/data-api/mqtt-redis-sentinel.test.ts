import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { probe, startTestRedis, startTestSentinel, type TestRedis, type TestSentinel } from '../helpers/redis-server.js';
import { eventually } from '../faults/harness.js';
import { connect, createThingIn, mqttGateway, namesReceived, subscribeOne, thingsTopicOf } from './mqtt-helpers.js';

/**
 * MQTT_CLUSTER=redis-sentinel://… (contract "MQTT across replicas": a Sentinel address list is
 * accepted as ioredis takes it): the brokers find the cluster's Redis by asking the sentinels for
 * the master, and follow a failover to the replica the sentinels promote. A master, its replica and
 * one sentinel of the test's own (quorum 1); two gateways of this process are two brokers.
 */
const MASTER_NAME = 'mqtt';

describe('MQTT on a Redis found through Sentinel (postgres)', { skip: !process.env['TEST_DATABASE_URL'] && 'needs TEST_DATABASE_URL' }, () => {
  let master: TestRedis;
  let replica: TestRedis;
  let sentinel: TestSentinel;
  let t: TestApp;
  let dataset: PublishedDataset;
  let a: { app: FastifyInstance; mqttUrl: string };
  let b: { app: FastifyInstance; mqttUrl: string };
  const clients: MqttClient[] = [];
  const track = (client: MqttClient) => (clients.push(client), client);
  const things = () => thingsTopicOf(dataset);
  const createThing = (name: string) => createThingIn(dataset, name);

  before(async () => {
    master = await startTestRedis();
    replica = await startTestRedis({ replicaOf: master.port });
    sentinel = await startTestSentinel(master.port, MASTER_NAME);
    t = await buildTestApp('postgres', { MQTT_CLUSTER: `redis-sentinel://127.0.0.1:${sentinel.port}/${MASTER_NAME}` });
    dataset = await publishStaDataset(t, { openDataAccess: true, slug: 'sentinel' });
    a = await mqttGateway(t);
    b = await mqttGateway(t);
  });
  after(async () => {
    await Promise.all(clients.map((client) => client.endAsync(true).catch(() => {})));
    await a?.app.close();
    await b?.app.close();
    await t?.close();
    await sentinel?.kill();
    await replica?.kill();
    await master?.kill();
  });

  test('the brokers find the master through the sentinel: a change reaches the subscribers of both', async () => {
    const onA = track(await connect(a.mqttUrl, t.adminToken));
    const onB = track(await connect(b.mqttUrl, t.adminToken));
    const seenA = namesReceived(onA, things());
    const seenB = namesReceived(onB, things());
    assert.equal(await subscribeOne(onA, things()), 0);
    assert.equal(await subscribeOne(onB, things()), 0);
    await createThing('through the sentinel');
    await eventually('the change on both brokers', 10_000, () => (seenA.length >= 1 && seenB.length >= 1 ? true : undefined));
    assert.deepEqual([seenA, seenB], [[{ name: 'through the sentinel', qos: 0 }], [{ name: 'through the sentinel', qos: 0 }]]);
    // The cluster's state is on the master the sentinel named: its client-id bindings reached the replica.
    const keys = await replicaKeys();
    assert.ok(keys.some((key) => key.startsWith('sta:mqtt:client-id:')), `no client-id bindings on the replica: ${keys.join(', ')}`);
  });

  test('a failover: the master killed, the sentinel promotes its replica, and the brokers take clients and announce changes again within 20 s, by themselves', async () => {
    await master.kill();
    const killedAt = Date.now();
    await eventually('the sentinel to promote the replica', 15_000, async () => ((await sentinel.masterPort()) === replica.port ? true : undefined));
    const back = async (url: string) => eventually(`a broker taking clients after the failover (${url})`, 20_000 - (Date.now() - killedAt), async () => {
      try {
        const client = await connect(url, t.adminToken);
        track(client);
        return client;
      } catch {
        return undefined;
      }
    });
    const [onA, onB] = await Promise.all([back(a.mqttUrl), back(b.mqttUrl)]);
    const seenB = namesReceived(onB!, things());
    assert.equal(await subscribeOne(onB!, things()), 0);
    assert.equal(await subscribeOne(onA!, things()), 0);
    // Written by this process, published through the promoted master, delivered by broker B.
    await eventually('a change announced through the new master', 20_000 - (Date.now() - killedAt), async () => {
      await createThing(`after the failover ${Date.now()}`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      return seenB.some((message) => message.name.startsWith('after the failover')) || undefined;
    });
  });

  /** The replica's keys, once it has any. */
  const replicaKeys = () => eventually('the replica to hold keys', 5_000, () => probe(replica.port, async (connection) => {
    const keys = await connection.keys('*');
    return keys.length > 0 ? keys : undefined;
  }));
});
