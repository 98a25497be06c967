import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectProblem } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { missing, requirePostgis } from '../helpers/requirements.js';
import { datastream, location, point, stationWithObservations, thing } from './fixtures.js';

/**
 * `$filter` through navigation paths over HTTP: to-many paths hold when some related entity
 * satisfies the condition (an `exists`), to-one paths as before, and paths into the GeoJSON of
 * `location` and `feature` (the request QGIS's SensorThings provider sends to count geometry types).
 */

type Json = Record<string, any>;
const postgis = await requirePostgis();

for (const kind of databaseKinds(import.meta.url)) {
  describe(`SensorThings $filter through navigations and into JSON (${kind})`, { skip: kind === 'postgres' && missing(postgis) }, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    const get = async (path: string, query: Record<string, string>): Promise<Json> => {
      const search = Object.entries(query).map(([key, value]) => `${key}=${encodeURIComponent(value)}`).join('&');
      const response = await sta.request('GET', `${path}?${search}`);
      assert.equal(response.statusCode, 200, `${path}?${search}: ${response.body}`);
      return response.json();
    };
    const names = async (path: string, filter: string) =>
      (await get(path, { $filter: filter, $select: 'name', $orderby: 'name' })).value.map((e: Json) => e.name);
    const problem = async (path: string, query: Record<string, string>) => {
      const search = Object.entries(query).map(([key, value]) => `${key}=${encodeURIComponent(value)}`).join('&');
      return expectProblem(await sta.request('GET', `${path}?${search}`), 400, 'VALIDATION_FAILED');
    };

    before(async () => {
      t = await buildTestApp(kind);
      sta = await publishStaDataset(t);
      const harbour = location('Harbour', point(9.99, 53.54));
      const things = [
        // North: results 20..25 at the town hall (a GeoJSON geometry).
        stationWithObservations(6, 'North'),
        // South: results 20..22 at the harbour, its Location a GeoJSON Feature wrapping the point.
        { ...stationWithObservations(3, 'South'), Locations: [{ ...harbour, location: { type: 'Feature', properties: {}, geometry: harbour.location } }] },
        // East: a Datastream without Observations, a polygon for a Location.
        thing('East', {
          properties: { owner: 'port', floor: 1 },
          Locations: [{ ...location('Field'), location: { type: 'Polygon', coordinates: [[[8, 50], [9, 50], [9, 51], [8, 50]]] } }],
          Datastreams: [datastream('Field humidity')],
        }),
        // West: a Datastream without Observations, named as its Location is described.
        thing('West', { Locations: [{ ...location('Shed'), description: 'Shed temperature' }], Datastreams: [datastream('Shed temperature')] }),
      ];
      for (const body of things) {
        const created = await sta.request('POST', '/Things', body);
        assert.equal(created.statusCode, 201, created.body);
      }
    });
    after(() => t.close());

    test('a to-many path holds when any related entity satisfies the condition, at any depth', async () => {
      assert.deepEqual(await names('/Things', 'Datastreams/Observations/result gt 24'), ['North']);
      assert.deepEqual(await names('/Things', 'Datastreams/Observations/result gt 21'), ['North', 'South']);
      assert.deepEqual(await names('/Things', "Datastreams/name eq 'Field humidity'"), ['East']);
      assert.deepEqual(await names('/Locations', 'Things/Datastreams/Observations/result eq 25'), ['Town hall']);
      assert.deepEqual(await names('/Sensors', "Datastreams/Thing/name eq 'South'"), ['DHT22']);
      // Counted once per entity, however many related entities match.
      const counted = await get('/Things', { $filter: 'Datastreams/Observations/result ge 20', $count: 'true', $top: '0' });
      assert.deepEqual(counted, { '@iot.count': 2, value: [] });
      // `not` of such a condition: no related entity satisfies it (also none at all).
      assert.deepEqual(await names('/Things', 'not (Datastreams/Observations/result gt 21)'), ['East', 'West']);
      assert.deepEqual(await names('/Things', "Datastreams/name eq 'Field humidity' or Locations/name eq 'Harbour'"), ['East', 'South']);
      // Conditions joined by `and` on the same related entities: one of them must meet all (as in FROST-Server).
      assert.deepEqual(await names('/Things', 'Datastreams/Observations/result gt 24 and Datastreams/Observations/result lt 21'), []);
      assert.deepEqual(await names('/Things', 'Datastreams/Observations/result gt 21 and Datastreams/Observations/result lt 23'), ['North', 'South']);
      assert.deepEqual(await names('/Things', "Datastreams/Observations/result gt 21 and name eq 'South' and Datastreams/Observations/result lt 22"), []);
      assert.deepEqual(await names('/Things', 'Datastreams/Observations/result ge 25 and Datastreams/Observations/result le 25 and Datastreams/Observations/result eq 25'), ['North']);
      assert.deepEqual(await names('/Things', "Datastreams/name eq 'Shed temperature' and Locations/name eq 'Shed'"), ['West']);
      // `or` and `not` apply per condition.
      assert.deepEqual(await names('/Things', 'Datastreams/Observations/result gt 24 or Datastreams/Observations/result lt 21'), ['North', 'South']);
      assert.deepEqual(await names('/Things', 'not (Datastreams/Observations/result gt 20) and Datastreams/Observations/result le 20'), []);
      // Two to-many paths in one comparison: some pair of related entities satisfies it.
      assert.deepEqual(await names('/Things', 'Locations/description eq Datastreams/name'), ['West']);
      assert.deepEqual(await names('/Things', "startswith(Datastreams/Observations/FeatureOfInterest/name, 'Town')"), ['North']);
    });

    test('to-one paths, and a to-one step before a to-many one', async () => {
      assert.equal((await get('/Observations', { $filter: "Datastream/Thing/name eq 'South'", $count: 'true', $top: '0' }))['@iot.count'], 3);
      const atHarbour = await get('/Observations', { $filter: "Datastream/Thing/Locations/name eq 'Harbour'", $select: 'result', $orderby: 'result' });
      assert.deepEqual(atHarbour.value.map((o: Json) => o.result), [20, 21, 22]);
      assert.deepEqual(await names('/Datastreams', 'Thing/Datastreams/Observations/result eq 22'), ['Roof temperature', 'Roof temperature']);
    });

    test('a to-many path in the $filter of an $expand', async () => {
      const things = await get('/Things', { $select: 'name', $orderby: 'name', $expand: 'Datastreams($select=name;$filter=Observations/result gt 21)' });
      assert.deepEqual(things.value, [
        { name: 'East', Datastreams: [] },
        { name: 'North', Datastreams: [{ name: 'Roof temperature' }] },
        { name: 'South', Datastreams: [{ name: 'Roof temperature' }] },
        { name: 'West', Datastreams: [] },
      ]);
      const strict = await get('/Things', { $select: 'name', $filter: "name eq 'South'", $expand: 'Datastreams($select=name;$filter=Observations/result gt 22)' });
      assert.deepEqual(strict.value, [{ name: 'South', Datastreams: [] }]);
    });

    test('a to-many path outside a condition, or a navigation as a value: 400 naming the position and the path', async () => {
      let body = await problem('/Things', { $orderby: 'Datastreams/name' });
      assert.match(body.detail, /to-many navigation.*at position 0 \('Datastreams\/name'\)/);
      body = await problem('/Things', { $filter: 'length(Datastreams/name) add 1' });
      assert.match(body.detail, /\$filter: .*at position 7 \('Datastreams\/name'\)/);
      body = await problem('/Things', { $filter: 'Datastreams/colour eq 1' });
      assert.match(body.detail, /Datastream has no property colour at position 0 \('colour'\)|has no property colour/);
      body = await problem('/Things', { $filter: 'Datastreams eq 1' });
      assert.match(body.detail, /Thing has no property Datastreams at position 0/);
      await problem('/Things', { $filter: 'Datastreams/Observations/result gt' });
      // Each to-many step nests an `exists`: a bounded number per condition.
      const within = `${'Datastreams/Thing/'.repeat(6)}Datastreams/Observations/result eq 25`;
      assert.deepEqual(await names('/Things', within), ['North']);
      body = await problem('/Things', { $filter: `${'Datastreams/Thing/'.repeat(8)}Datastreams/name eq 'x'` });
      assert.match(body.detail, /at most 8 to-many navigations at position 0/);
      // The same path twice in one condition is the same related entity (one `exists`).
      assert.deepEqual(await names('/Things', 'Datastreams/Observations/result add Datastreams/Observations/result eq 50'), ['North']);
      assert.deepEqual(await names('/Things', 'Datastreams/Observations/result add Datastreams/Observations/result eq 45'), [], 'not 20 + 25');
    });

    test('JSON paths: properties members and the GeoJSON of location and feature', async () => {
      assert.deepEqual(await names('/Things', 'properties/floor eq 1'), ['East']);
      assert.deepEqual(await names('/Things', "properties/owner eq 'port'"), ['East']);
      assert.deepEqual(await names('/Locations', "location/type eq 'Point'"), ['Shed', 'Town hall']);
      assert.deepEqual(await names('/Locations', "location/type eq 'Feature'"), ['Harbour']);
      assert.deepEqual(await names('/Locations', "location/geometry/type eq 'Point'"), ['Harbour']);
      assert.deepEqual(await names('/Locations', 'location/coordinates/0 gt 9'), []);
      assert.deepEqual(await names('/Locations', 'location/geometry/coordinates/0 gt 9'), ['Harbour']);
    });

    test("QGIS's geometry-type counts on Locations, Things (via Locations) and FeaturesOfInterest", async () => {
      // Exactly what QGIS's SensorThings provider sends, once per geometry type.
      const count = async (path: string, prefix: string, type: string) =>
        (await get(path, { $filter: `${prefix}/type eq '${type}' or ${prefix}/geometry/type eq '${type}'`, $count: 'true', $top: '0' }));
      assert.deepEqual(await count('/Locations', 'location', 'Point'), { '@iot.count': 3, value: [] });
      assert.deepEqual(await count('/Locations', 'location', 'Polygon'), { '@iot.count': 1, value: [] });
      assert.deepEqual(await count('/Locations', 'location', 'LineString'), { '@iot.count': 0, value: [] });
      assert.deepEqual(await count('/Things', 'Locations/location', 'Point'), { '@iot.count': 3, value: [] });
      assert.deepEqual(await count('/Things', 'Locations/location', 'Polygon'), { '@iot.count': 1, value: [] });
      // The features of interest were made from the Things' Locations when the Observations came.
      const features = await get('/FeaturesOfInterest', { $select: 'feature', $orderby: 'id' });
      assert.equal(features.value.length, 2);
      assert.deepEqual(await count('/FeaturesOfInterest', 'feature', 'Point'), { '@iot.count': 2, value: [] });
      assert.deepEqual(await count('/FeaturesOfInterest', 'feature', 'Polygon'), { '@iot.count': 0, value: [] });
      // And the raw query string as QGIS writes it (spaces and quotes percent-encoded by its URL class).
      const raw = await sta.request('GET', "/Locations?$filter=location/type%20eq%20'Point'%20or%20location/geometry/type%20eq%20'Point'&$count=true&$top=0");
      assert.equal(raw.statusCode, 200, raw.body);
      assert.equal(raw.json()['@iot.count'], 3);
    });

    if (kind === 'postgres') {
      test('geospatial functions through a to-many path (PostGIS)', async () => {
        const aroundFrankfurt = "geography'POLYGON((8 50, 9 50, 9 51, 8 51, 8 50))'";
        assert.deepEqual(await names('/Things', `st_within(Locations/location, ${aroundFrankfurt})`), ['East', 'North', 'West']);
        assert.deepEqual(await names('/Things', `st_intersects(Locations/location, ${aroundFrankfurt})`), ['East', 'North', 'West']);
        assert.deepEqual(await names('/Things', "st_within(Locations/location, geography'POLYGON((9 53, 10 53, 10 54, 9 54, 9 53))')"), ['South']);
        assert.deepEqual(await names('/Datastreams', `st_within(Thing/Locations/location, ${aroundFrankfurt})`), ['Field humidity', 'Roof temperature', 'Shed temperature']);
      });
    }
  });
}
