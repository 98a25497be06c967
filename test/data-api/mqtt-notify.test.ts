import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { grant, uniqueEmail } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { closedByBroker, connect, mqttGateway, nextMessage, subscribeOne, topicOf } from './mqtt-helpers.js';
import { createSensorChain, feature } from './mqtt-fixtures.js';
import { decodeJwt } from 'jose';
import { eventually } from '../faults/harness.js';
import { compareDerived } from '../sta/derived-check.js';
import { storageSchemaOf } from '../../src/modules/datasets/index.js';

// SensorThings over MQTT: receiving updates (OGC 18-088 §14.2) and creating by publish (§14.3).
for (const kind of databaseKinds(import.meta.url)) {
  describe(`MQTT notifications and creates (${kind})`, () => {
    let t: TestApp;
    let dataset: PublishedDataset;
    let opened: PublishedDataset;
    let gateway: { app: FastifyInstance; mqttUrl: string };
    let chain: { thingId: number; datastreamId: number };
    let reader: MqttClient;
    const clients: MqttClient[] = [];
    const track = (client: MqttClient) => (clients.push(client), client);
    const topic = (path: string) => topicOf(dataset.datasetId, dataset.slug, path);

    before(async () => {
      t = await buildTestApp(kind);
      dataset = await publishStaDataset(t, { openDataAccess: false, slug: 'air' });
      opened = await publishStaDataset(t, { openDataAccess: true, slug: 'was-open' });
      // The route table does not poll in these tests: a route change reaches the broker's deliveries
      // only through its own check (and through NOTIFY on PostgreSQL).
      gateway = await mqttGateway(t, {}, 3_600_000);
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
      // The Datastream's stored phenomenonTime and observedArea took in what MQTT created.
      const derived = await compareDerived(t.ctx.db, storageSchemaOf(dataset.datasetId), t.ctx.postgis);
      assert.deepEqual(derived.mismatches, []);
      assert.ok(derived.observed > 0);
      // A message that is not an entity is dropped and the connection stays.
      await writer.publishAsync(inDatastream, 'not json', { qos: 1 });
      assert.ok(writer.connected);
    });

    // Revocation (issue 16, finding 6): a subscriber whose right ended receives nothing published
    // after the change committed, while a control subscriber of the same topic, whose right stands,
    // receives it: so the message was sent, and withheld from the revoked one only.
    const thingsOf = (of: PublishedDataset) => topicOf(of.datasetId, of.slug, '/Things');
    const follow = async (token: string | undefined, of: PublishedDataset = dataset) => {
      const client = track(await connect(gateway.mqttUrl, token));
      assert.equal(await subscribeOne(client, thingsOf(of)), 0);
      const names: string[] = [];
      client.on('message', (received, payload) => { if (received === thingsOf(of)) names.push(JSON.parse(payload.toString()).name); });
      return { client, names };
    };
    const readerToken = (email: string, of: PublishedDataset = dataset) => grant(t, email, ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: of.datasetId });

    async function provesRevocation(revoked: { client: MqttClient; names: string[] }, revoke: () => Promise<void>, of: PublishedDataset = dataset) {
      const control = await follow(await readerToken(uniqueEmail('control'), of), of);
      const createThing = async (name: string) => assert.equal((await of.request('POST', '/Things', { name, description: 'x' })).statusCode, 201);
      const tag = uniqueEmail('thing');
      await createThing(`${tag} before`);
      await eventually('both received the message before the revocation', 5_000, () => (revoked.names.includes(`${tag} before`) && control.names.includes(`${tag} before`)) || undefined);
      await revoke();
      // Published right after the revocation committed, not seconds later.
      await createThing(`${tag} after`);
      await eventually('the control subscriber received the message', 5_000, () => control.names.includes(`${tag} after`) || undefined);
      // Deliveries to all subscribers of a message are decided together; a round trip on the revoked
      // subscriber's connection after the control's message arrived brings anything sent to it before.
      await subscribeOne(revoked.client, topicOf(of.datasetId, of.slug, '/Things(1)'));
      assert.deepEqual(revoked.names.filter((name) => name.startsWith(tag)), [`${tag} before`]);
    }

    test('a deleted assignment stops the messages at once; a control subscriber still receives them', async () => {
      const email = uniqueEmail('unassigned');
      const revoked = await follow(await readerToken(email));
      await provesRevocation(revoked, async () => {
        const groups = t.ctx.db.selectFrom('group_members').innerJoin('users', 'users.id', 'group_members.user_id').select('group_members.group_id').where('users.email', '=', email);
        const deleted = await t.ctx.db.deleteFrom('assignments').where('group_id', 'in', groups).executeTakeFirst();
        assert.equal(deleted.numDeletedRows, 1n);
      });
    });

    test('a deactivated user stops receiving at once; a control subscriber still receives', async () => {
      const email = uniqueEmail('deactivated');
      const revoked = await follow(await readerToken(email));
      await provesRevocation(revoked, async () => {
        const updated = await t.ctx.db.updateTable('users').set({ active: false }).where('email', '=', email).executeTakeFirst();
        assert.equal(updated.numUpdatedRows, 1n);
      });
    });

    test('a dataset no longer open stops its anonymous subscribers at once; a reader still receives', async () => {
      const anonymous = await follow(undefined, opened);
      await provesRevocation(anonymous, async () => {
        const updated = await t.ctx.db.updateTable('datasets').set({ open_data_access: false }).where('id', '=', opened.datasetId).executeTakeFirst();
        assert.equal(updated.numUpdatedRows, 1n);
      }, opened);
    });

    test('a token that expired stops the messages at its exp; a control subscriber still receives', async () => {
      const email = uniqueEmail('expiring');
      const claims = decodeJwt(await readerToken(email));
      const exp = Math.floor(Date.now() / 1000) + 2;
      const revoked = await follow(await t.signToken({ sub: claims.sub, email: claims['email'], exp }));
      await provesRevocation(revoked, async () => {
        // The revocation is the clock passing exp; nothing in the database changes.
        await eventually('the token expired', 5_000, () => Date.now() >= exp * 1000 || undefined);
      });
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
