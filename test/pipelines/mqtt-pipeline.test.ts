import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { pipelineDataset, release, releasedDataSource, unrelease } from '../helpers/pipelines.js';
import { missing, requireMosquitto } from '../helpers/requirements.js';
import { connect, mqttGateway, nextMessage, subscribeOne, topicOf } from '../data-api/mqtt-helpers.js';
import type { FastifyInstance } from 'fastify';
import { mosquittoMissing, startMosquitto } from '../ingest/mosquitto.js';
import { freePort } from '../faults/harness.js';

/**
 * Issue 17: an MQTT topic of the machine's Mosquitto fills an STA API through the runtime. Each
 * message becomes an Observation that the data API's own MQTT subscribers receive; a payload that
 * is not JSON lands in the rejections; the same message published twice is stored once; an
 * unreleased dataset stores nothing of what is published meanwhile, also after a new release.
 */

const BROKER = 'mqtt://127.0.0.1:1883';
const mosquitto = await requireMosquitto();

const MAPPING = {
  fields: {
    'Datastream.name': '$substringAfter($topic, "/air/") & "-pm10"',
    result: 'pm10',
    phenomenonTime: 'time',
    FeatureOfInterest: '{"name": $substringAfter($topic, "/air/"), "feature": {"type": "Point", "coordinates": [8.4, 49]}}',
  },
};

for (const kind of databaseKinds(import.meta.url)) {
  describe(`MQTT sources at run time (${kind})`, { skip: missing(mosquitto) }, () => {
    let t: TestApp;
    let publisher: MqttClient;
    let gateway: { app: FastifyInstance; mqttUrl: string };
    const prefix = `pipeline-test-${randomBytes(4).toString('hex')}`;
    before(async () => {
      t = await buildTestApp(kind, { PIPELINE_RECONCILE_MS: '200' });
      publisher = await mqtt.connectAsync(BROKER, { protocolVersion: 4 });
      gateway = await mqttGateway(t);
    });
    after(async () => {
      await publisher?.endAsync();
      await gateway?.app.close();
      await t?.close();
    });
    const publish = (station: string, body: string) => publisher.publishAsync(`${prefix}/air/${station}`, body, { qos: 1 });

    it('stores each message as an Observation that reaches the data API\'s MQTT subscribers; rejects what is not JSON; stores a repeat once', async () => {
      const source = await releasedDataSource(t, 'MQTT', { urls: [BROKER], topics: [`${prefix}/air/+`], qos: 1 });
      const dataset = await pipelineDataset(t, { dataSourceIds: [source.id], mapping: MAPPING });
      await dataset.statusUntil((s) => s?.state === 'RUNNING', 'the pipeline to subscribe');

      const subscriber = await connect(gateway.mqttUrl, t.adminToken);
      const topic = topicOf(dataset.datasetId, dataset.slug, '/Observations');
      assert.equal(await subscribeOne(subscriber, topic), 0);
      const received = nextMessage(subscriber, topic);
      await publish('marktplatz', JSON.stringify({ pm10: 17.5, time: '2026-11-25T10:00:00Z' }));
      const announced = await received;
      assert.equal(announced.result, 17.5);
      assert.equal(announced.phenomenonTime, '2026-11-25T10:00:00.000Z');
      await subscriber.endAsync();

      await publish('marktplatz', 'not json');
      await publish('marktplatz', JSON.stringify([{ pm10: 18, time: '2026-11-25T10:01:00Z' }, { pm10: 18, time: '2026-11-25T10:01:00Z' }]));
      await publish('marktplatz', JSON.stringify({ pm10: 18, time: '2026-11-25T10:01:00Z' }));
      const status = await dataset.statusUntil((s) => s?.received === 5, 'five records');
      assert.deepEqual([status!.written, status!.rejected, status!.skipped], [2, 1, 2]);
      const [rejection] = await dataset.rejections();
      assert.equal(rejection.record, 'not json');
      assert.equal(rejection.field, null);

      const observations = await dataset.request('GET', '/Observations?$orderby=phenomenonTime&$expand=Datastream($select=name)');
      assert.deepEqual(observations.json().value.map((o: any) => [o.result, o.Datastream.name]), [[17.5, 'marktplatz-pm10'], [18, 'marktplatz-pm10']]);
    });

    it('unrelease ends the subscription: what is published while the dataset is not AVAILABLE is not stored', async () => {
      const source = await releasedDataSource(t, 'MQTT', { urls: [BROKER], topics: [`${prefix}/air/+`], qos: 1 });
      const dataset = await pipelineDataset(t, { dataSourceIds: [source.id], mapping: MAPPING });
      await dataset.statusUntil((s) => s?.state === 'RUNNING', 'the pipeline to subscribe');
      await publish('rathaus', JSON.stringify({ pm10: 1, time: '2026-11-25T11:00:00Z' }));
      await dataset.statusUntil((s) => s?.written === 1, 'the first message');

      await unrelease(t, dataset.datasetId);
      // Stopped at the runtime's next pass (every 200 ms here).
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await publish('rathaus', JSON.stringify({ pm10: 2, time: '2026-11-25T11:01:00Z' }));
      await release(t, dataset.datasetId);
      await dataset.statusUntil((s) => s?.state === 'RUNNING', 'the pipeline to run again');
      await publish('rathaus', JSON.stringify({ pm10: 3, time: '2026-11-25T11:02:00Z' }));
      await dataset.statusUntil((s) => s?.written === 1, 'the message after the new release');

      const observations = await dataset.request('GET', '/Observations?$orderby=phenomenonTime');
      assert.deepEqual(observations.json().value.map((o: any) => o.result), [1, 3], 'the message published while unreleased is not stored');
    });
  });
}

describe('a broker that goes away and comes back (pglite)', { skip: mosquittoMissing }, () => {
  let t: TestApp;
  before(async () => { t = await buildTestApp('pglite', { PIPELINE_RECONCILE_MS: '200' }); });
  after(() => t?.close());

  it('shows RETRYING naming the broker while it is away, RUNNING again once it is back, and goes on storing', async () => {
    const port = await freePort();
    let broker = await startMosquitto(port);
    try {
      const source = await releasedDataSource(t, 'MQTT', { urls: [broker.url], topics: ['away/#'], qos: 1 });
      const dataset = await pipelineDataset(t, { dataSourceIds: [source.id], mapping: MAPPING });
      await dataset.statusUntil((s) => s?.state === 'RUNNING', 'the pipeline to subscribe');
      const send = async (pm10: number, time: string) => {
        const client = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
        await client.publishAsync('away/air/bahnhof', JSON.stringify({ pm10, time }), { qos: 1 });
        await client.endAsync();
      };
      await send(5, '2026-11-25T12:00:00Z');
      await dataset.statusUntil((s) => s?.written === 1, 'the first message');

      await broker.stop();
      const away = await dataset.statusUntil((s) => s?.state === 'RETRYING', 'RETRYING while the broker is away', 20_000);
      assert.equal(away!.source, 'CONNECTOR');
      assert.match(away!.message, new RegExp(`127\\.0\\.0\\.1:${port}`));

      broker = await startMosquitto(port);
      await dataset.statusUntil((s) => s?.state === 'RUNNING', 'RUNNING once the broker is back', 60_000);
      await send(6, '2026-11-25T12:01:00Z');
      await dataset.statusUntil((s) => s?.written === 2, 'a message after the broker came back');
    } finally {
      await broker.stop();
    }
  });
});
