import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type { TestApp } from '../helpers/test-app.js';
import { publishDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { missing, requireGdal, requirePostgis } from '../helpers/requirements.js';
import { listeningOwsApp } from '../ows/ows-helpers.js';

/**
 * The bulk downloads of an OWS named API (the contract's "Open data", Bulk downloads): the
 * GeoPackage of every collection and each collection as GeoJSON and CSV, opened with GDAL as a
 * user would; validators and 304; authorization as for the payload; a client that goes away, the
 * process making the GeoPackage killed, and a collection dropped in the middle of a download.
 */

type Json = Record<string, any>;
const KINDS = ['oak', 'lime', 'birch'];
/** 250 trees on a grid from 8.60 E 50.00 N; one name needs CSV quoting. */
const TREES = Array.from({ length: 250 }, (_, i) => ({
  type: 'Feature',
  geometry: { type: 'Point', coordinates: [Number((8.6 + (i % 25) * 0.01).toFixed(2)), Number((50 + Math.floor(i / 25) * 0.01).toFixed(2))] },
  properties: {
    name: i === 7 ? 'the "old", crooked one' : `tree ${i}`, kind: KINDS[i % 3], height: (i % 20) + 0.5, age: i % 50, alive: i % 7 !== 0,
    planted: i === 3 ? null : new Date(Date.UTC(2024, 0, 1 + i)).toISOString(),
  },
}));

const ogrinfo = (...args: string[]) => execFileSync('ogrinfo', ['-ro', ...args], { encoding: 'utf8' });

describe('bulk downloads of an OWS named API (postgres, PostGIS, GDAL)', { skip: missing(await requirePostgis(), requireGdal()) }, () => {
  let t: TestApp;
  let dataApiUrl: string;
  let open: PublishedDataset;
  let closed: PublishedDataset;
  let stem: string;
  const folder = mkdtempSync(path.join(tmpdir(), 'downloads-test-'));
  const madeIn = path.join(folder, 'made');
  // ogr2ogr, two seconds late: a build that lasts long enough to kill it or to leave it.
  const slowOgr2ogr = path.join(folder, 'slow-ogr2ogr');
  writeFileSync(slowOgr2ogr, '#!/bin/sh\nsleep 2\nexec ogr2ogr "$@"\n');
  chmodSync(slowOgr2ogr, 0o755);

  before(async () => {
    execFileSync('mkdir', ['-p', madeIn]);
    ({ t, dataApiUrl } = await listeningOwsApp({ DOWNLOAD_TEMP_DIR: madeIn }));
    open = await publishDataset(t, { standard: 'OWS', slug: 'green', openDataAccess: true });
    stem = `${open.datasetId.replaceAll('-', '').slice(0, 8)}-green`;
    const created = await open.request('POST', '/collections', {
      name: 'trees', title: 'Street trees', geometryType: 'Point',
      properties: { name: 'string', kind: 'string', height: 'number', age: 'integer', alive: 'boolean', planted: 'date-time' },
    });
    assert.equal(created.statusCode, 201, created.body);
    assert.equal((await open.request('POST', '/collections/trees/items', { type: 'FeatureCollection', features: TREES })).statusCode, 201);
    assert.equal((await open.request('POST', '/collections', { name: 'masts', geometryType: 'Point', srid: 25832, properties: { label: 'string' } })).statusCode, 201);
    assert.equal((await open.request('POST', '/collections/masts/items', { type: 'FeatureCollection', features: [
      { type: 'Feature', geometry: { type: 'Point', coordinates: [475000, 5550000] }, properties: { label: 'west' } },
      { type: 'Feature', geometry: { type: 'Point', coordinates: [480000, 5555000] }, properties: { label: 'east' } },
    ] })).statusCode, 201);
    closed = await publishDataset(t, { standard: 'OWS', slug: 'private', openDataAccess: false });
    assert.equal((await closed.request('POST', '/collections', { name: 'secrets', geometryType: 'Point', properties: {} })).statusCode, 201);
    assert.equal((await closed.request('POST', '/collections/secrets/items', { type: 'FeatureCollection', features: TREES.slice(0, 3).map((tree) => ({ ...tree, properties: {} })) })).statusCode, 201);
  });
  after(async () => {
    delete process.env.OGR2OGR_PATH;
    await t?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  const get = (dataset: PublishedDataset, pathBelow: string, headers: Record<string, string | null> = {}) =>
    dataset.request('GET', pathBelow, undefined, { authorization: null, ...headers });
  const saved = (name: string, bytes: Buffer) => {
    const file = path.join(folder, name);
    writeFileSync(file, bytes);
    return file;
  };
  const madeFiles = () => readdirSync(madeIn);

  it('each collection as GeoJSON: every feature once in fid order, in WGS 84 longitude/latitude, as an attachment; GDAL reads it', async () => {
    const response = await get(open, '/collections/trees/download.geojson');
    assert.equal(response.statusCode, 200, response.body.slice(0, 300));
    assert.equal(response.headers['content-type'], 'application/geo+json');
    assert.equal(response.headers['content-disposition'], `attachment; filename="${stem}-trees.geojson"`);
    assert.equal(response.headers['cache-control'], 'public, max-age=60');
    assert.match(String(response.headers.etag), /^W\/"\d+\.\d+"$/);
    const body = response.json();
    assert.equal(body.type, 'FeatureCollection');
    assert.equal(body.features.length, 250);
    const ids = body.features.map((feature: Json) => feature.id);
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
    assert.equal(new Set(ids).size, 250);
    body.features.forEach((feature: Json, i: number) => {
      assert.deepEqual(feature.geometry, TREES[i]!.geometry);
      assert.deepEqual(feature.properties, TREES[i]!.properties);
    });
    const masts = (await get(open, '/collections/masts/download.geojson')).json();
    const [west] = masts.features[0].geometry.coordinates;
    assert.ok(west > 8.6 && west < 8.7, `EPSG:25832 475000 E (UTM zone 32) is near 8.65 E: ${west}`);
    const info = ogrinfo('-al', '-so', saved('trees.geojson', response.rawPayload));
    assert.match(info, /Feature Count: 250/);
    assert.match(info, /Geometry: Point/);
  });

  it('each collection as CSV: fid, the attributes, the geometry as WKT; RFC 4180 quoting; GDAL reads the geometry', async () => {
    const response = await get(open, '/collections/trees/download.csv');
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['content-type'], 'text/csv; charset=utf-8');
    assert.equal(response.headers['content-disposition'], `attachment; filename="${stem}-trees.csv"`);
    const lines = response.body.split('\r\n');
    // The attributes in the order the collection's definition is stored in.
    assert.equal(lines[0], 'fid,age,kind,name,alive,height,planted,WKT');
    assert.equal(lines.length, 252, 'header, 250 rows, and the last line end');
    assert.equal(lines[251], '');
    assert.match(lines[1]!, /^\d+,0,oak,tree 0,false,0\.5,2024-01-01T00:00:00\.000Z,POINT\(8\.6 50\)$/);
    assert.match(lines[4]!, /^\d+,3,oak,tree 3,true,3\.5,,POINT\(8\.63 50\)$/, 'a null is an empty field');
    assert.match(lines[8]!, /^\d+,7,lime,"the ""old"", crooked one",false,7\.5,2024-01-08T00:00:00\.000Z,POINT\(8\.67 50\)$/);
    const file = saved('trees.csv', response.rawPayload);
    const info = ogrinfo('-al', '-so', file);
    assert.match(info, /Feature Count: 250/);
    const eighth = ogrinfo('-al', '-where', "age = '7'", file);
    assert.match(eighth, /POINT \(8\.67 50(\.0)?\)/, 'GDAL takes the WKT column as the geometry');
    assert.match(eighth, /the "old", crooked one/);
  });

  it('the GeoPackage: every collection a layer in its storage CRS, with its attributes and fids; GDAL opens it; its file is gone afterwards', async () => {
    const response = await get(open, '/download.gpkg');
    assert.equal(response.statusCode, 200, response.body.slice(0, 300));
    assert.equal(response.headers['content-type'], 'application/geopackage+sqlite3');
    assert.equal(response.headers['content-disposition'], `attachment; filename="${stem}.gpkg"`);
    assert.equal(Number(response.headers['content-length']), response.rawPayload.length);
    const file = saved('green.gpkg', response.rawPayload);
    const layers = ogrinfo(file);
    assert.match(layers, /1: masts \(Point\)/);
    assert.match(layers, /2: trees \(Point\)/);
    const trees = ogrinfo('-so', file, 'trees');
    assert.match(trees, /Feature Count: 250/);
    for (const column of ['name: String', 'kind: String', 'height: Real', 'age: Integer64', 'alive: Integer\\(Boolean\\)', 'planted: DateTime']) {
      assert.match(trees, new RegExp(column));
    }
    assert.match(ogrinfo('-so', file, 'masts'), /ID\["EPSG",25832\]/);
    assert.match(ogrinfo(file, 'trees', '-where', "name = 'tree 42'"), /POINT \(8\.77 50\.01\)/);
    await waitFor(() => madeFiles().length === 0, 'the made GeoPackage is deleted once sent');
  });

  it('validators from the data\'s last change: 304 for the current ETag or date; a write moves both; HEAD makes nothing', async () => {
    const first = await get(open, '/collections/trees/download.geojson');
    const etag = String(first.headers.etag);
    const unchanged = await get(open, '/collections/trees/download.geojson', { 'if-none-match': etag });
    assert.equal(unchanged.statusCode, 304);
    assert.equal(unchanged.body, '');
    assert.equal(unchanged.headers.etag, etag);
    assert.equal((await get(open, '/download.gpkg', { 'if-none-match': etag })).statusCode, 304, 'the GeoPackage is not made for a client that holds it');
    await sleep(1100);
    const settled = await get(open, '/collections/masts/download.csv');
    const lastModified = String(settled.headers['last-modified']);
    assert.ok(Date.parse(lastModified) <= Date.now(), lastModified);
    assert.equal((await get(open, '/collections/masts/download.csv', { 'if-modified-since': lastModified })).statusCode, 304);

    assert.equal((await open.request('POST', '/collections/masts/items', { type: 'FeatureCollection', features: [
      { type: 'Feature', geometry: { type: 'Point', coordinates: [478000, 5552000] }, properties: { label: 'middle' } },
    ] })).statusCode, 201);
    const moved = await get(open, '/collections/trees/download.geojson', { 'if-none-match': etag });
    assert.equal(moved.statusCode, 200, 'a write to any collection of the API moves the ETag');
    assert.notEqual(moved.headers.etag, etag);
    const head = await open.request('HEAD', '/download.gpkg', undefined, { authorization: null });
    assert.equal(head.statusCode, 200);
    assert.equal(head.headers['content-disposition'], `attachment; filename="${stem}.gpkg"`);
    assert.deepEqual(madeFiles(), [], 'a HEAD makes no GeoPackage');
  });

  it('authorization is the payload\'s: a closed dataset asks for a token and is never cached; unknown paths and other methods are refused', async () => {
    assert.equal((await get(closed, '/download.gpkg')).statusCode, 401);
    assert.equal((await get(closed, '/collections/secrets/download.csv')).statusCode, 401);
    const allowed = await closed.request('GET', '/collections/secrets/download.csv');
    assert.equal(allowed.statusCode, 200);
    assert.equal(allowed.headers['cache-control'], 'private, no-store');
    assert.equal(allowed.body.split('\r\n').length, 5);
    const unknown = await get(open, '/collections/nothing/download.csv');
    assert.equal(unknown.statusCode, 404);
    assert.equal(unknown.json().type, 'urn:platform:error:NOT_FOUND');
    assert.equal((await get(open, '/collections/trees/download.xml')).statusCode, 404);
    const post = await open.request('POST', '/download.gpkg', {});
    assert.equal(post.statusCode, 405);
    const empty = await publishDataset(t, { standard: 'OWS', slug: 'empty', openDataAccess: true });
    assert.equal((await get(empty, '/download.gpkg')).statusCode, 404, 'no collections, no GeoPackage');
  });

  it('a client that goes away while its GeoPackage is made: the build stops and its file is deleted; the next request gets a whole one', async () => {
    process.env.OGR2OGR_PATH = slowOgr2ogr;
    try {
      const leaving = new AbortController();
      const request = fetch(`${dataApiUrl}${open.base}/download.gpkg`, { signal: leaving.signal });
      await waitFor(() => madeFiles().length === 1, 'the build started');
      leaving.abort();
      await assert.rejects(request);
      await waitFor(() => madeFiles().length === 0 && !ogr2ogrRunning(slowOgr2ogr), 'the build stopped and its folder is gone');
    } finally {
      delete process.env.OGR2OGR_PATH;
    }
    const whole = await fetch(`${dataApiUrl}${open.base}/download.gpkg`);
    assert.equal(whole.status, 200);
    assert.match(ogrinfo(saved('again.gpkg', Buffer.from(await whole.arrayBuffer()))), /2: trees \(Point\)/);
  });

  it('the process making the GeoPackage killed (SIGKILL): the request answers 500, nothing is left behind, the next request succeeds', async () => {
    process.env.OGR2OGR_PATH = slowOgr2ogr;
    try {
      const request = fetch(`${dataApiUrl}${open.base}/download.gpkg`);
      await waitFor(() => ogr2ogrRunning(slowOgr2ogr), 'the build started');
      spawnSync('pkill', ['-KILL', '-f', slowOgr2ogr]);
      const answer = await request;
      assert.equal(answer.status, 500);
      assert.equal(((await answer.json()) as Json).type, 'urn:platform:error:INTERNAL');
      await waitFor(() => madeFiles().length === 0, 'its folder is gone');
    } finally {
      delete process.env.OGR2OGR_PATH;
    }
    assert.equal((await fetch(`${dataApiUrl}${open.base}/download.gpkg`)).status, 200);
  });

  it('a collection dropped in the middle of its download: the transfer breaks off, it never ends as a whole file', async () => {
    assert.equal((await open.request('POST', '/collections', { name: 'doomed', geometryType: 'Point', properties: { n: 'integer' } })).statusCode, 201);
    // More than the sockets' buffers hold: the server waits for the reader between batches.
    await sql`insert into ${sql.id(`ds_${open.datasetId.replaceAll('-', '')}`, 'doomed')} (geom, n)
      select st_setsrid(st_makepoint(8 + i / 1e6, 50), 4326), i from generate_series(1, 200000) i`.execute(t.ctx.db);
    const response = await fetch(`${dataApiUrl}${open.base}/collections/doomed/download.geojson`);
    assert.equal(response.status, 200);
    const reader = response.body!.getReader();
    const first = await reader.read();
    assert.ok(first.value && first.value.length > 0);
    assert.equal((await open.request('DELETE', '/collections/doomed')).statusCode, 204);
    let received = Buffer.from(first.value);
    const rest = (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        received = Buffer.concat([received, Buffer.from(value)]);
      }
    })();
    await assert.rejects(rest, 'the body breaks off instead of ending');
    assert.throws(() => JSON.parse(received.toString()), 'what arrived is not a whole GeoJSON document');
  });
});

function ogr2ogrRunning(wrapper: string): boolean {
  return spawnSync('pgrep', ['-f', wrapper]).status === 0;
}

async function waitFor(done: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > until) assert.fail(`timed out waiting: ${what}`);
    await sleep(20);
  }
}
