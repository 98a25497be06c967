import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { grant, uniqueEmail } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { closedByBroker, connect, mqttGateway, nextMessage, subscribeOne, topicOf } from './mqtt-helpers.js';
import { createSensorChain, feature } from './mqtt-fixtures.js';
import { CALLER_TTL_MS } from '../../src/data-api/mqtt/mqtt-access.js';

// SensorThings over MQTT: receiving updates (OGC 18-088 §14.2) and creating by publish (§14.3).
for (const kind of databaseKinds()) {
  describe(`MQTT notifications and creates (${kind})`, () => {
    let t: TestApp;
    let dataset: PublishedDataset;
    let gateway: { app: FastifyInstance; mqttUrl: string };
    let chain: { thingId: number; datastreamId: number };
    let reader: MqttClient;
    const clients: MqttClient[] = [];
    const track = (client: MqttClient) => (clients.push(client), client);
    const topic = (path: string) => topicOf(dataset.datasetId, dataset.slug, path);

    before(async () => {
      t = await buildTestApp(kind);
      dataset = await publishStaDataset(t, { openDataAccess: false, slug: 'air' });
      gateway = await mqttGateway(t);
      chain = await createSensorChain(dataset);
      const scope = { scopeType: 'DATASET' as const, scopeId: dataset.datasetId };
      reader = track(await connect(gateway.mqttUrl, await grant(t, uniqueEmail('reader'), ['DATASET_PAYLOAD_READ'], scope)));
    });
    after(async () => {
      await Promise.all(clients.map((client) => client.endAsync(true).catch(() => {})));
      await gateway.app.close();
      await t.close();
    });

    test('an Observation created by HTTP reaches the subscribers of its Datastream, its set and its FeatureOfInterest', async () => {
      const inDatastream = topic(`/Datastreams(${chain.datastreamId})/Observations`);
      assert.equal(await subscribeOne(reader, inDatastream), 0);
      assert.equal(await subscribeOne(reader, topic('/v1.1/Observations')), 0);
      const messages = [nextMessage(reader, inDatastream), nextMessage(reader, topic('/v1.1/Observations'))];
      const created = await dataset.request('POST', `/Datastreams(${chain.datastreamId})/Observations`, { result: 21.5, FeatureOfInterest: feature('kerb') });
      assert.equal(created.statusCode, 201, created.body);
      const [message, aliased] = await Promise.all(messages);
      assert.equal(message!['@iot.id'], created.json()['@iot.id']);
      assert.equal(message!['result'], 21.5);
      assert.equal(message!['@iot.selfLink'], created.json()['@iot.selfLink']);
      assert.equal(message!['Datastream'], undefined, 'the link expansion is not part of the message');
      assert.deepEqual(aliased, message);

      const foiId = (await dataset.request('GET', `/Observations(${message!['@iot.id']})/FeatureOfInterest`)).json()['@iot.id'];
      const inFeature = topic(`/FeaturesOfInterest(${foiId})/Observations`);
      assert.equal(await subscribeOne(reader, inFeature), 0);
      const byFeature = nextMessage(reader, inFeature);
      const again = await dataset.request('POST', '/Observations', { result: 3, Datastream: { '@iot.id': chain.datastreamId }, FeatureOfInterest: { '@iot.id': foiId } });
      assert.equal(again.statusCode, 201, again.body);
      assert.equal((await byFeature)['@iot.id'], again.json()['@iot.id']);
    });

    test('an update reaches the entity topic, and a property topic when that property changed', async () => {
      const thing = topic(`/Things(${chain.thingId})`);
      assert.equal(await subscribeOne(reader, thing), 0);
      assert.equal(await subscribeOne(reader, `${thing}/name`), 0);
      const entity = nextMessage(reader, thing);
      const property = nextMessage(reader, `${thing}/name`);
      const patched = await dataset.request('PATCH', `/Things(${chain.thingId})`, { name: 'renamed' });
      assert.equal(patched.statusCode, 200, patched.body);
      assert.equal((await entity)['name'], 'renamed');
      assert.deepEqual(await property, { name: 'renamed' });
    });

    test('a PUBLISH with DATASET_PAYLOAD_WRITE creates the Observation; subscribers get the stored entity', async () => {
      const scope = { scopeType: 'DATASET' as const, scopeId: dataset.datasetId };
      const writer = track(await connect(gateway.mqttUrl, await grant(t, uniqueEmail('writer'), ['DATASET_PAYLOAD_WRITE'], scope)));
      const inDatastream = topic(`/Datastreams(${chain.datastreamId})/Observations`);
      const received = nextMessage(reader, inDatastream);
      await writer.publishAsync(inDatastream, JSON.stringify({ result: 42, FeatureOfInterest: feature('mast') }), { qos: 1 });
      const message = await received;
      assert.equal(message['result'], 42);
      assert.ok(Number.isInteger(message['@iot.id']), 'the stored entity, not the raw message');
      const read = await dataset.request('GET', `/Observations(${message['@iot.id']})`);
      assert.equal(read.statusCode, 200, read.body);
      assert.equal(read.json().result, 42);
      // To the entity set, the Datastream is named by a link, as in an HTTP POST.
      const viaSet = nextMessage(reader, inDatastream);
      await writer.publishAsync(topic('/Observations'), JSON.stringify({ result: 43, Datastream: { '@iot.id': chain.datastreamId }, FeatureOfInterest: feature('pole') }), { qos: 1 });
      assert.equal((await viaSet)['result'], 43);
      // A message that is not an entity is dropped and the connection stays.
      await writer.publishAsync(inDatastream, 'not json', { qos: 1 });
      assert.ok(writer.connected);
    });

    test('a revoked right stops the messages of an existing subscription within seconds', async () => {
      const email = uniqueEmail('revoked');
      const scope = { scopeType: 'DATASET' as const, scopeId: dataset.datasetId };
      const follower = track(await connect(gateway.mqttUrl, await grant(t, email, ['DATASET_PAYLOAD_READ'], scope)));
      const things = topic('/Things');
      assert.equal(await subscribeOne(follower, things), 0);
      const createThing = async (name: string) => assert.equal((await dataset.request('POST', '/Things', { name, description: 'x' })).statusCode, 201);
      const first = nextMessage(follower, things);
      await createThing('before');
      assert.equal((await first)['name'], 'before');

      await t.ctx.db.updateTable('users').set({ active: false }).where('email', '=', email).execute();
      await new Promise((resolve) => setTimeout(resolve, CALLER_TTL_MS + 100));
      // The first message after the rights went stale has them reloaded; the next one is withheld.
      await createThing('reloading');
      await new Promise((resolve) => setTimeout(resolve, 500));
      const received: string[] = [];
      follower.on('message', (_topic, payload) => received.push(JSON.parse(payload.toString()).name));
      await createThing('after');
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      assert.deepEqual(received.filter((name) => name === 'after'), []);
    });

    test('a PUBLISH without the write right closes the connection and creates nothing', async () => {
      const count = async () => (await dataset.request('GET', '/Observations?$count=true&$top=0')).json()['@iot.count'];
      const before = await count();
      const closing = closedByBroker(reader);
      reader.publish(topic(`/Datastreams(${chain.datastreamId})/Observations`), JSON.stringify({ result: 1, FeatureOfInterest: feature('no') }), { qos: 1 });
      await closing;
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(await count(), before);
    });
  });
}
