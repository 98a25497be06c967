import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectProblem } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { datastream, feature, location, point, thing } from './fixtures.js';
import { missing, requirePostgis } from '../helpers/requirements.js';

// The standard's geospatial filter functions through the gateway: on PostgreSQL with PostGIS
// (which .ci/run installs) they filter; on embedded PGlite (no PostGIS) they answer 400 saying so.
const postgis = await requirePostgis();

for (const kind of databaseKinds(import.meta.url)) {
  describe(`SensorThings geospatial filters (${kind})`, { skip: kind === 'postgres' && missing(postgis) }, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    before(async () => {
      t = await buildTestApp(kind);
      sta = await publishStaDataset(t);
      for (const [name, coordinates] of [['Town hall', [8.68, 50.11]], ['Harbour', [9.99, 53.54]]] as const) {
        const created = await sta.request('POST', '/Things', {
          name, description: 'station',
          Locations: [{ name, description: 'roof', encodingType: 'application/geo+json', location: { type: 'Point', coordinates } }],
        });
        assert.equal(created.statusCode, 201, created.body);
      }
    });
    after(() => t.close());

    const names = async (filter: string) => {
      const response = await sta.request('GET', `/Locations?$select=name&$orderby=name&$filter=${encodeURIComponent(filter)}`);
      if (response.statusCode !== 200) return response;
      return response.json().value.map((location: { name: string }) => location.name);
    };

    if (kind === 'postgres') {
      test('st_within, st_intersects, geo.intersects and geo.distance select by geometry', async () => {
        const aroundFrankfurt = "geography'POLYGON((8 50, 9 50, 9 51, 8 51, 8 50))'";
        assert.deepEqual(await names(`st_within(location, ${aroundFrankfurt})`), ['Town hall']);
        assert.deepEqual(await names(`st_intersects(location, ${aroundFrankfurt})`), ['Town hall']);
        assert.deepEqual(await names(`geo.intersects(location, ${aroundFrankfurt})`), ['Town hall']);
        assert.deepEqual(await names(`not st_within(location, ${aroundFrankfurt})`), ['Harbour']);
        assert.deepEqual(await names("geo.distance(location, geography'POINT(10 53.5)') lt 0.5"), ['Harbour']);
      });
      test('the geography literal as clients write it in a URL (unencoded quotes and parentheses, %20 or + for spaces) answers 200', async () => {
        const polygon = "geography'POLYGON((8 50, 9 50, 9 51, 8 51, 8 50))'";
        for (const space of ['%20', '+']) {
          const response = await sta.request('GET', `/Locations?$select=name&$filter=st_within(location,${space}${polygon.replace(/ /g, space)})`);
          assert.equal(response.statusCode, 200, response.body);
          assert.deepEqual(response.json().value.map((l: { name: string }) => l.name), ['Town hall']);
        }
        // White space inside WKT may be any white space, and a coordinate may carry its sign.
        assert.deepEqual(await names("st_within(location, geography'POLYGON((8\t50,\n9 50, 9 51, +8 51, 8 50))')"), ['Town hall']);
      });
      test('geo.distance orders by distance in $orderby (nearest first)', async () => {
        const order = async (point: string) => {
          const response = await sta.request('GET', `/Locations?$select=name&$orderby=${encodeURIComponent(`geo.distance(location, geography'${point}')`)}`);
          assert.equal(response.statusCode, 200, response.body);
          return response.json().value.map((location: { name: string }) => location.name);
        };
        assert.deepEqual(await order('POINT(10 53.5)'), ['Harbour', 'Town hall']);
        assert.deepEqual(await order('POINT(8.7 50.1)'), ['Town hall', 'Harbour']);
      });
      test("a Datastream's observedArea is the convex hull of the features it observed", async () => {
        const created = await sta.request('POST', '/Things', thing('Mast', { Locations: [location('Mast', point(1, 1))], Datastreams: [datastream('Wind')] }));
        assert.equal(created.statusCode, 201, created.body);
        const stream = (await sta.request('GET', `${new URL(created.headers.location as string).pathname.slice(sta.base.length)}/Datastreams`)).json().value[0];
        const observe = (body: object) => sta.request('POST', `/Datastreams(${stream['@iot.id']})/Observations`, body);
        assert.equal((await observe({ result: 1 })).statusCode, 201);
        assert.deepEqual((await sta.request('GET', `/Datastreams(${stream['@iot.id']})`)).json().observedArea, { type: 'Point', coordinates: [1, 1] });
        assert.equal((await observe({ result: 2, FeatureOfInterest: { ...feature('Field'), feature: point(3, 1) } })).statusCode, 201);
        assert.equal((await observe({ result: 3 })).statusCode, 201);
        const area = (await sta.request('GET', `/Datastreams(${stream['@iot.id']})?$select=observedArea`)).json().observedArea;
        assert.equal(area.type, 'LineString');
        assert.deepEqual([...area.coordinates].sort(), [[1, 1], [3, 1]]);
      });
    } else {
      test('without PostGIS a geospatial function answers 400 naming what it needs', async () => {
        const refused = expectProblem(await names("st_within(location, geography'POLYGON((8 50, 9 50, 9 51, 8 51, 8 50))')") as never, 400, 'VALIDATION_FAILED');
        assert.match(refused.detail, /PostGIS/);
      });
    }
  });
}
