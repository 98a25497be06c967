import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectFieldError, expectHtml401, expectProblem, grant, uniqueEmail } from '../helpers/factories.js';
import { publishDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { missing, requirePostgis } from '../helpers/requirements.js';

type Json = Record<string, any>;

const point = (x: number, y: number, properties: Json = {}) => ({ type: 'Feature', geometry: { type: 'Point', coordinates: [x, y] }, properties });
const collectionOf = (features: unknown[]) => ({ type: 'FeatureCollection', features });
const grid = (count: number, properties: (i: number) => Json = (i) => ({ label: `p${i}`, rank: i })) =>
  Array.from({ length: count }, (_, i) => point(6 + (i % 100) * 0.01, 50 + Math.floor(i / 100) * 0.01, properties(i)));

// Feature collections of an OWS named API through the gateway: stored in PostGIS tables of the
// dataset's schema on PostgreSQL; on embedded PGlite (no PostGIS) every OWS request answers 503.
const postgis = await requirePostgis();
for (const kind of databaseKinds(import.meta.url)) {
  describe(`OWS feature collections (${kind})`, { skip: kind === 'postgres' && missing(postgis) }, () => {
    let t: TestApp;
    let ows: PublishedDataset;
    before(async () => {
      t = await buildTestApp(kind);
      ows = await publishDataset(t, { standard: 'OWS', slug: 'maps' });
    });
    after(() => t.close());

    const create = (body: Json) => ows.request('POST', '/collections', body);
    const stops = { name: 'stops', title: 'Bus stops', geometryType: 'Point', properties: { label: 'string', rank: 'integer', height: 'number', covered: 'boolean', since: 'date-time' } };

    if (kind === 'pglite') {
      test('without PostGIS every OWS request, the collection routes included, answers 503 naming what it needs', async () => {
        for (const [method, path, body] of [['GET', '/collections'], ['POST', '/collections', stops], ['GET', '/collections/stops/items'], ['GET', '?SERVICE=WFS&REQUEST=GetCapabilities']] as const) {
          const refused = expectProblem(await ows.request(method, path, body), 503, 'SERVICE_UNAVAILABLE');
          assert.match(refused.detail, /PostGIS/);
          assert.match(refused.detail, /DATABASE_URL/);
        }
      });
      return;
    }

    test('creates, lists, gets and deletes collections; 409 for a taken name, 400 for a bad definition', async () => {
      const created = await create(stops);
      assert.equal(created.statusCode, 201, created.body);
      assert.equal(created.headers.location, `${ows.publicBase}/collections/stops`);
      assert.deepEqual(created.json(), { ...stops, srid: 4326, featureCount: 0, bbox: null });
      expectProblem(await create(stops), 409, 'UNIQUE_CONSTRAINT_VIOLATION');
      expectFieldError(await create({ ...stops, name: 'Bad-Name' }), 'name');
      expectFieldError(await create({ ...stops, name: 'feature_collections' }), 'name');
      expectFieldError(await create({ ...stops, name: 'x1', geometryType: 'Circle' }), 'geometryType');
      expectFieldError(await create({ ...stops, name: 'x1', properties: { colour: 'rgb' } }), 'properties.colour');
      expectFieldError(await create({ ...stops, name: 'x1', properties: { geom: 'string' } }), 'properties.geom');
      expectFieldError(await create({ ...stops, name: 'x1', srid: 123456 }), 'srid');

      const roads = await create({ name: 'roads', geometryType: 'LineString', srid: 25832, properties: {} });
      assert.equal(roads.statusCode, 201, roads.body);
      const list = await ows.request('GET', '/collections');
      assert.equal(list.statusCode, 200, list.body);
      assert.deepEqual(list.json().collections.map((c: Json) => [c.name, c.srid, c.title]), [['roads', 25832, null], ['stops', 4326, 'Bus stops']]);
      assert.equal((await ows.request('GET', '/collections/roads')).json().geometryType, 'LineString');
      assert.equal((await ows.request('DELETE', '/collections/roads')).statusCode, 204);
      expectProblem(await ows.request('GET', '/collections/roads'), 404, 'NOT_FOUND');
      expectProblem(await ows.request('DELETE', '/collections/roads'), 404, 'NOT_FOUND');
      expectProblem(await ows.request('GET', '/collections/roads/items'), 404, 'NOT_FOUND');
    });

    test('adds a FeatureCollection in one go: ids in input order, then featureCount and bbox', async () => {
      const added = await ows.request('POST', '/collections/stops/items', collectionOf([
        point(8.5, 50.1, { label: 'Römer', rank: 1, height: 2.5, covered: true, since: '2020-01-02T03:04:05Z' }),
        point(8.7, 50.2, { label: 'Zoo', rank: 2 }),
        point(8.6, 50.0, {}),
      ]), { 'content-type': 'application/geo+json' });
      assert.equal(added.statusCode, 201, added.body);
      const { ids } = added.json();
      assert.equal(ids.length, 3);
      assert.deepEqual([...ids].sort((a: number, b: number) => a - b), ids);
      const { links, ...first } = (await ows.request('GET', `/collections/stops/items/${ids[0]}`)).json();
      assert.ok(links.some((link: Json) => link.rel === 'collection'), 'OGC API\'s links beside the feature');
      assert.deepEqual(first, {
        type: 'Feature', id: ids[0], geometry: { type: 'Point', coordinates: [8.5, 50.1] },
        properties: { label: 'Römer', rank: 1, height: 2.5, covered: true, since: '2020-01-02T03:04:05.000Z' },
      });
      assert.equal((await ows.request('GET', `/collections/stops/items/${ids[2]}`)).json().properties.label, null);
      const single = await ows.request('POST', '/collections/stops/items', point(8.55, 50.05, { label: 'single' }));
      assert.equal(single.statusCode, 201, single.body);
      assert.equal(single.json().ids.length, 1);
      const described = (await ows.request('GET', '/collections/stops')).json();
      assert.equal(described.featureCount, 4);
      assert.deepEqual(described.bbox, [8.5, 50, 8.7, 50.2]);
    });

    test('one bad feature among many: 400 naming each bad one, and nothing is stored', async () => {
      const before = (await ows.request('GET', '/collections/stops')).json().featureCount;
      const features: unknown[] = grid(50);
      features[7] = { type: 'Feature', geometry: { type: 'LineString', coordinates: [[0, 0], [1, 1]] }, properties: {} };
      features[20] = point(200, 50);
      features[31] = point(8, 50, { rank: 'three' });
      features[42] = point(8, 50, { colour: 'red' });
      const refused = await ows.request('POST', '/collections/stops/items', collectionOf(features));
      for (const field of ['features[7].geometry', 'features[20].geometry', 'features[31].properties.rank', 'features[42].properties.colour']) expectFieldError(refused, field);
      assert.equal(refused.json().fieldErrors.length, 4);
      assert.equal((await ows.request('GET', '/collections/stops')).json().featureCount, before);
      expectFieldError(await ows.request('POST', '/collections/stops/items', { type: 'Polygon', coordinates: [] }), 'type');
    });

    test('more than 10,000 features in one request: 400', async () => {
      expectFieldError(await ows.request('POST', '/collections/stops/items', collectionOf(grid(10_001, () => ({})))), 'features');
    });

    test('reads pages with limit, offset and bbox, and numberMatched', async () => {
      assert.equal((await create({ name: 'trees', geometryType: 'Point', properties: { label: 'string', rank: 'integer' } })).statusCode, 201);
      const ids = (await ows.request('POST', '/collections/trees/items', collectionOf(grid(250)))).json().ids;
      const all = await ows.request('GET', '/collections/trees/items');
      assert.equal(all.statusCode, 200, all.body);
      assert.match(String(all.headers['content-type']), /^application\/geo\+json/);
      const body = all.json();
      assert.equal(body.type, 'FeatureCollection');
      assert.equal(body.numberMatched, 250);
      assert.equal(body.numberReturned, 100);
      assert.deepEqual(body.features.map((f: Json) => f.id), ids.slice(0, 100));
      const page = (await ows.request('GET', '/collections/trees/items?limit=10&offset=245')).json();
      assert.deepEqual([page.numberMatched, page.numberReturned], [250, 5]);
      assert.deepEqual(page.features.map((f: Json) => f.properties.label), ['p245', 'p246', 'p247', 'p248', 'p249']);
      // The first row (y = 50.00) from x = 6.00 to 6.045: five features.
      const boxed = (await ows.request('GET', '/collections/trees/items?bbox=5.999,49.999,6.045,50.001')).json();
      assert.deepEqual([boxed.numberMatched, boxed.numberReturned], [5, 5]);
      // OGC API – Features: a limit beyond 10,000 is served as 10,000.
      assert.equal((await ows.request('GET', '/collections/trees/items?limit=10001')).json().numberReturned, 250);
      expectFieldError(await ows.request('GET', '/collections/trees/items?limit=0'), 'limit');
      expectFieldError(await ows.request('GET', '/collections/trees/items?bbox=1,2,3'), 'bbox');
    });

    test('gets, replaces and deletes one feature; 404 for unknown ones', async () => {
      const [id] = (await ows.request('POST', '/collections/stops/items', point(9, 51, { label: 'old', rank: 5 }))).json().ids;
      const replaced = await ows.request('PUT', `/collections/stops/items/${id}`, point(9.5, 51.5, { label: 'new' }));
      assert.equal(replaced.statusCode, 200, replaced.body);
      assert.deepEqual(replaced.json().geometry, { type: 'Point', coordinates: [9.5, 51.5] });
      assert.deepEqual(replaced.json().properties, { label: 'new', rank: null, height: null, covered: null, since: null });
      expectFieldError(await ows.request('PUT', `/collections/stops/items/${id}`, point(9, 91)), 'geometry');
      assert.equal((await ows.request('DELETE', `/collections/stops/items/${id}`)).statusCode, 204);
      expectProblem(await ows.request('GET', `/collections/stops/items/${id}`), 404, 'NOT_FOUND');
      expectProblem(await ows.request('PUT', `/collections/stops/items/${id}`, point(1, 1)), 404, 'NOT_FOUND');
      expectProblem(await ows.request('DELETE', `/collections/stops/items/${id}`), 404, 'NOT_FOUND');
      expectProblem(await ows.request('GET', '/collections/stops/items/abc'), 404, 'NOT_FOUND');
      expectProblem(await ows.request('GET', '/collections/nowhere/items/1'), 404, 'NOT_FOUND');
    });

    test('writes need DATASET_PAYLOAD_WRITE; open data reads anonymously', async () => {
      expectHtml401(await ows.request('POST', '/collections', { ...stops, name: 'anon' }, { authorization: null }));
      const reader = await grant(t, uniqueEmail('reader'), ['DATASET_PAYLOAD_READ']);
      const asReader = { authorization: `Bearer ${reader}` };
      assert.equal((await ows.request('GET', '/collections/stops', undefined, asReader)).statusCode, 200);
      expectProblem(await ows.request('POST', '/collections/stops/items', point(1, 1), asReader), 403, 'ACCESS_DENIED');
      expectProblem(await ows.request('DELETE', '/collections/stops', undefined, asReader), 403, 'ACCESS_DENIED');

      const open = await publishDataset(t, { standard: 'OWS', slug: 'open', openDataAccess: true });
      assert.equal((await open.request('POST', '/collections', stops)).statusCode, 201);
      const anonymous = await open.request('GET', '/collections/stops/items', undefined, { authorization: null });
      assert.equal(anonymous.statusCode, 200, anonymous.body);
      expectHtml401(await open.request('DELETE', '/collections/stops', undefined, { authorization: null }));
    });

    test('a 5,000-feature load is stored and readable', async () => {
      assert.equal((await create({ name: 'lamps', geometryType: 'Point', properties: { label: 'string', rank: 'integer' } })).statusCode, 201);
      const added = await ows.request('POST', '/collections/lamps/items', collectionOf(grid(5_000)));
      assert.equal(added.statusCode, 201, added.body);
      assert.equal(added.json().ids.length, 5_000);
      const read = (await ows.request('GET', '/collections/lamps/items?limit=10000')).json();
      assert.deepEqual([read.numberMatched, read.numberReturned], [5_000, 5_000]);
      assert.deepEqual(read.features[4_999].properties, { label: 'p4999', rank: 4999 });
      assert.equal((await ows.request('GET', '/collections/lamps')).json().featureCount, 5_000);
    });
  });
}
