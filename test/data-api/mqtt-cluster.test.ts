import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { eventually, freePort, startDataApiBeside, type ChildServer } from '../faults/harness.js';
import { routeTopicPrefix } from '../../src/data-api/mqtt/topics.js';
import { connect, nextMessage, subscribeOne, topicOf } from './mqtt-helpers.js';
import { createSensorChain, feature } from './mqtt-fixtures.js';

// Two gateway processes on one PostgreSQL: a write through one reaches the MQTT subscribers of the
// other (NOTIFY sta_changes, LISTENed by every gateway).
describe('MQTT notifications across processes (postgres)', { skip: !process.env['TEST_DATABASE_URL'] && 'needs TEST_DATABASE_URL' }, () => {
  let t: TestApp;
  let other: ChildServer;
  let otherMqtt: string;
  let subscriber: MqttClient | null = null;
  let dataset: PublishedDataset;

  before(async () => {
    t = await buildTestApp('postgres');
    dataset = await publishStaDataset(t, { slug: 'cluster' });
    const mqttPort = await freePort();
    otherMqtt = `mqtt://127.0.0.1:${mqttPort}`;
    // A replica of the same deployment: the same public DATA_API_URL, which the links are written with.
    ({ server: other } = await startDataApiBeside(t, { MQTT_PORT: String(mqttPort), DATA_API_URL: t.ctx.config.dataApi.baseUrl }));
  });
  after(async () => {
    await subscriber?.endAsync(true).catch(() => {});
    await other?.kill('SIGTERM');
    await t.close();
  });

  test('a subscriber on the other process receives an Observation created through this one', async () => {
    const chain = await createSensorChain(dataset);
    subscriber = await connect(otherMqtt, t.adminToken);
    const topic = topicOf(dataset.datasetId, dataset.slug, `/Datastreams(${chain.datastreamId})/Observations`);
    assert.equal(await subscribeOne(subscriber, topic), 0);
    const received = nextMessage(subscriber, topic);
    const created = await dataset.request('POST', `/Datastreams(${chain.datastreamId})/Observations`, { result: 12.5, FeatureOfInterest: feature('roof') });
    assert.equal(created.statusCode, 201, created.body);
    const message = await received;
    assert.equal(message['@iot.id'], created.json()['@iot.id']);
    assert.equal(message['result'], 12.5);
    // Rendered once, by the process that committed it: what a GET of it answers on any replica.
    const got = await dataset.request('GET', `/Observations(${created.json()['@iot.id']})`);
    assert.deepEqual(message, got.json());
  });

  test('a route\'s first subscriber on the other process is known to this one before its SUBACK', async () => {
    const chain = await createSensorChain(dataset);
    const topic = topicOf(dataset.datasetId, dataset.slug, `/Datastreams(${chain.datastreamId})/Observations`);
    const prefix = routeTopicPrefix(dataset.datasetId, dataset.slug);
    // Nobody follows the route any more, as far as this process knows.
    await subscriber?.endAsync(true);
    subscriber = null;
    await eventually('the route to be wanted nowhere', 10_000, () => !t.ctx.staChanges.interest.wanted(prefix) || undefined);
    // The other process cannot note the route in mqtt_interest while the table is locked: it must
    // hold the SUBACK until it can (a writer that learnt of the subscriber after its SUBACK did not
    // render the changes committed in between for it).
    const blocker = new pg.Client({ connectionString: t.ctx.databaseUrl! });
    await blocker.connect();
    const client = await connect(otherMqtt, t.adminToken);
    try {
      await blocker.query('begin; lock table mqtt_interest in exclusive mode');
      let acknowledged = false;
      const subscribing = subscribeOne(client, topic).then((code) => { acknowledged = true; return code; });
      await sleep(300);
      const acknowledgedWhileLocked = acknowledged;
      await blocker.query('commit');
      assert.equal(await subscribing, 0);
      assert.equal(acknowledgedWhileLocked, false, 'the SUBACK came before the route was noted as wanted');
      // A change committed right after the SUBACK reaches the new subscriber.
      const received = nextMessage(client, topic);
      const created = await dataset.request('POST', `/Datastreams(${chain.datastreamId})/Observations`, { result: 7, FeatureOfInterest: feature('roof') });
      assert.equal(created.statusCode, 201, created.body);
      assert.equal((await received)['@iot.id'], created.json()['@iot.id']);
    } finally {
      await blocker.end();
      await client.endAsync(true);
    }
  });
});
