import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectFieldError } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { datastream, location, point, sensor, thing } from './fixtures.js';

/**
 * HistoricalLocations written directly, a Location's deletion and its history, updates that carry
 * related entities, and the service root's conformance: through the data API gateway.
 */

type Json = Record<string, any>;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`SensorThings HistoricalLocations and updates with related entities (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    const post = async (path: string, body: unknown) => {
      const created = await sta.request('POST', path, body);
      assert.equal(created.statusCode, 201, created.body);
      return created.json()['@iot.id'] as number;
    };
    const names = async (path: string) => ((await sta.request('GET', `${path}?$orderby=id`)).json().value as Json[]).map((e) => e['name']);
    const historyCount = async (thingId: number) =>
      (await sta.request('GET', `/Things(${thingId})/HistoricalLocations?$count=true&$top=0`)).json()['@iot.count'] as number;

    before(async () => {
      t = await buildTestApp(kind);
      sta = await publishStaDataset(t);
    });
    after(() => t.close());

    test('a newer HistoricalLocation moves its Thing to its Locations; an older one only fills in the past', async () => {
      const thingId = await post('/Things', thing('Mover', { Locations: [location('Depot')] }));
      const quay = await post('/Locations', location('Quay', point(8.7, 50.1)));
      const yard = await post('/Locations', location('Yard', point(8.8, 50.2)));
      const before = await historyCount(thingId);
      // Newer than the one the create recorded (now): the Thing is at the Quay from then on.
      const newer = await sta.request('POST', '/HistoricalLocations', {
        time: '2999-01-01T00:00:00Z', Thing: { '@iot.id': thingId }, Locations: [{ '@iot.id': quay }],
      });
      assert.equal(newer.statusCode, 201, newer.body);
      assert.deepEqual(await names(`/Things(${thingId})/Locations`), ['Quay']);
      assert.deepEqual(await names(`/HistoricalLocations(${newer.json()['@iot.id']})/Locations`), ['Quay']);
      // Older than the newest: history only, the Thing stays at the Quay.
      await post(`/Things(${thingId})/HistoricalLocations`, { time: '2001-01-01T00:00:00Z', Locations: [{ '@iot.id': yard }] });
      assert.deepEqual(await names(`/Things(${thingId})/Locations`), ['Quay']);
      assert.equal(await historyCount(thingId), before + 2, 'no HistoricalLocation is recorded for the move itself');
      // The same time as the newest counts as newer.
      await post('/HistoricalLocations', { time: '2999-01-01T00:00:00Z', Thing: { '@iot.id': thingId }, Locations: [{ '@iot.id': yard }, { '@iot.id': quay }] });
      assert.deepEqual(await names(`/Things(${thingId})/Locations`), ['Quay', 'Yard']);
      // Without Locations it moves nothing.
      await post('/HistoricalLocations', { time: '3000-01-01T00:00:00Z', Thing: { '@iot.id': thingId } });
      assert.deepEqual(await names(`/Things(${thingId})/Locations`), ['Quay', 'Yard']);
    });

    test('deleting a Location removes the HistoricalLocations it leaves without any Location', async () => {
      const thingId = await post('/Things', thing('Wanderer', { Locations: [location('Old site')] }));
      const oldSite = (await sta.request('GET', `/Things(${thingId})/Locations`)).json().value[0]['@iot.id'];
      const other = await post('/Locations', location('Other site'));
      const alone = await post('/HistoricalLocations', { time: '2010-01-01T00:00:00Z', Thing: { '@iot.id': thingId }, Locations: [{ '@iot.id': oldSite }] });
      const shared = await post('/HistoricalLocations', { time: '2011-01-01T00:00:00Z', Thing: { '@iot.id': thingId }, Locations: [{ '@iot.id': oldSite }, { '@iot.id': other }] });
      const bare = await post('/HistoricalLocations', { time: '2012-01-01T00:00:00Z', Thing: { '@iot.id': thingId } });
      const fromCreate = (await sta.request('GET', `/Locations(${oldSite})/HistoricalLocations`)).json().value.map((h: Json) => h['@iot.id']);
      assert.equal((await sta.request('DELETE', `/Locations(${oldSite})`)).statusCode, 204);
      for (const id of fromCreate.filter((id: number) => id !== shared)) {
        assert.equal((await sta.request('GET', `/HistoricalLocations(${id})`)).statusCode, 404, `HistoricalLocation ${id} named only the deleted Location`);
      }
      assert.equal((await sta.request('GET', `/HistoricalLocations(${alone})`)).statusCode, 404);
      assert.deepEqual(await names(`/HistoricalLocations(${shared})/Locations`), ['Other site']);
      // One that never named the Location is not touched.
      assert.equal((await sta.request('GET', `/HistoricalLocations(${bare})`)).statusCode, 200);
    });

    test('an update carrying a new related entity inline is a 400 naming it; a link by @iot.id works', async () => {
      const thingId = await post('/Things', thing('Patched', { Datastreams: [datastream('Patched stream')] }));
      const streamId = (await sta.request('GET', `/Things(${thingId})/Datastreams`)).json().value[0]['@iot.id'];
      const sensorsBefore = (await sta.request('GET', '/Sensors?$count=true&$top=0')).json()['@iot.count'];
      const inlineOne = expectFieldError(await sta.request('PATCH', `/Datastreams(${streamId})`, { Sensor: sensor('Brand new') }), 'Sensor');
      assert.match(inlineOne.detail, /@iot\.id/);
      expectFieldError(await sta.request('PATCH', `/Things(${thingId})`, { Locations: [location('Inline site')] }), 'Locations[0]');
      expectFieldError(await sta.request('PUT', `/Things(${thingId})`, { ...thing('Patched'), Locations: [location('Inline site')] }), 'Locations[0]');
      assert.equal((await sta.request('GET', '/Sensors?$count=true&$top=0')).json()['@iot.count'], sensorsBefore);
      assert.deepEqual(await names(`/Things(${thingId})/Locations`), []);
      const sensorId = await post('/Sensors', sensor('Replacement'));
      const linked = await sta.request('PATCH', `/Datastreams(${streamId})`, { Sensor: { '@iot.id': sensorId } });
      assert.equal(linked.statusCode, 200, linked.body);
      assert.equal((await sta.request('GET', `/Datastreams(${streamId})/Sensor`)).json()['@iot.id'], sensorId);
      const siteId = await post('/Locations', location('Linked site'));
      assert.equal((await sta.request('PATCH', `/Things(${thingId})`, { Locations: [{ '@iot.id': siteId }] })).statusCode, 200);
      assert.deepEqual(await names(`/Things(${thingId})/Locations`), ['Linked site']);
    });

    test('the service root lists the conformance classes as 18-088 spells them, with the broker endpoints', async () => {
      const root = (await sta.request('GET', '')).json();
      const spec = 'http://www.opengis.net/spec/iot_sensing/1.1/req/';
      assert.deepEqual(root.serverSettings.conformance, [
        `${spec}datamodel`, `${spec}resource-path/resource-path-to-entities`, `${spec}request-data`, `${spec}create-update-delete`,
        `${spec}batch-request/batch-request`, `${spec}data-array/data-array`,
        `${spec}create-observations-via-mqtt/observations-creation`, `${spec}receive-updates-via-mqtt/receive-updates`,
        `${spec}multi-datastream`,
      ]);
      const dataApi = new URL(t.ctx.config.dataApi.baseUrl);
      const endpoints = [`mqtt://${dataApi.hostname}:${t.ctx.config.mqtt.port}`, `ws://${dataApi.host}/mqtt`];
      assert.deepEqual(root.serverSettings[`${spec}create-observations-via-mqtt/observations-creation`], { endpoints });
      assert.deepEqual(root.serverSettings[`${spec}receive-updates-via-mqtt/receive-updates`], { endpoints });
    });
  });

  describe(`SensorThings service root with MQTT_PORT=off and an https DATA_API_URL (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    before(async () => {
      t = await buildTestApp(kind, { MQTT_PORT: 'off', DATA_API_URL: 'https://data.example.org/city' });
      sta = await publishStaDataset(t);
    });
    after(() => t.close());

    test('only the WebSocket endpoint is listed, as wss below the public base', async () => {
      const settings = (await sta.request('GET', '')).json().serverSettings;
      const key = 'http://www.opengis.net/spec/iot_sensing/1.1/req/receive-updates-via-mqtt/receive-updates';
      assert.deepEqual(settings[key], { endpoints: ['wss://data.example.org/city/mqtt'] });
    });
  });
}
