import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { pipelineDataset, releasedDataSource, type PipelineDataset } from '../helpers/pipelines.js';

/**
 * Issue 33 item 4: `Datastream.Thing.Location` in a pipeline's mapping. A Thing the pipeline creates
 * on first sight gets that Location (linked, with its HistoricalLocation, as `POST Things` with
 * `Locations` does), so records that map no FeatureOfInterest get one generated from it, from the
 * first batch on. A Location that is no GeoJSON rejects its record naming the field; a Thing that
 * already exists keeps its own Locations (here: none, so its records are rejected as before).
 */

type Json = Record<string, any>;

const MAPPING = {
  fields: {
    'Datastream.name': '"noise-" & station',
    'Datastream.Thing.name': 'station',
    'Datastream.Thing.Location': 'place',
    result: 'value',
    phenomenonTime: 'time',
  },
};

const point = (lon: number, lat: number) => ({ type: 'Point', coordinates: [lon, lat] });
const NORTH = point(8.4037, 49.0094);
const SOUTH = point(8.3946, 48.9937);

for (const kind of databaseKinds(import.meta.url)) {
  describe(`Datastream.Thing.Location from a pipeline's mapping (${kind})`, () => {
    let t: TestApp;
    let server: http.Server;
    let url = '';
    /** What each feed (by path: one per test) answers; the ETag makes an unchanged answer a 304, so each record is read once. */
    const feeds = new Map<string, Json[]>();
    before(async () => {
      t = await buildTestApp(kind, { PIPELINE_RECONCILE_MS: '200' });
      server = http.createServer((request, response) => {
        const body = JSON.stringify({ data: feeds.get(request.url!) ?? [] });
        const etag = `"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`;
        if (request.headers['if-none-match'] === etag) {
          response.writeHead(304).end();
          return;
        }
        response.writeHead(200, { 'content-type': 'application/json', etag }).end(body);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    after(async () => {
      await t?.close();
      server?.closeAllConnections();
      await new Promise((resolve) => server?.close(resolve));
    });

    const get = async (dataset: PipelineDataset, path: string): Promise<Json[]> => {
      const response = await dataset.request('GET', path);
      assert.equal(response.statusCode, 200, response.body);
      return response.json().value;
    };

    it('creates the Thing with its Location, derives every FeatureOfInterest from it, and rejects a bad Location or a Thing without one', async () => {
      const source = await releasedDataSource(t, 'HTTP', { url: `${url}/created`, interval: '1s', records_pointer: '/data' });
      const dataset = await pipelineDataset(t, { dataSourceIds: [source.id], mapping: MAPPING });
      await dataset.statusUntil((s) => s?.state === 'RUNNING', 'the pipeline to run');
      // A Thing the API already has, without a Location: the mapping's Location does not move it.
      const bare = await dataset.request('POST', '/Things', { name: 'bare', description: 'no Location' });
      assert.equal(bare.statusCode, 201, bare.body);

      feeds.set('/created', [
        { station: 'north', time: '2026-06-01T10:00:00Z', value: 41.5, place: NORTH },
        { station: 'north', time: '2026-06-01T10:05:00Z', value: 43, place: NORTH },
        { station: 'south', time: '2026-06-01T10:00:00Z', value: 38, place: SOUTH },
        { station: 'west', time: '2026-06-01T10:00:00Z', value: 40, place: '8.38,49.01' },
        { station: 'bare', time: '2026-06-01T10:00:00Z', value: 50, place: point(8.41, 49.02) },
        { station: 'nowhere', time: '2026-06-01T10:00:00Z', value: 35 },
      ]);
      const status = await dataset.statusUntil((s) => (s?.written ?? 0) + (s?.rejected ?? 0) >= 6, 'the batch to be written or rejected');
      assert.deepEqual([status!.written, status!.rejected], [3, 3], JSON.stringify(status));

      const things = await get(dataset, '/Things?$orderby=name&$expand=Locations,HistoricalLocations($expand=Locations)');
      const byName = new Map(things.map((thing) => [thing.name, thing]));
      assert.deepEqual([...byName.keys()], ['bare', 'north', 'nowhere', 'south'], 'the record with a bad Location created nothing');
      const north = byName.get('north')!;
      assert.equal(north.Locations.length, 1);
      assert.deepEqual(
        [north.Locations[0].name, north.Locations[0].description, north.Locations[0].encodingType, north.Locations[0].location],
        ['north', 'Created by a pipeline', 'application/geo+json', NORTH],
      );
      assert.equal(north.HistoricalLocations.length, 1, 'placed as POST Things with Locations places it');
      assert.equal(north.HistoricalLocations[0].Locations[0]['@iot.id'], north.Locations[0]['@iot.id']);
      assert.deepEqual(byName.get('south')!.Locations.map((l: Json) => l.location), [SOUTH]);
      assert.deepEqual(byName.get('bare')!.Locations, [], 'a Thing that exists keeps its own Locations');
      assert.deepEqual(byName.get('nowhere')!.Locations, []);

      const observations = await get(dataset, '/Observations?$orderby=phenomenonTime,result&$expand=FeatureOfInterest,Datastream($select=name)');
      assert.deepEqual(observations.map((o) => [o.Datastream.name, o.result, o.FeatureOfInterest.feature]), [
        ['noise-south', 38, SOUTH],
        ['noise-north', 41.5, NORTH],
        ['noise-north', 43, NORTH],
      ]);
      assert.equal(observations[1].FeatureOfInterest['@iot.id'], observations[2].FeatureOfInterest['@iot.id'], 'one FeatureOfInterest per Location');
      assert.equal(observations[1].FeatureOfInterest.name, 'north');

      const rejections = await dataset.rejections();
      const reasonOf = (station: string) => rejections.find((r) => r.record.station === station);
      assert.equal(rejections.length, 3);
      assert.equal(reasonOf('west')!.field, 'Datastream.Thing.Location');
      assert.match(reasonOf('west')!.reason, /^Datastream\.Thing\.Location: must be a GeoJSON object/);
      for (const station of ['bare', 'nowhere']) {
        assert.equal(reasonOf(station)!.field, 'FeatureOfInterest', station);
        assert.match(reasonOf(station)!.reason, /^FeatureOfInterest: is required: the Thing of Datastream \d+ has no Location to derive it from/, station);
      }

      // Later records of a Thing the pipeline created: another Location in them does not move it.
      feeds.set('/created', [{ station: 'north', time: '2026-06-01T10:10:00Z', value: 44, place: SOUTH }]);
      await dataset.statusUntil((s) => s?.written === 4, 'the later record');
      const [moved] = await get(dataset, `/Things(${north['@iot.id']})/Locations`);
      assert.deepEqual(moved!.location, NORTH);
      const [later] = await get(dataset, '/Observations?$filter=result eq 44&$expand=FeatureOfInterest');
      assert.equal(later!.FeatureOfInterest['@iot.id'], observations[1].FeatureOfInterest['@iot.id']);
    });

    it('a Datastream given by @iot.id ignores the Location (its Thing exists), yet a bad one is still rejected', async () => {
      const mapping = { fields: { 'Datastream.@iot.id': 'stream', 'Datastream.Thing.Location': 'place', result: 'value', phenomenonTime: 'time' } };
      const source = await releasedDataSource(t, 'HTTP', { url: `${url}/by-id`, interval: '1s', records_pointer: '/data' });
      const dataset = await pipelineDataset(t, { dataSourceIds: [source.id], mapping });
      await dataset.statusUntil((s) => s?.state === 'RUNNING', 'the pipeline to run');
      const placed = await dataset.request('POST', '/Things', {
        name: 'placed', description: 'placed through the API',
        Locations: [{ name: 'site', description: 'its site', encodingType: 'application/geo+json', location: NORTH }],
        Datastreams: [{
          name: 'placed-noise', description: 'noise', observationType: 'http://www.opengis.net/def/observationType/OGC-OM/2.0/OM_Measurement',
          unitOfMeasurement: { name: 'decibel', symbol: 'dB', definition: 'ucum:dB' },
          Sensor: { name: 'meter', description: 'a meter', encodingType: 'text/plain', metadata: '' },
          ObservedProperty: { name: 'noise', description: 'noise', definition: 'noise' },
        }],
      });
      assert.equal(placed.statusCode, 201, placed.body);
      const [stream] = await get(dataset, '/Datastreams?$filter=name eq \'placed-noise\'');
      feeds.set('/by-id', [
        { stream: stream!['@iot.id'], time: '2026-06-02T10:00:00Z', value: 39, place: SOUTH },
        { stream: stream!['@iot.id'], time: '2026-06-02T10:05:00Z', value: 40, place: { coordinates: [8.4, 49] } },
      ]);
      const status = await dataset.statusUntil((s) => (s?.written ?? 0) + (s?.rejected ?? 0) >= 2, 'both records');
      assert.deepEqual([status!.written, status!.rejected], [1, 1], JSON.stringify(status));
      const [observation] = await get(dataset, '/Observations?$expand=FeatureOfInterest');
      assert.deepEqual(observation!.FeatureOfInterest.feature, NORTH, 'from the Thing\'s own Location');
      assert.deepEqual((await get(dataset, '/Locations')).map((l) => l.location), [NORTH]);
      const [rejection] = await dataset.rejections();
      assert.equal(rejection.field, 'Datastream.Thing.Location');
    });
  });
}
