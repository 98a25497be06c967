import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { bearer, grant, uniqueEmail } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { freePort, request, startDataApiBeside, type ChildServer } from '../faults/harness.js';
import { connect, mqttGateway, subscribeOne, topicOf } from './mqtt-helpers.js';

type Json = Record<string, any>;

/** A personal access token of a new user holding DATASET_PAYLOAD_READ on the dataset. */
async function readerToken(t: TestApp, dataset: PublishedDataset, payload: Json = {}): Promise<Json> {
  const oidc = await grant(t, uniqueEmail('pat-reader'), ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: dataset.datasetId });
  const created = await t.app.inject({ method: 'POST', url: '/v1/users/me/tokens', headers: bearer(oidc), payload: { name: 'sensor', ...payload } });
  assert.equal(created.statusCode, 201, created.body);
  return { ...created.json(), oidc };
}

const deleteToken = async (t: TestApp, token: Json) => {
  const deleted = await t.app.inject({ method: 'DELETE', url: `/v1/users/me/tokens/${token.id}`, headers: bearer(token.oidc) });
  assert.equal(deleted.statusCode, 204, deleted.body);
};

// A personal access token as the MQTT password (any user name): the broker's CONNECT and each decision after it.
for (const kind of databaseKinds(import.meta.url)) {
  describe(`MQTT with personal access tokens (${kind})`, () => {
    let t: TestApp;
    let closed: PublishedDataset;
    let other: PublishedDataset;
    let gateway: { app: FastifyInstance; mqttUrl: string };
    const clients: MqttClient[] = [];
    const track = (client: MqttClient) => (clients.push(client), client);

    before(async () => {
      t = await buildTestApp(kind);
      closed = await publishStaDataset(t, { slug: 'closed' });
      other = await publishStaDataset(t, { slug: 'other' });
      gateway = await mqttGateway(t);
    });
    after(async () => {
      await Promise.all(clients.map((client) => client.endAsync(true).catch(() => {})));
      await gateway.app.close();
      await t.close();
    });

    test("accepted as the password, with its user's rights; once deleted, CONNECT is refused (5) and a live session loses them", async () => {
      const token = await readerToken(t, closed);
      const client = track(await connect(gateway.mqttUrl, token.token, { username: 'whoever' }));
      assert.equal(await subscribeOne(client, topicOf(closed.datasetId, closed.slug, '/Observations')), 0);
      assert.equal(await subscribeOne(client, topicOf(other.datasetId, other.slug, '/Observations')), 128, 'never more than its user');
      await deleteToken(t, token);
      await assert.rejects(connect(gateway.mqttUrl, token.token), (error: { code?: number }) => error.code === 5);
      assert.equal(await subscribeOne(client, topicOf(closed.datasetId, closed.slug, '/Things')), 128, 'the open session holds nothing any more');
    });

    test('unknown and malformed tokens are refused (5)', async () => {
      for (const password of [`pat_${Buffer.alloc(32, 1).toString('base64url')}`, 'pat_x']) {
        await assert.rejects(connect(gateway.mqttUrl, password), (error: { code?: number }) => error.code === 5);
      }
    });

    test('a narrowed token reaches only its datasets', async () => {
      const oidc = await grant(t, uniqueEmail('pat-both'), ['DATASET_PAYLOAD_READ']);
      const created = await t.app.inject({ method: 'POST', url: '/v1/users/me/tokens', headers: bearer(oidc), payload: { name: 'one', datasetIds: [other.datasetId] } });
      assert.equal(created.statusCode, 201, created.body);
      const client = track(await connect(gateway.mqttUrl, created.json().token));
      assert.equal(await subscribeOne(client, topicOf(other.datasetId, other.slug, '/Observations')), 0);
      assert.equal(await subscribeOne(client, topicOf(closed.datasetId, closed.slug, '/Observations')), 128);
    });
  });
}

// Two data API processes on one PostgreSQL: a deletion through the management API is refused by
// the other process within a second (its caller cache follows the access version), over HTTP and MQTT.
describe('personal access token deletion across processes (postgres)', { skip: !process.env['TEST_DATABASE_URL'] && 'needs TEST_DATABASE_URL' }, () => {
  let t: TestApp;
  let otherProcess: ChildServer;
  let otherUrl: string;
  let otherMqtt: string;
  let dataset: PublishedDataset;

  before(async () => {
    t = await buildTestApp('postgres');
    dataset = await publishStaDataset(t, { slug: 'twice' });
    const mqttPort = await freePort();
    otherMqtt = `mqtt://127.0.0.1:${mqttPort}`;
    ({ server: otherProcess, url: otherUrl } = await startDataApiBeside(t, { MQTT_PORT: String(mqttPort) }));
  });
  after(async () => {
    await otherProcess?.kill('SIGTERM');
    await t.close();
  });

  test('the second process refuses a deleted token within 1 s', async () => {
    const token = await readerToken(t, dataset);
    const url = `${otherUrl}${dataset.base}/Things`;
    // Served, and so cached, by the other process (twice: the second answer comes from its cache).
    for (let i = 0; i < 2; i++) assert.equal((await request(url, { token: token.token })).status, 200);
    const client = await connect(otherMqtt, token.token);
    await client.endAsync(true);

    await deleteToken(t, token);
    const deletedAt = Date.now();
    let status = 200;
    while (Date.now() - deletedAt < 1_000) {
      status = (await request(url, { token: token.token })).status;
      if (status === 401) break;
    }
    assert.equal(status, 401, 'refused within a second of the deletion');
    await assert.rejects(connect(otherMqtt, token.token), (error: { code?: number }) => error.code === 5);
  });
});
