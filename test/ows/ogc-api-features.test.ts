import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { publishDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { missing, requirePostgis } from '../helpers/requirements.js';

/**
 * OGC API – Features on an OWS named API (the contract's "Open data"): landing page, conformance,
 * API definition, collections with extents and CRSs, items with limit and next links, bbox, crs,
 * datetime, property filters and CQL2, one item, queryables, HTML, errors; the Part 4 writes still work.
 */

type Json = Record<string, any>;
const CRS84 = 'http://www.opengis.net/def/crs/OGC/1.3/CRS84';
const EPSG = (code: number) => `http://www.opengis.net/def/crs/EPSG/0/${code}`;
const KINDS = ['oak', 'lime', 'birch', 'ash', 'elm'];
/** 250 trees on a 25 × 10 grid from 8.60 E 50.00 N, 0.01° apart; tree i planted on day i of 2024. */
const TREES = Array.from({ length: 250 }, (_, i) => ({
  type: 'Feature',
  geometry: { type: 'Point', coordinates: [Number((8.6 + (i % 25) * 0.01).toFixed(2)), Number((50 + Math.floor(i / 25) * 0.01).toFixed(2))] },
  properties: {
    name: `tree ${i}`, kind: KINDS[i % 5], height: (i % 20) + 0.5, age: i % 50, alive: i % 7 !== 0,
    planted: new Date(Date.UTC(2024, 0, 1 + i)).toISOString(),
  },
}));

describe('OGC API – Features on an OWS named API (postgres, PostGIS)', { skip: missing(await requirePostgis()) }, () => {
  let t: TestApp;
  let api: PublishedDataset;
  let base: string;
  let fids: number[];
  before(async () => {
    t = await buildTestApp('postgres');
    api = await publishDataset(t, { standard: 'OWS', slug: 'green', openDataAccess: true });
    base = `${t.ctx.config.dataApi.baseUrl}${api.base}`;
    const created = await api.request('POST', '/collections', {
      name: 'trees', title: 'Street trees', geometryType: 'Point',
      properties: { name: 'string', kind: 'string', height: 'number', age: 'integer', alive: 'boolean', planted: 'date-time' },
    });
    assert.equal(created.statusCode, 201, created.body);
    const added = await api.request('POST', '/collections/trees/items', { type: 'FeatureCollection', features: TREES });
    assert.equal(added.statusCode, 201, added.body);
    fids = added.json().ids;
    assert.equal((await api.request('POST', '/collections', { name: 'masts', geometryType: 'Point', srid: 25832, properties: { label: 'string' } })).statusCode, 201);
    assert.equal((await api.request('POST', '/collections/masts/items', { type: 'FeatureCollection', features: [
      { type: 'Feature', geometry: { type: 'Point', coordinates: [475000, 5550000] }, properties: { label: 'west' } },
      { type: 'Feature', geometry: { type: 'Point', coordinates: [480000, 5555000] }, properties: { label: 'east' } },
    ] })).statusCode, 201);
  });
  after(() => t?.close());

  const get = async (path: string, headers: Record<string, string> = {}) => api.request('GET', path, undefined, { authorization: null, ...headers });
  const ok = async (path: string, headers: Record<string, string> = {}) => {
    const response = await get(path, headers);
    assert.equal(response.statusCode, 200, `${path}: ${response.body.slice(0, 500)}`);
    return response;
  };
  const problem = async (path: string, field?: string) => {
    const response = await get(path);
    assert.equal(response.statusCode, 400, `${path}: ${response.body.slice(0, 300)}`);
    const body = response.json();
    assert.equal(body.code, 'VALIDATION_FAILED');
    assert.equal(body.description, body.detail, 'OGC API\'s description beside the problem\'s detail');
    if (field) assert.equal(body.fieldErrors[0].field, field, JSON.stringify(body));
    return body;
  };
  const labelsOf = (body: Json) => body.features.map((feature: Json) => feature.properties.name ?? feature.properties.label);

  it('the landing page (JSON by default, HTML for a browser or f=html) links the API definition, conformance and data; with SERVICE the base is WFS', async () => {
    const landing = (await ok('')).json();
    const rels = Object.fromEntries(landing.links.map((link: Json) => [link.rel, link]));
    assert.equal(rels.self.href, `${base}?f=json`);
    assert.equal(rels['service-desc'].href, `${base}/api`);
    assert.equal(rels['service-desc'].type, 'application/vnd.oai.openapi+json;version=3.0');
    assert.equal(rels.conformance.href, `${base}/conformance`);
    assert.equal(rels.data.href, `${base}/collections`);
    assert.ok(rels['service-doc'] && rels.alternate);
    assert.match(landing.title, /^published-/);
    const page = await ok('', { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' });
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.match(page.body, /<a href="[^"]+\/collections">/);
    assert.match((await ok('?f=html')).body, /^<!DOCTYPE html>/);
    const wfs = await ok('?SERVICE=WFS&REQUEST=GetCapabilities');
    assert.match(String(wfs.headers['content-type']), /xml/);
  });

  it('conformance and the OpenAPI 3.0 definition', async () => {
    const classes = (await ok('/conformance')).json().conformsTo;
    for (const conformance of ['ogcapi-features-1/1.0/conf/core', 'ogcapi-features-1/1.0/conf/geojson', 'ogcapi-features-1/1.0/conf/html', 'ogcapi-features-1/1.0/conf/oas30', 'ogcapi-features-2/1.0/conf/crs', 'ogcapi-features-3/1.0/conf/filter', 'cql2/1.0/conf/basic-cql2']) {
      assert.ok(classes.includes(`http://www.opengis.net/spec/${conformance}`), conformance);
    }
    const definition = await ok('/api');
    assert.match(String(definition.headers['content-type']), /^application\/vnd\.oai\.openapi\+json; ?version="?3\.0/);
    const document = definition.json();
    assert.match(document.openapi, /^3\.0\./);
    assert.deepEqual(document.servers, [{ url: base }]);
    assert.deepEqual(document.paths['/collections/{collectionId}/items'].get.parameters[0].schema.enum, ['masts', 'trees']);
  });

  it('collections carry OGC\'s members beside the store\'s: id, title, links, extents in CRS84, CRSs and the storage CRS', async () => {
    const { collections, links } = (await ok('/collections')).json();
    assert.ok(links.some((link: Json) => link.rel === 'self'));
    const trees = collections.find((c: Json) => c.id === 'trees');
    assert.equal(trees.name, 'trees');
    assert.equal(trees.featureCount, 250);
    assert.equal(trees.title, 'Street trees');
    assert.equal(trees.itemType, 'feature');
    assert.deepEqual(trees.extent.spatial.bbox, [[8.6, 50, 8.84, 50.09]]);
    assert.equal(trees.extent.spatial.crs, CRS84);
    assert.deepEqual(trees.extent.temporal.interval, [['2024-01-01T00:00:00.000Z', new Date(Date.UTC(2024, 0, 250)).toISOString()]]);
    assert.deepEqual(trees.crs, [CRS84, EPSG(4326), EPSG(3857)]);
    assert.equal(trees.storageCrs, CRS84);
    const rels = Object.fromEntries(trees.links.map((link: Json) => [`${link.rel} ${link.type}`, link.href]));
    assert.equal(rels['items application/geo+json'], `${base}/collections/trees/items`);
    assert.equal(rels['http://www.opengis.net/def/rel/ogc/1.0/queryables application/schema+json'], `${base}/collections/trees/queryables`);
    const masts = (await ok('/collections/masts')).json();
    assert.deepEqual(masts.crs, [CRS84, EPSG(4326), EPSG(3857), EPSG(25832)]);
    assert.equal(masts.storageCrs, EPSG(25832));
    assert.equal(masts.extent.temporal, undefined, 'no date-time property, no temporal extent');
  });

  it('items: 100 by default; following next returns every feature exactly once, the last page has no next; limit beyond 10,000 is served as 10,000', async () => {
    const seen: number[] = [];
    let url: string | undefined = `${base}/collections/trees/items`;
    let pages = 0;
    while (url) {
      const response = await ok(url.slice(base.length));
      assert.match(String(response.headers['content-type']), /^application\/geo\+json/);
      const body = response.json();
      assert.equal(body.numberMatched, 250);
      assert.equal(body.numberReturned, body.features.length);
      assert.ok(!Number.isNaN(Date.parse(body.timeStamp)));
      seen.push(...body.features.map((feature: Json) => feature.id));
      url = body.links.find((link: Json) => link.rel === 'next')?.href;
      if (pages > 0) assert.ok(body.links.some((link: Json) => link.rel === 'prev'), 'a later page links back');
      assert.ok(body.links.some((link: Json) => link.rel === 'collection'));
      pages += 1;
      assert.ok(pages < 10);
    }
    assert.equal(pages, 3);
    assert.deepEqual(seen, fids);
    const prev = (await ok(`/collections/trees/items?after=${fids[99]}`)).json().links.find((link: Json) => link.rel === 'prev').href;
    assert.deepEqual((await ok(prev.slice(base.length))).json().features.map((f: Json) => f.id), fids.slice(0, 100));
    assert.equal((await ok('/collections/trees/items?limit=20000')).json().numberReturned, 250);
    assert.equal((await ok('/collections/trees/items?limit=7')).json().features.length, 7);
    // A feature added while a client pages is not met twice, and none is skipped.
    const first = (await ok('/collections/trees/items?limit=100')).json();
    const added = await api.request('POST', '/collections/trees/items', { type: 'FeatureCollection', features: [TREES[0]] });
    assert.equal(added.statusCode, 201);
    const next = new URL(first.links.find((link: Json) => link.rel === 'next').href);
    next.searchParams.set('limit', '1000');
    const rest = (await ok(`${next.pathname.slice(api.base.length)}${next.search}`)).json();
    assert.equal(new Set([...first.features, ...rest.features].map((f: Json) => f.id)).size, 251);
    assert.equal((await api.request('DELETE', `/collections/trees/items/${added.json().ids[0]}`)).statusCode, 204);
  });

  it('bbox in CRS84 or with bbox-crs, crs of the answer with Content-Crs, also for a collection stored in UTM', async () => {
    const boxed = (await ok('/collections/trees/items?bbox=8.595,49.995,8.615,50.005')).json();
    assert.deepEqual(labelsOf(boxed), ['tree 0', 'tree 1']);
    // EPSG:4326 is latitude first.
    assert.deepEqual(labelsOf((await ok(`/collections/trees/items?bbox=49.995,8.595,50.005,8.615&bbox-crs=${EPSG(4326)}`)).json()), ['tree 0', 'tree 1']);
    const crs84 = await ok('/collections/trees/items?limit=1');
    assert.equal(crs84.headers['content-crs'], `<${CRS84}>`);
    assert.deepEqual(crs84.json().features[0].geometry.coordinates, [8.6, 50]);
    const swapped = await ok(`/collections/trees/items?limit=1&crs=${encodeURIComponent(EPSG(4326))}`);
    assert.equal(swapped.headers['content-crs'], `<${EPSG(4326)}>`);
    assert.deepEqual(swapped.json().features[0].geometry.coordinates, [50, 8.6]);
    const mercator = (await ok(`/collections/trees/items?limit=1&crs=${EPSG(3857)}`)).json().features[0].geometry.coordinates;
    assert.ok(Math.abs(mercator[0] - 957347.6) < 1 && Math.abs(mercator[1] - 6446275.8) < 1, JSON.stringify(mercator));
    // UTM 32N (475000, 5550000) is 8.6504 E 50.1017 N.
    const masts = (await ok('/collections/masts/items?bbox=8.64,50.09,8.66,50.11')).json();
    assert.deepEqual(labelsOf(masts), ['west']);
    assert.ok(Math.abs(masts.features[0].geometry.coordinates[0] - 8.6504) < 1e-3);
    assert.deepEqual((await ok(`/collections/masts/items?crs=${EPSG(25832)}&bbox=474000,5549000,476000,5551000&bbox-crs=${EPSG(25832)}`)).json().features[0].geometry.coordinates, [475000, 5550000]);
    const one = await ok(`/collections/masts/items/${(await ok('/collections/masts/items')).json().features[1].id}?crs=${EPSG(25832)}`);
    assert.deepEqual(one.json().geometry.coordinates, [480000, 5555000]);
    assert.equal(one.headers['content-crs'], `<${EPSG(25832)}>`);
  });

  it('datetime (instant, closed and open intervals) and property filters on queryables', async () => {
    assert.deepEqual(labelsOf((await ok('/collections/trees/items?datetime=2024-01-03T00:00:00Z')).json()), ['tree 2']);
    assert.deepEqual(labelsOf((await ok('/collections/trees/items?datetime=2024-01-02T00:00:00Z/2024-01-04T00:00:00Z')).json()), ['tree 1', 'tree 2', 'tree 3']);
    assert.equal((await ok('/collections/trees/items?datetime=../2024-01-10T00:00:00Z')).json().numberMatched, 10);
    assert.equal((await ok('/collections/trees/items?datetime=2024-09-01T00:00:00Z/..')).json().numberMatched, 250 - 244);
    assert.deepEqual(labelsOf((await ok('/collections/trees/items?datetime=2024-01-05')).json()), ['tree 4']);
    assert.equal((await ok('/collections/trees/items?kind=oak')).json().numberMatched, 50);
    assert.equal((await ok('/collections/trees/items?kind=oak&alive=false&limit=1000')).json().features.every((f: Json) => f.properties.kind === 'oak' && f.properties.alive === false), true);
    assert.equal((await ok('/collections/trees/items?age=3')).json().numberMatched, 5);
  });

  it('CQL2 text: comparisons, AND/OR/NOT, LIKE, BETWEEN, IN, IS NULL, S_INTERSECTS with WKT and BBOX', async () => {
    const matched = async (filter: string) => (await ok(`/collections/trees/items?limit=1000&filter=${encodeURIComponent(filter)}`)).json().numberMatched;
    // Oaks are every fifth tree, heights (i % 20) + 0.5: trees 10, 15, 30, 35, … 235.
    assert.equal(await matched("kind = 'oak' AND height > 10"), 24);
    assert.equal(await matched("kind = 'oak' OR kind = 'lime'"), 100);
    assert.equal(await matched("NOT kind = 'oak'"), 200);
    assert.equal(await matched("name LIKE 'tree 1_'"), 10);
    assert.equal(await matched('age BETWEEN 10 AND 19'), 50);
    assert.equal(await matched("kind IN ('ash', 'elm')"), 100);
    assert.equal(await matched('name IS NULL'), 0);
    assert.equal(await matched("planted >= TIMESTAMP('2024-09-01T00:00:00Z')"), 6);
    assert.equal(await matched('S_INTERSECTS(geometry, POLYGON((8.595 49.995, 8.615 49.995, 8.615 50.005, 8.595 50.005, 8.595 49.995)))'), 2);
    assert.equal(await matched('S_INTERSECTS(geometry, BBOX(8.595, 49.995, 8.615, 50.005))'), 2);
    assert.equal((await ok(`/collections/masts/items?filter=${encodeURIComponent('S_INTERSECTS(geometry, POINT(8.65040 50.10170))')}`)).json().numberMatched, 0, 'a point a metre off');
    assert.equal((await ok(`/collections/masts/items?filter-lang=cql2-text&filter=${encodeURIComponent('S_INTERSECTS(geometry, BBOX(8.64, 50.09, 8.66, 50.11))')}`)).json().numberMatched, 1);
    await problem(`/collections/trees/items?filter=${encodeURIComponent("height > 'tall'")}`, 'filter');
    await problem(`/collections/trees/items?filter=${encodeURIComponent('colour = 1')}`, 'filter');
    await problem(`/collections/trees/items?filter=${encodeURIComponent("kind = 'x'; drop table x")}`, 'filter');
    await problem('/collections/trees/items?filter=kind%3D%27oak%27&filter-lang=cql2-json', 'filter-lang');
  });

  it('400 for an unknown parameter or a bad value, naming it, as a problem with OGC\'s code and description; 404 for a missing feature or collection', async () => {
    await problem('/collections/trees/items?colour=red', 'colour');
    await problem('/collections/trees/items?limit=0', 'limit');
    await problem('/collections/trees/items?limit=ten', 'limit');
    await problem('/collections/trees/items?bbox=1,2,3', 'bbox');
    await problem('/collections/trees/items?bbox=8,50,7,51', 'bbox');
    await problem('/collections/trees/items?crs=EPSG:4326', 'crs');
    await problem(`/collections/trees/items?crs=${EPSG(2056)}`, 'crs');
    await problem('/collections/trees/items?datetime=yesterday', 'datetime');
    await problem('/collections/trees/items?datetime=2024-05-01T10:00:00', 'datetime');
    await problem('/collections/trees/items?datetime=2024-05-02T00:00:00Z/2024-05-01T00:00:00Z', 'datetime');
    await problem('/collections/masts/items?datetime=2024-05-01', 'datetime');
    await problem('/collections/trees/items?age=old', 'age');
    await problem('/collections/trees/items?alive=yes', 'alive');
    await problem('/collections/trees/items?limit=1&limit=2', 'limit');
    await problem('/collections?bbox=1,2,3,4', 'bbox');
    await problem('/conformance?x=1', 'x');
    const gone = await get('/collections/trees/items/999999');
    assert.equal(gone.statusCode, 404);
    assert.equal(gone.json().code, 'NOT_FOUND');
    assert.equal(gone.json().description, gone.json().detail);
    assert.equal((await get('/collections/nope/items')).statusCode, 404);
  });

  it('one item and the queryables (a JSON Schema), in JSON and HTML', async () => {
    const item = await ok(`/collections/trees/items/${fids[3]}`);
    assert.match(String(item.headers['content-type']), /^application\/geo\+json/);
    assert.equal(item.json().properties.name, 'tree 3');
    assert.ok(item.json().links.some((link: Json) => link.rel === 'collection'));
    const schema = await ok('/collections/trees/queryables');
    assert.match(String(schema.headers['content-type']), /^application\/schema\+json/);
    const queryables = schema.json();
    assert.equal(queryables.$id, `${base}/collections/trees/queryables`);
    assert.deepEqual(queryables.properties.planted, { title: 'planted', type: 'string', format: 'date-time' });
    assert.deepEqual(queryables.properties.geometry, { format: 'geometry-point', 'x-ogc-role': 'primary-geometry' });
    const page = await ok('/collections/trees/items?limit=3&f=html');
    assert.match(page.body, /<td>tree 2<\/td>/);
    assert.doesNotMatch(page.body, /<script/i);
  });

  it('numberMatched follows a write at once (the count kept between pages is dropped when the features change)', async () => {
    const count = async () => (await ok('/collections/trees/items?limit=1&kind=oak')).json().numberMatched;
    const before = await count();
    assert.equal(await count(), before);
    const added = await api.request('POST', '/collections/trees/items', { type: 'Feature', geometry: { type: 'Point', coordinates: [9, 51] }, properties: { name: 'new oak', kind: 'oak' } });
    assert.equal(added.statusCode, 201);
    assert.equal(await count(), before + 1);
    assert.equal((await api.request('DELETE', `/collections/trees/items/${added.json().ids[0]}`)).statusCode, 204);
    assert.equal(await count(), before);
  });

  it('HTML escapes what the data holds', async () => {
    const added = await api.request('POST', '/collections/trees/items', { type: 'Feature', geometry: { type: 'Point', coordinates: [9, 51] }, properties: { name: '<script>alert(1)</script>', kind: 'x' } });
    assert.equal(added.statusCode, 201);
    const page = await ok(`/collections/trees/items/${added.json().ids[0]}?f=html`);
    assert.doesNotMatch(page.body, /<script>/);
    assert.match(page.body, /&#60;script&#62;/);
  });

  it('the Part 4 writes keep working on the same routes; a closed API needs a token for its OGC API too', async () => {
    const written = await api.request('POST', '/collections/trees/items', { type: 'Feature', geometry: { type: 'Point', coordinates: [9.1, 51.1] }, properties: { name: 'new' } });
    assert.equal(written.statusCode, 201);
    const [id] = written.json().ids;
    assert.equal((await api.request('PUT', `/collections/trees/items/${id}`, { type: 'Feature', geometry: { type: 'Point', coordinates: [9.2, 51.2] }, properties: { name: 'moved' } })).statusCode, 200);
    assert.equal((await ok(`/collections/trees/items/${id}`)).json().properties.name, 'moved');
    assert.equal((await api.request('DELETE', `/collections/trees/items/${id}`)).statusCode, 204);
    assert.equal((await api.request('POST', '/collections/trees/items', { type: 'Feature', geometry: { type: 'Point', coordinates: [9.1, 51.1] }, properties: {} }, { authorization: null })).statusCode, 401);
    const closed = await publishDataset(t, { standard: 'OWS', slug: 'closed' });
    for (const path of ['', '/conformance', '/api', '/collections']) {
      assert.equal((await closed.request('GET', path, undefined, { authorization: null })).statusCode, 401, path);
      const allowed = await closed.request('GET', path);
      assert.equal(allowed.statusCode, 200, path);
      assert.equal(allowed.headers['cache-control'], 'private, no-store');
    }
    assert.equal((await ok('/collections')).headers['cache-control'], 'public, max-age=60');
  });
});
