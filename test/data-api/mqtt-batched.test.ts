import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { connect, mqttGateway, subscribeOne, topicOf } from './mqtt-helpers.js';
import { createSensorChain, feature } from './mqtt-fixtures.js';

// The notifier reads the changed entities of a burst together (one collection read per route,
// entity set and chunk of ids); what subscribers receive must stay what a GET of each answers.
for (const kind of databaseKinds(import.meta.url)) {
  describe(`MQTT notifications of a burst of changes (${kind})`, () => {
    let t: TestApp;
    let dataset: PublishedDataset;
    let gateway: { app: FastifyInstance; mqttUrl: string };
    let chain: { thingId: number; datastreamId: number };
    let subscriber: MqttClient;
    /** Every message received, per topic, in order of arrival (the raw text). */
    const received = new Map<string, string[]>();
    const topic = (path: string) => topicOf(dataset.datasetId, dataset.slug, path);
    const messagesOn = (path: string) => received.get(topic(path)) ?? [];

    before(async () => {
      t = await buildTestApp(kind);
      dataset = await publishStaDataset(t, { slug: 'burst' });
      gateway = await mqttGateway(t);
      chain = await createSensorChain(dataset);
      subscriber = await connect(gateway.mqttUrl, t.adminToken);
      subscriber.on('message', (name, payload) => {
        const list = received.get(name) ?? [];
        list.push(payload.toString('utf8'));
        received.set(name, list);
      });
    });
    after(async () => {
      await subscriber?.endAsync(true).catch(() => {});
      await gateway?.app.close();
      await t?.close();
    });

    const follow = async (...paths: string[]) => {
      for (const path of paths) assert.equal(await subscribeOne(subscriber, topic(path)), 0, path);
    };
    /** The body of a GET as the gateway sends it: the text a message must equal. */
    const getText = async (path: string) => {
      const answer = await dataset.request('GET', path);
      assert.equal(answer.statusCode, 200, answer.body);
      return answer.body;
    };
    /**
     * Waits for a marker Thing created after the burst: messages of one connection arrive in order
     * and the burst's changes are queued before the marker's, so once it arrived, all did.
     */
    const settle = async (tag: string) => {
      const marker = await dataset.request('POST', '/Things', { name: `marker ${tag}`, description: 'sent after the burst' });
      assert.equal(marker.statusCode, 201, marker.body);
      for (const deadline = Date.now() + 10_000; !messagesOn('/Things').some((text) => text.includes(`marker ${tag}`));) {
        if (Date.now() > deadline) throw new Error('the marker message did not arrive');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };

    test('one burst across entity sets: each topic gets the entities as a GET answers them; a deleted one is skipped, the others are not', async () => {
      await follow('/Observations', `/Datastreams(${chain.datastreamId})/Observations`, '/Things', `/Things(${chain.thingId})`, `/Things(${chain.thingId})/name`);
      // One atomicity group: its changes are announced together, after its commit, as one burst.
      const answer = await dataset.request('POST', '/$batch', {
        requests: [
          { id: 'o1', atomicityGroup: 'g', method: 'post', url: `Datastreams(${chain.datastreamId})/Observations`, body: { result: 1, FeatureOfInterest: feature('a') } },
          { id: 'gone', atomicityGroup: 'g', method: 'post', url: `Datastreams(${chain.datastreamId})/Observations`, body: { result: 2, FeatureOfInterest: feature('b') } },
          { id: 'thing', atomicityGroup: 'g', method: 'post', url: 'Things', body: { name: 'new in the burst', description: 'x' } },
          { id: 'rename', atomicityGroup: 'g', method: 'patch', url: `Things(${chain.thingId})`, body: { name: 'renamed in the burst' } },
          { id: 'o3', atomicityGroup: 'g', method: 'post', url: `Datastreams(${chain.datastreamId})/Observations`, body: { result: 3, FeatureOfInterest: feature('c') } },
          { id: 'delete', atomicityGroup: 'g', method: 'delete', url: '$gone' },
        ],
      });
      assert.equal(answer.statusCode, 200, answer.body);
      const responses = answer.json().responses as Array<{ id: string; status: number; location?: string; body?: Record<string, unknown> }>;
      assert.deepEqual(responses.map((r) => r.status), [201, 201, 201, 200, 201, 204], answer.body);
      const idOf = (id: string) => responses.find((r) => r.id === id)!.body!['@iot.id'] as number;
      await settle('burst');

      const observations = [await getText(`/Observations(${idOf('o1')})`), await getText(`/Observations(${idOf('o3')})`)];
      // Byte for byte what a GET answers, in the order of the writes; the deleted Observation is absent.
      assert.deepEqual(messagesOn('/Observations'), observations);
      assert.deepEqual(messagesOn(`/Datastreams(${chain.datastreamId})/Observations`), observations);
      const things = messagesOn('/Things').filter((text) => !text.includes('marker'));
      assert.deepEqual(things, [await getText(`/Things(${idOf('thing')})`), await getText(`/Things(${chain.thingId})`)]);
      assert.deepEqual(messagesOn(`/Things(${chain.thingId})`), [await getText(`/Things(${chain.thingId})`)]);
      assert.deepEqual(messagesOn(`/Things(${chain.thingId})/name`), [JSON.stringify({ name: 'renamed in the burst' })]);
    });

    test('more changes than one read takes (several chunks of ids): every one arrives, in order', async () => {
      const count = 1_200;
      const path = `/Datastreams(${chain.datastreamId})/Observations`;
      const before = messagesOn(path).length;
      const start = Date.parse('2030-01-01T00:00:00Z');
      const foi = (await dataset.request('GET', `/Observations?$top=1&$select=id&$expand=FeatureOfInterest($select=id)`)).json().value[0].FeatureOfInterest['@iot.id'];
      const created = await dataset.request('POST', '/CreateObservations', [{
        Datastream: { '@iot.id': chain.datastreamId }, components: ['phenomenonTime', 'result', 'FeatureOfInterest/id'],
        dataArray: Array.from({ length: count }, (_, n) => [new Date(start + n * 1000).toISOString(), 1000 + n, foi]),
      }]);
      assert.equal(created.statusCode, 201, created.body);
      await settle('chunks');
      const results = messagesOn(path).slice(before).map((text) => JSON.parse(text).result);
      assert.deepEqual(results, Array.from({ length: count }, (_, n) => 1000 + n));
      // The last of them, as a GET answers it.
      const lastId = JSON.parse(messagesOn(path).at(-1)!)['@iot.id'];
      assert.equal(messagesOn(path).at(-1), await getText(`/Observations(${lastId})`));
    });
  });
}
