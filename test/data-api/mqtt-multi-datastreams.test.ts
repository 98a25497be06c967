import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { grant, uniqueEmail } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { connect, mqttGateway, nextMessage, subscribeOne, topicOf } from './mqtt-helpers.js';
import { location, multiDatastream, thing } from '../sta/fixtures.js';

// SensorThings over MQTT for the MultiDatastream extension: `…/MultiDatastreams(n)/Observations`
// is a topic to subscribe to and to publish creates on, as `…/Datastreams(n)/Observations` is.
for (const kind of databaseKinds(import.meta.url)) {
  describe(`MQTT and MultiDatastreams (${kind})`, () => {
    let t: TestApp;
    let dataset: PublishedDataset;
    let gateway: { app: FastifyInstance; mqttUrl: string };
    let reader: MqttClient;
    let writer: MqttClient;
    let thingId: number;
    const topic = (path: string) => topicOf(dataset.datasetId, dataset.slug, path);

    before(async () => {
      t = await buildTestApp(kind);
      dataset = await publishStaDataset(t, { slug: 'wind' });
      gateway = await mqttGateway(t);
      const created = await dataset.request('POST', '/Things', thing('Mast', { Locations: [location('Mast site')] }));
      assert.equal(created.statusCode, 201, created.body);
      thingId = created.json()['@iot.id'];
      const scope = { scopeType: 'DATASET' as const, scopeId: dataset.datasetId };
      reader = await connect(gateway.mqttUrl, await grant(t, uniqueEmail('reader'), ['DATASET_PAYLOAD_READ'], scope));
      writer = await connect(gateway.mqttUrl, await grant(t, uniqueEmail('writer'), ['DATASET_PAYLOAD_WRITE'], scope));
    });
    after(async () => {
      await Promise.all([reader, writer].map((client) => client?.endAsync(true).catch(() => {})));
      await gateway.app.close();
      await t.close();
    });

    test('a new MultiDatastream reaches its Thing\'s topic; its Observations, by HTTP or by PUBLISH, reach its own', async () => {
      const ofThing = topic(`/Things(${thingId})/MultiDatastreams`);
      assert.equal(await subscribeOne(reader, ofThing), 0);
      const announced = nextMessage(reader, ofThing);
      const created = await dataset.request('POST', `/Things(${thingId})/MultiDatastreams`, multiDatastream('Mast wind'));
      assert.equal(created.statusCode, 201, created.body);
      const multiId = created.json()['@iot.id'];
      const message = await announced;
      assert.equal(message['@iot.id'], multiId);
      assert.deepEqual(message['multiObservationDataTypes'], multiDatastream().multiObservationDataTypes);

      const observations = topic(`/MultiDatastreams(${multiId})/Observations`);
      assert.equal(await subscribeOne(reader, observations), 0);
      const byHttp = nextMessage(reader, observations);
      const posted = await dataset.request('POST', `/MultiDatastreams(${multiId})/Observations`, { result: [5.5, 200] });
      assert.equal(posted.statusCode, 201, posted.body);
      assert.deepEqual((await byHttp)['result'], [5.5, 200]);
      assert.equal((await byHttp)['@iot.id'], posted.json()['@iot.id']);

      // A PUBLISH whose result does not fit is dropped (MQTT 3.1.1 cannot answer it); the next one is stored.
      const before = (await dataset.request('GET', `/MultiDatastreams(${multiId})/Observations?$count=true&$top=0`)).json()['@iot.count'];
      const byPublish = nextMessage(reader, observations);
      await writer.publishAsync(observations, JSON.stringify({ result: [1] }), { qos: 1 });
      await writer.publishAsync(observations, JSON.stringify({ result: [6, 210] }), { qos: 1 });
      const published = await byPublish;
      assert.deepEqual(published['result'], [6, 210]);
      assert.ok(Number.isInteger(published['@iot.id']), 'the stored entity, not the raw message');
      const read = await dataset.request('GET', `/Observations(${published['@iot.id']})/MultiDatastream`);
      assert.equal(read.json()['@iot.id'], multiId);
      assert.equal((await dataset.request('GET', `/MultiDatastreams(${multiId})/Observations?$count=true&$top=0`)).json()['@iot.count'], before + 1);
      assert.ok(writer.connected);
    });
  });
}
