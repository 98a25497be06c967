import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
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
    // A dataset's first subscriber in the deployment is known to the writers once its NOTIFY
    // reached them (docs/production.md): changes committed before then are not rendered for it.
    await eventually('this process to learn of the other\'s subscriber', 10_000, () => t.ctx.staChanges.interest.wanted(routeTopicPrefix(dataset.datasetId, dataset.slug)) || undefined);
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
});
