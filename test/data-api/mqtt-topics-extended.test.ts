import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { eventually, freePort, startDataApiBeside, type ChildServer } from '../faults/harness.js';
import { connect, mqttGateway, subscribeOne, topicOf } from './mqtt-helpers.js';
import { createSensorChain, feature, WEATHER_STATION } from './mqtt-fixtures.js';

// SensorThings over MQTT beyond plain resource topics (OGC 18-088 §14.2): `$select` topics,
// property topics that speak only when the value changed, and the announcement of every entity a
// single request creates (deep inserts, generated FeaturesOfInterest, CreateObservations, $batch):
// each exactly once, on every process.

type Json = Record<string, any>;

/** Every message a client receives, by topic, parsed. */
function recorder(client: MqttClient) {
  const byTopic = new Map<string, Json[]>();
  client.on('message', (topic, payload) => {
    byTopic.set(topic, [...(byTopic.get(topic) ?? []), JSON.parse(payload.toString('utf8'))]);
  });
  return {
    on: (topic: string) => byTopic.get(topic) ?? [],
    clear: () => byTopic.clear(),
  };
}

const location = (name: string, x = 7.1) => ({ name, description: `at ${name}`, encodingType: 'application/geo+json', location: { type: 'Point', coordinates: [x, 50.7] } });

/** The station with Locations and Observations inline too: a deep insert creating eight kinds of entity. */
const deepStation = (name: string) => ({
  ...WEATHER_STATION, name,
  Locations: [location(`${name} site`)],
  Datastreams: [{ ...WEATHER_STATION.Datastreams[0], Observations: [{ result: 1 }, { result: 2 }] }],
});

const SETS = ['Things', 'Locations', 'HistoricalLocations', 'Datastreams', 'Sensors', 'ObservedProperties', 'Observations', 'FeaturesOfInterest'];

/** The ids of every entity the deep insert of `deepStation` created, by entity set, read back over HTTP. */
async function createdByDeepInsert(dataset: PublishedDataset, thingId: number): Promise<Record<string, number[]>> {
  const read = await dataset.request('GET', `/Things(${thingId})?$expand=Locations,HistoricalLocations,Datastreams($expand=Sensor,ObservedProperty,Observations($expand=FeatureOfInterest))`);
  assert.equal(read.statusCode, 200, read.body);
  const thing = read.json();
  const streams: Json[] = thing.Datastreams;
  const observations: Json[] = streams.flatMap((d) => d.Observations);
  const ids = (items: Json[]) => [...new Set(items.map((item) => item['@iot.id'] as number))].sort((a, b) => a - b);
  return {
    Things: [thingId], Locations: ids(thing.Locations), HistoricalLocations: ids(thing.HistoricalLocations), Datastreams: ids(streams),
    Sensors: ids(streams.map((d) => d.Sensor)), ObservedProperties: ids(streams.map((d) => d.ObservedProperty)),
    Observations: ids(observations), FeaturesOfInterest: ids(observations.map((o) => o.FeatureOfInterest)),
  };
}

/** The ids announced on a topic, sorted, repeats kept (so that a duplicate shows). */
const announced = (messages: Json[]) => messages.map((message) => message['@iot.id'] as number).sort((a, b) => a - b);

for (const kind of databaseKinds(import.meta.url)) {
  describe(`MQTT topics: $select, property changes, every created entity once (${kind})`, () => {
    let t: TestApp;
    let dataset: PublishedDataset;
    let gateway: { app: FastifyInstance; mqttUrl: string };
    let chain: { thingId: number; datastreamId: number };
    let client: MqttClient;
    let seen: ReturnType<typeof recorder>;
    const topic = (path: string) => topicOf(dataset.datasetId, dataset.slug, path);
    const markers = () => topic('/Sensors');

    /** Waits until everything announced before now has arrived: a Sensor created after it is (one notifier, in order). */
    async function settle() {
      const name = `marker ${Math.random()}`;
      const created = await dataset.request('POST', '/Sensors', { name, description: 'm', encodingType: 'application/pdf', metadata: 'https://example.org/m.pdf' });
      assert.equal(created.statusCode, 201, created.body);
      await eventually('the marker to arrive', 10_000, () => seen.on(markers()).some((message) => message['name'] === name) || undefined);
    }

    before(async () => {
      t = await buildTestApp(kind);
      dataset = await publishStaDataset(t, { slug: 'topics' });
      gateway = await mqttGateway(t);
      chain = await createSensorChain(dataset);
      client = await connect(gateway.mqttUrl, t.adminToken);
      seen = recorder(client);
      assert.equal(await subscribeOne(client, markers()), 0);
    });
    after(async () => {
      await client.endAsync(true).catch(() => {});
      await gateway.app.close();
      await t.close();
    });

    test('$select topics deliver only the properties named, on entity sets, entities and navigation collections', async () => {
      const selectTopics = {
        set: topic('/Things?$select=name,description'),
        alias: topic('/v1.1/Things?$select=id,Datastreams'),
        entity: topic(`/Things(${chain.thingId})?$select=properties`),
        observations: topic(`/Datastreams(${chain.datastreamId})/Observations?$select=result,phenomenonTime`),
      };
      for (const selectTopic of Object.values(selectTopics)) assert.equal(await subscribeOne(client, selectTopic), 0, selectTopic);
      assert.equal(await subscribeOne(client, topic('/Things')), 0);
      // What names nothing of the entity set, or another option, is refused.
      for (const refused of ['/Things?$select=colour', '/Things?$filter=id%20eq%201', `/Things(${chain.thingId})/name?$select=name`, '/Things?$select=name&$top=1']) {
        assert.equal(await subscribeOne(client, topic(refused)), 128, refused);
      }
      seen.clear();
      const created = await dataset.request('POST', '/Things', { name: 'selected', description: 'only these two', properties: { hidden: true } });
      assert.equal(created.statusCode, 201, created.body);
      const thingId = created.json()['@iot.id'];
      await dataset.request('PATCH', `/Things(${chain.thingId})`, { properties: { floor: 3 } });
      const observation = await dataset.request('POST', `/Datastreams(${chain.datastreamId})/Observations`, { result: 4.5, phenomenonTime: '2024-02-01T00:00:00Z', FeatureOfInterest: feature('sel') });
      assert.equal(observation.statusCode, 201, observation.body);
      await settle();

      const full = seen.on(topic('/Things')).find((message) => message['@iot.id'] === thingId)!;
      assert.equal(full.properties.hidden, true, 'the plain topic keeps the whole entity');
      assert.deepEqual(seen.on(selectTopics.set).find((message) => message['name'] === 'selected'), { name: 'selected', description: 'only these two' });
      assert.deepEqual(seen.on(selectTopics.alias).find((message) => message['@iot.id'] === thingId),
        { '@iot.id': thingId, 'Datastreams@iot.navigationLink': `${dataset.publicBase}/Things(${thingId})/Datastreams` });
      assert.deepEqual(seen.on(selectTopics.entity), [{ properties: { floor: 3 } }]);
      assert.deepEqual(seen.on(selectTopics.observations), [{ phenomenonTime: '2024-02-01T00:00:00.000Z', result: 4.5 }]);
      // Each $select topic got each change once.
      assert.equal(seen.on(selectTopics.set).length, seen.on(topic('/Things')).length);

      // A publish to a $select topic creates nothing; the connection stays.
      await client.publishAsync(topic('/Things?$select=name'), JSON.stringify({ name: 'published to a select topic', description: 'x' }), { qos: 1 });
      await settle();
      const made = await dataset.request('GET', "/Things?$filter=name eq 'published to a select topic'&$count=true");
      assert.equal(made.json()['@iot.count'], 0);
      assert.ok(client.connected);
    });

    test('a property topic speaks only when that property\'s stored value changed, with the property as the message', async () => {
      const thing = await dataset.request('POST', '/Things', { name: 'steady', description: 'first' });
      const thingId = thing.json()['@iot.id'];
      const name = topic(`/Things(${thingId})/name`);
      const description = topic(`/v1.1/Things(${thingId})/description`);
      assert.equal(await subscribeOne(client, name), 0);
      assert.equal(await subscribeOne(client, description), 0);
      // The Thing's create may still be on its way to the new subscriptions (a loaded machine): let it
      // arrive before counting.
      await settle();
      seen.clear();
      // The name written again unchanged, the description changed.
      assert.equal((await dataset.request('PATCH', `/Things(${thingId})`, { name: 'steady', description: 'second' })).statusCode, 200);
      // A PUT of the same values changes nothing; an empty PATCH neither.
      assert.equal((await dataset.request('PUT', `/Things(${thingId})`, { name: 'steady', description: 'second' })).statusCode, 200);
      assert.equal((await dataset.request('PATCH', `/Things(${thingId})`, {})).statusCode, 200);
      // A Datastream linked to it changes a link, none of its properties.
      const spare = await createSensorChain(dataset);
      assert.equal((await dataset.request('PATCH', `/Things(${thingId})`, { Datastreams: [{ '@iot.id': spare.datastreamId }] })).statusCode, 200);
      assert.equal((await dataset.request('PATCH', `/Things(${thingId})`, { name: 'moved' })).statusCode, 200);
      await settle();
      assert.deepEqual(seen.on(description), [{ description: 'second' }]);
      assert.deepEqual(seen.on(name), [{ name: 'moved' }]);
    });

    test('a deep insert announces every entity it created once, on its entity set; a later Location on its Thing\'s topics', async () => {
      for (const set of SETS) assert.equal(await subscribeOne(client, topic(`/${set}`)), 0);
      seen.clear();
      const created = await dataset.request('POST', '/Things', deepStation('deep'));
      assert.equal(created.statusCode, 201, created.body);
      const thingId = created.json()['@iot.id'];
      await settle();
      const expected = await createdByDeepInsert(dataset, thingId);
      assert.equal(expected['FeaturesOfInterest']!.length, 1, 'the FeatureOfInterest generated from the Location');
      for (const set of SETS) {
        const messages = seen.on(topic(`/${set}`)).filter((message) => set !== 'Sensors' || !String(message['name']).startsWith('marker'));
        assert.deepEqual(announced(messages), expected[set], set);
      }

      // A new Location of the Thing: the Location, a HistoricalLocation, each on the Thing's collections too.
      const historical = topic(`/Things(${thingId})/HistoricalLocations`);
      const locations = topic(`/Things(${thingId})/Locations`);
      assert.equal(await subscribeOne(client, historical), 0);
      assert.equal(await subscribeOne(client, locations), 0);
      seen.clear();
      assert.equal((await dataset.request('POST', `/Things(${thingId})/Locations`, location('moved', 7.3))).statusCode, 201);
      await settle();
      assert.equal(seen.on(topic('/Locations')).length, 1);
      assert.equal(seen.on(topic('/HistoricalLocations')).length, 1);
      assert.deepEqual(announced(seen.on(historical)), announced(seen.on(topic('/HistoricalLocations'))));
    });

    test('generated FeaturesOfInterest, CreateObservations rows and $batch creates (JSON and multipart) are each announced once', async () => {
      const inDatastream = topic(`/Datastreams(${chain.datastreamId})/Observations`);
      for (const path of ['/Things', '/Observations', '/FeaturesOfInterest']) assert.equal(await subscribeOne(client, topic(path)), 0);
      assert.equal(await subscribeOne(client, inDatastream), 0);
      // The chain's Thing gets a Location, so that an Observation without a FeatureOfInterest has one generated.
      assert.equal((await dataset.request('POST', `/Things(${chain.thingId})/Locations`, location('chain site', 7.4))).statusCode, 201);
      seen.clear();
      const single = await dataset.request('POST', inDatastream.slice(inDatastream.indexOf('/Datastreams')), { result: 9 });
      assert.equal(single.statusCode, 201, single.body);
      const rows = await dataset.request('POST', '/CreateObservations', [{
        Datastream: { '@iot.id': chain.datastreamId }, components: ['phenomenonTime', 'result'],
        dataArray: [['2024-05-01T10:00:00Z', 1], ['2024-05-01T10:10:00Z', 2], ['2024-05-01T10:20:00Z', 3]],
      }]);
      assert.equal(rows.statusCode, 201, rows.body);
      const json = await dataset.request('POST', '/$batch', { requests: [
        { id: 'a', method: 'post', url: 'Things', body: { name: 'batch a', description: 'x' } },
        { id: 'b', atomicityGroup: 'g', method: 'post', url: 'Things', body: { name: 'batch b', description: 'x' } },
        { id: 'c', atomicityGroup: 'g', method: 'post', url: `Datastreams(${chain.datastreamId})/Observations`, body: { result: 10 } },
      ] });
      assert.equal(json.statusCode, 200, json.body);
      const part = (request: string, id: string) => `Content-Type: application/http\r\nContent-ID: ${id}\r\n\r\n${request}`;
      const multipart = await dataset.request('POST', '/$batch', [
        '--b', 'Content-Type: multipart/mixed; boundary=cs', '',
        '--cs', part('POST Things HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"name":"multipart a","description":"x"}', '1'),
        '--cs', part('POST $1/Locations HTTP/1.1\r\nContent-Type: application/json\r\n\r\n' + JSON.stringify(location('multipart site', 7.5)), '2'),
        '--cs--', '--b--', '',
      ].join('\r\n'), { 'content-type': 'multipart/mixed; boundary=b' });
      assert.equal(multipart.statusCode, 200, multipart.body);
      await settle();

      const observations = announced(seen.on(topic('/Observations')));
      assert.equal(observations.length, 5, JSON.stringify(observations));
      assert.equal(new Set(observations).size, 5, 'no Observation twice');
      assert.deepEqual(announced(seen.on(inDatastream)), observations);
      const expectedObservations = [single.json()['@iot.id'], ...rows.json().map((link: string) => Number(/\((\d+)\)$/.exec(link)![1])),
        json.json().responses[2].body['@iot.id']].sort((a, b) => a - b);
      assert.deepEqual(observations, expectedObservations);
      // All of them share the FeatureOfInterest generated once from the chain's Location.
      const features = announced(seen.on(topic('/FeaturesOfInterest')));
      const foi = (await dataset.request('GET', `/Observations(${single.json()['@iot.id']})/FeatureOfInterest`)).json()['@iot.id'];
      assert.deepEqual(features, [foi]);
      const things = seen.on(topic('/Things')).map((message) => message['name']).sort();
      assert.deepEqual(things, ['batch a', 'batch b', 'multipart a']);
    });
  });
}

// Two gateway processes on one PostgreSQL: each subscriber, on either, gets each created entity once.
describe('MQTT: every created entity once on each process (postgres)', { skip: !process.env['TEST_DATABASE_URL'] && 'needs TEST_DATABASE_URL' }, () => {
  let t: TestApp;
  let other: ChildServer;
  let dataset: PublishedDataset;
  let gateway: { app: FastifyInstance; mqttUrl: string };
  const clients: MqttClient[] = [];

  before(async () => {
    t = await buildTestApp('postgres');
    dataset = await publishStaDataset(t, { slug: 'replicas' });
    const mqttPort = await freePort();
    ({ server: other } = await startDataApiBeside(t, { MQTT_PORT: String(mqttPort) }));
    gateway = await mqttGateway(t);
    clients.push(await connect(gateway.mqttUrl, t.adminToken), await connect(`mqtt://127.0.0.1:${mqttPort}`, t.adminToken));
  });
  after(async () => {
    await Promise.all(clients.map((client) => client.endAsync(true).catch(() => {})));
    await gateway?.app.close();
    await other?.kill('SIGTERM');
    await t.close();
  });

  test('a deep insert through one process: both processes\' subscribers get each created entity exactly once', async () => {
    const topic = (path: string) => topicOf(dataset.datasetId, dataset.slug, path);
    const records = clients.map(recorder);
    for (const client of clients) for (const set of SETS) assert.equal(await subscribeOne(client, topic(`/${set}`)), 0);
    const created = await dataset.request('POST', '/Things', deepStation('replicated'));
    assert.equal(created.statusCode, 201, created.body);
    const expected = await createdByDeepInsert(dataset, created.json()['@iot.id']);
    const marker = await dataset.request('POST', '/Things', { name: 'replica marker', description: 'last' });
    assert.equal(marker.statusCode, 201);
    for (const [k, record] of records.entries()) {
      await eventually(`the marker on process ${k}`, 10_000, () => record.on(topic('/Things')).some((message) => message['name'] === 'replica marker') || undefined);
      // What reached /Things and /Sensors last of their sets is not the last word for the others: wait for the Observations too.
      await eventually(`the Observations on process ${k}`, 10_000, () => record.on(topic('/Observations')).length >= 2 || undefined);
      for (const set of SETS) {
        const messages = record.on(topic(`/${set}`)).filter((message) => message['name'] !== 'replica marker');
        assert.deepEqual(announced(messages), expected[set], `${set} on process ${k}`);
      }
    }
  });
});
