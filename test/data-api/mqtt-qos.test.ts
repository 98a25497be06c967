import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { eventually } from '../faults/harness.js';
import { connect, mqttGateway, namesReceived, subscribeOne, topicOf } from './mqtt-helpers.js';

/**
 * Change messages are published at QoS 1 and delivered at the QoS each subscription asked for
 * (contract, "MQTT across replicas"): a QoS 1 subscription of a persistent session gets what was
 * published while its client was away, up to MQTT_MAX_QUEUED_MESSAGES; a QoS 0 one gets each
 * message once at QoS 0, as before.
 */
const MAX_QUEUED = 3;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`MQTT QoS of change messages (${kind})`, () => {
    let t: TestApp;
    let dataset: PublishedDataset;
    let gateway: { app: FastifyInstance; mqttUrl: string };
    const clients: MqttClient[] = [];
    const track = (client: MqttClient) => (clients.push(client), client);
    const things = () => topicOf(dataset.datasetId, dataset.slug, '/Things');
    const createThing = async (name: string) => assert.equal((await dataset.request('POST', '/Things', { name, description: 'x' })).statusCode, 201);
    /** Every message a client receives on the Things topic: the Thing's name and the QoS it came at. */
    const record = (client: MqttClient) => namesReceived(client, things());

    before(async () => {
      t = await buildTestApp(kind);
      dataset = await publishStaDataset(t, { slug: 'qos' });
      gateway = await mqttGateway(t, { maxQueuedMessages: MAX_QUEUED });
    });
    after(async () => {
      await Promise.all(clients.map((client) => client.endAsync(true).catch(() => {})));
      await gateway.app.close();
      await t.close();
    });

    test('a QoS 1 subscription gets each message at QoS 1, a QoS 0 one at QoS 0, each once', async () => {
      const one = track(await connect(gateway.mqttUrl, t.adminToken));
      const zero = track(await connect(gateway.mqttUrl, t.adminToken));
      const atOne = record(one);
      const atZero = record(zero);
      assert.deepEqual(await one.subscribeAsync(things(), { qos: 1 }), [{ topic: things(), qos: 1 }]);
      assert.equal(await subscribeOne(zero, things()), 0);
      await createThing('first');
      await createThing('second');
      await eventually('both messages on both subscriptions', 5_000, () => (atOne.length >= 2 && atZero.length >= 2 ? true : undefined));
      await new Promise((resolve) => setTimeout(resolve, 200)); // a second copy would come now
      assert.deepEqual(atOne, [{ name: 'first', qos: 1 }, { name: 'second', qos: 1 }]);
      assert.deepEqual(atZero, [{ name: 'first', qos: 0 }, { name: 'second', qos: 0 }]);
    });

    test('a persistent session gets what was published while its client was away, up to MQTT_MAX_QUEUED_MESSAGES', async () => {
      const options = { clientId: `qos-${kind}-station`, clean: false };
      const first = await connect(gateway.mqttUrl, t.adminToken, options);
      assert.deepEqual(await first.subscribeAsync(things(), { qos: 1 }), [{ topic: things(), qos: 1 }]);
      await first.endAsync();
      // Away: five creations, of which the broker keeps three for the session.
      for (const n of [1, 2, 3, 4, 5]) await createThing(`while away ${n}`);
      await new Promise((resolve) => setTimeout(resolve, 300));

      const back = track(await connect(gateway.mqttUrl, t.adminToken, { ...options, resubscribe: false }));
      const seen = record(back);
      await eventually('the queued messages', 5_000, () => (seen.length >= MAX_QUEUED ? true : undefined));
      await createThing('after the return');
      await eventually('the message after the return', 5_000, () => (seen.some((m) => m.name === 'after the return') ? true : undefined));
      assert.deepEqual(seen, [
        { name: 'while away 1', qos: 1 }, { name: 'while away 2', qos: 1 }, { name: 'while away 3', qos: 1 },
        { name: 'after the return', qos: 1 },
      ]);
    });
  });
}
