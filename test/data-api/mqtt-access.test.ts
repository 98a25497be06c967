import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import mqtt, { type MqttClient } from 'mqtt';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { grant, uniqueEmail } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { closedByBroker, connect, mqttGateway, nextMessage, subscribeOne, topicOf } from './mqtt-helpers.js';

// SensorThings over MQTT: who may connect, subscribe and publish (the contract's MQTT paragraph).
for (const kind of databaseKinds(import.meta.url)) {
  describe(`MQTT broker access (${kind})`, () => {
    let t: TestApp;
    let open: PublishedDataset;
    let closed: PublishedDataset;
    let gateway: { app: FastifyInstance; mqttUrl: string };
    const clients: MqttClient[] = [];
    const track = (client: MqttClient) => (clients.push(client), client);

    before(async () => {
      t = await buildTestApp(kind);
      open = await publishStaDataset(t, { openDataAccess: true, slug: 'open' });
      closed = await publishStaDataset(t, { openDataAccess: false, slug: 'closed' });
      gateway = await mqttGateway(t);
    });
    after(async () => {
      await Promise.all(clients.map((client) => client.endAsync(true).catch(() => {})));
      await gateway.app.close();
      await t.close();
    });

    test('a token that does not verify: CONNACK not authorized (5)', async () => {
      await assert.rejects(connect(gateway.mqttUrl, 'not-a-token'), (error: { code?: number }) => error.code === 5);
    });

    test('MQTT 5 is not spoken (aedes 1.2): CONNACK unacceptable protocol version', async () => {
      const attempt = mqtt.connectAsync(gateway.mqttUrl, { protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 5_000 });
      await assert.rejects(attempt);
    });

    test('anonymous: open data subscribable, closed data refused (0x80), wildcards refused', async () => {
      const client = track(await connect(gateway.mqttUrl));
      assert.equal(await subscribeOne(client, topicOf(open.datasetId, open.slug, '/Things')), 0);
      assert.equal(await subscribeOne(client, topicOf(open.datasetId, open.slug, '/v1.1/Datastreams(7)/Observations')), 0);
      assert.equal(await subscribeOne(client, topicOf(closed.datasetId, closed.slug, '/Things')), 128);
      assert.equal(await subscribeOne(client, topicOf(open.datasetId, open.slug, '/#')), 128);
      assert.equal(await subscribeOne(client, `v1/datasets/${open.datasetId}/+/Things`), 128);
      assert.equal(await subscribeOne(client, '$SYS/#'), 128);
      assert.equal(await subscribeOne(client, topicOf(open.datasetId, 'unpublished', '/Things')), 128);
    });

    test('a token without DATASET_PAYLOAD_READ is refused; one with it is granted', async () => {
      const scope = { scopeType: 'DATASET' as const, scopeId: closed.datasetId };
      const outsider = track(await connect(gateway.mqttUrl, await grant(t, uniqueEmail('meta'), ['DATASET_READ'], scope)));
      assert.equal(await subscribeOne(outsider, topicOf(closed.datasetId, closed.slug, '/Observations')), 128);
      const reader = track(await connect(gateway.mqttUrl, await grant(t, uniqueEmail('reader'), ['DATASET_PAYLOAD_READ'], scope)));
      assert.equal(await subscribeOne(reader, topicOf(closed.datasetId, closed.slug, '/Observations')), 0);
      assert.equal(await subscribeOne(reader, topicOf(closed.datasetId, closed.slug, '/Things(1)/name')), 0);
    });

    test('a publish without the write right closes the connection; anonymous publishes too', async () => {
      const scope = { scopeType: 'DATASET' as const, scopeId: closed.datasetId };
      const reader = track(await connect(gateway.mqttUrl, await grant(t, uniqueEmail('reader'), ['DATASET_PAYLOAD_READ'], scope)));
      const closing = closedByBroker(reader);
      reader.publish(topicOf(closed.datasetId, closed.slug, '/Things'), JSON.stringify({ name: 'refused', description: 'x' }), { qos: 1 });
      await closing;
      const anonymous = track(await connect(gateway.mqttUrl));
      const closingToo = closedByBroker(anonymous);
      anonymous.publish(topicOf(open.datasetId, open.slug, '/Things'), JSON.stringify({ name: 'refused', description: 'x' }), { qos: 1 });
      await closingToo;
    });

    test('MQTT over WebSocket at /mqtt on the data API listener', async () => {
      await gateway.app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = gateway.app.server.address() as AddressInfo;
      const client = track(await mqtt.connectAsync(`ws://127.0.0.1:${port}/mqtt`, { protocolVersion: 4, reconnectPeriod: 0, connectTimeout: 5_000 }));
      assert.equal(await subscribeOne(client, topicOf(open.datasetId, open.slug, '/Things')), 0);
      assert.equal(await subscribeOne(client, topicOf(closed.datasetId, closed.slug, '/Things')), 128);
      // A notification reaches a WebSocket subscriber whole (one frame per packet).
      const writer = track(await connect(gateway.mqttUrl, await grant(t, uniqueEmail('writer'), ['DATASET_PAYLOAD_WRITE'], { scopeType: 'DATASET', scopeId: open.datasetId })));
      const message = nextMessage(client, topicOf(open.datasetId, open.slug, '/Things'));
      writer.publish(topicOf(open.datasetId, open.slug, '/Things'), JSON.stringify({ name: 'over WebSocket', description: 'x' }));
      assert.equal((await message)['name'], 'over WebSocket');
      await assert.rejects(mqtt.connectAsync(`ws://127.0.0.1:${port}/mqtt`, { protocolVersion: 4, reconnectPeriod: 0, connectTimeout: 5_000, username: 'ignored', password: 'bad' }), (error: { code?: number }) => error.code === 5);
    });
  });
}
