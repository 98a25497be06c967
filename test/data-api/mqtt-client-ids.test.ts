import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { grant, uniqueEmail } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { closedByBroker, connect, mqttGateway, nextMessage, subscribeOne, topicOf } from './mqtt-helpers.js';

// Client ids are bound to their identity while the session lives (issue 16, finding 6: an anonymous
// CONNECT with a user's client id used to take the user's session over and disconnect them).
const IDENTIFIER_REJECTED = 2;
const rejectedId = (error: { code?: number }) => error.code === IDENTIFIER_REJECTED;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`MQTT client ids (${kind})`, () => {
    let t: TestApp;
    let dataset: PublishedDataset;
    let gateway: { app: FastifyInstance; mqttUrl: string };
    const clients: MqttClient[] = [];
    const track = (client: MqttClient) => (clients.push(client), client);
    const things = () => topicOf(dataset.datasetId, dataset.slug, '/Things');
    const reader = (name: string) => grant(t, uniqueEmail(name), ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: dataset.datasetId });
    const createThing = async (name: string) => assert.equal((await dataset.request('POST', '/Things', { name, description: 'x' })).statusCode, 201);

    before(async () => {
      t = await buildTestApp(kind);
      dataset = await publishStaDataset(t, { openDataAccess: true, slug: 'ids' });
      gateway = await mqttGateway(t);
    });
    after(async () => {
      await Promise.all(clients.map((client) => client.endAsync(true).catch(() => {})));
      await gateway.app.close();
      await t.close();
    });

    test('an anonymous CONNECT and a foreign token with a user\'s client id are refused (0x02); the user stays connected and keeps receiving', async () => {
      const user = track(await connect(gateway.mqttUrl, await reader('owner'), { clientId: 'station-7' }));
      assert.equal(await subscribeOne(user, things()), 0);
      let userClosed = false;
      user.on('close', () => { userClosed = true; });

      await assert.rejects(connect(gateway.mqttUrl, undefined, { clientId: 'station-7' }), rejectedId);
      await assert.rejects(connect(gateway.mqttUrl, await reader('intruder'), { clientId: 'station-7' }), rejectedId);

      const received = nextMessage(user, things());
      await createThing('still here');
      assert.equal((await received)['name'], 'still here');
      assert.equal(userClosed, false);
      assert.ok(user.connected);
    });

    test('the same identity reconnecting takes its session over, as MQTT says', async () => {
      const token = await reader('roaming');
      const first = track(await connect(gateway.mqttUrl, token, { clientId: 'roaming-1' }));
      const closing = closedByBroker(first);
      const second = track(await connect(gateway.mqttUrl, token, { clientId: 'roaming-1' }));
      await closing;
      assert.ok(second.connected);
    });

    test('anonymous clients are each their own identity: one cannot take another\'s id, and none can keep a session', async () => {
      const anonymous = track(await connect(gateway.mqttUrl, undefined, { clientId: 'anon-1' }));
      await assert.rejects(connect(gateway.mqttUrl, undefined, { clientId: 'anon-1' }), rejectedId);
      assert.ok(anonymous.connected);
      await assert.rejects(connect(gateway.mqttUrl, undefined, { clientId: 'anon-2', clean: false }), rejectedId);
    });

    test('a kept session (clean session 0) stays bound after its connection ended: nobody else takes or wipes it', async () => {
      const token = await reader('keeper');
      const keeper = await connect(gateway.mqttUrl, token, { clientId: 'keeper-1', clean: false });
      assert.equal(await subscribeOne(keeper, things()), 0);
      await keeper.endAsync();

      await assert.rejects(connect(gateway.mqttUrl, undefined, { clientId: 'keeper-1' }), rejectedId);
      await assert.rejects(connect(gateway.mqttUrl, await reader('wiper'), { clientId: 'keeper-1' }), rejectedId);

      // The owner finds its session with its subscription, and receives on it without subscribing again.
      const back = track(await connect(gateway.mqttUrl, token, { clientId: 'keeper-1', clean: false }));
      const received = nextMessage(back, things());
      await createThing('kept');
      assert.equal((await received)['name'], 'kept');
    });
  });
}
