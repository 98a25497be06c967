import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { TestApp } from '../helpers/test-app.js';
import { bearer } from '../helpers/factories.js';
import { publishDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { DEBIAN_PYTHON, missing, requireGdal, requirePostgis, requirePythonModule } from '../helpers/requirements.js';
import { REPOSITORY } from '../helpers/repository.js';
import { listeningOwsApp } from './ows-helpers.js';

const run = promisify(execFile);
type Json = Record<string, any>;
const clients = path.join(REPOSITORY, 'test', 'ows', 'clients');

const skip = missing(await requirePostgis(), requireGdal(), requirePythonModule('owslib', 'python3-owslib'));
const skipQgis = skip || missing(requirePythonModule('qgis.core', 'python3-qgis'));

const KINDS = ['oak', 'lime', 'birch'];
/** 150 trees: more than one page of GDAL's and QGIS's default page size, so that they follow next links. */
const TREES = Array.from({ length: 150 }, (_, i) => ({
  type: 'Feature', geometry: { type: 'Point', coordinates: [8.6 + (i % 15) * 0.01, 50 + Math.floor(i / 15) * 0.01] },
  properties: { name: `tree ${i}`, kind: KINDS[i % 3], height: i / 10, planted: new Date(Date.UTC(2024, 0, 1 + i)).toISOString() },
}));

/**
 * Today's GIS clients read our OGC API – Features as they read any: GDAL's OAPIF driver, OWSLib's
 * ogcapi.features, QGIS's OAPIF provider (headless), the open API anonymously, a protected one with
 * a personal access token.
 */
describe('GIS clients read OGC API – Features (postgres, PostGIS, GDAL, OWSLib, QGIS)', { skip }, () => {
  let t: TestApp;
  let dataApiUrl: string;
  let open: PublishedDataset;
  let closed: PublishedDataset;
  let workDir: string;
  before(async () => {
    ({ t, dataApiUrl } = await listeningOwsApp());
    workDir = await mkdtemp(path.join(tmpdir(), 'oapif-'));
    open = await publishDataset(t, { standard: 'OWS', slug: 'green', openDataAccess: true });
    closed = await publishDataset(t, { standard: 'OWS', slug: 'private' });
    for (const dataset of [open, closed]) {
      const created = await dataset.request('POST', '/collections', { name: 'trees', title: 'Street trees', geometryType: 'Point', properties: { name: 'string', kind: 'string', height: 'number', planted: 'date-time' } });
      assert.equal(created.statusCode, 201, created.body);
      assert.equal((await dataset.request('POST', '/collections/trees/items', { type: 'FeatureCollection', features: TREES })).statusCode, 201);
    }
  });
  after(async () => {
    await t?.close();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  const urlOf = (dataset: PublishedDataset) => `${dataApiUrl}${dataset.base}`;
  const env = { PATH: process.env.PATH, HOME: '', QT_QPA_PLATFORM: 'offscreen', PYTHONDONTWRITEBYTECODE: '1' };
  const python = async (script: string, args: Json) => {
    const { stdout } = await run(DEBIAN_PYTHON, [path.join(clients, script), JSON.stringify(args)], { env: { ...env, HOME: workDir, XDG_RUNTIME_DIR: workDir }, maxBuffer: 16 * 1024 * 1024, timeout: 180_000 });
    return JSON.parse(stdout.trim().split('\n').at(-1)!) as Json;
  };
  const personalAccessToken = async () => {
    const created = await t.app.inject({ method: 'POST', url: '/v1/users/me/tokens', headers: bearer(t.adminToken), payload: { name: 'GIS', datasetIds: [closed.datasetId] } });
    assert.equal(created.statusCode, 201, created.body);
    return created.json().token as string;
  };

  it('GDAL (ogrinfo OAPIF:) lists the collection, counts every feature across pages, reads the fields and filters by a box', async () => {
    const ogrinfo = (args: string[], extra: Record<string, string> = {}) => run('ogrinfo', args, { env: { ...env, HOME: workDir, GDAL_HTTP_TIMEOUT: '30', ...extra }, maxBuffer: 16 * 1024 * 1024 });
    const listing = (await ogrinfo(['-ro', `OAPIF:${urlOf(open)}`])).stdout;
    assert.match(listing, /1: trees \(title: Street trees\) \(Point\)/, listing);
    const summary = (await ogrinfo(['-ro', '-so', `OAPIF:${urlOf(open)}`, 'trees'])).stdout;
    assert.match(summary, /Feature Count: 150/, summary);
    assert.match(summary, /kind: String/, summary);
    assert.match(summary, /height: Real/, summary);
    assert.match(summary, /planted: DateTime/, summary);
    const all = (await ogrinfo(['-ro', '-al', '-q', `OAPIF:${urlOf(open)}`, 'trees'])).stdout;
    assert.equal((all.match(/^OGRFeature\(trees\)/gm) ?? []).length, 150, 'every feature once across the pages');
    const boxed = (await ogrinfo(['-ro', '-al', '-q', '-spat', '8.595', '49.995', '8.615', '50.005', `OAPIF:${urlOf(open)}`, 'trees'])).stdout;
    assert.deepEqual([...boxed.matchAll(/name \(String\) = (.+)/g)].map((m) => m[1]).sort(), ['tree 0', 'tree 1']);
    const attribute = (await ogrinfo(['-ro', '-al', '-q', '-where', "kind = 'oak'", `OAPIF:${urlOf(open)}`, 'trees'])).stdout;
    assert.equal((attribute.match(/^OGRFeature\(trees\)/gm) ?? []).length, 50);
    // A protected API: the token as a bearer header (GDAL_HTTP_HEADERS) or as the Basic password.
    const token = await personalAccessToken();
    await assert.rejects(ogrinfo(['-ro', '-so', `OAPIF:${urlOf(closed)}`, 'trees']));
    assert.match((await ogrinfo(['-ro', '-so', `OAPIF:${urlOf(closed)}`, 'trees'], { GDAL_HTTP_HEADERS: `Authorization: Bearer ${token}` })).stdout, /Feature Count: 150/);
    assert.match((await ogrinfo(['-ro', '-so', `OAPIF:${urlOf(closed)}`, 'trees'], { GDAL_HTTP_AUTH: 'BASIC', GDAL_HTTP_USERPWD: `gis:${token}` })).stdout, /Feature Count: 150/);
  });

  it('OWSLib reads conformance, collections, a collection, its queryables and items (a bbox, a CQL2 filter)', async () => {
    const read = await python('owslib_ogcapi.py', { url: urlOf(open), token: null, collection: 'trees', bbox: [8.595, 49.995, 8.615, 50.005] });
    assert.ok(read.conformsTo.includes('http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core'));
    assert.deepEqual(read.collections, ['trees']);
    assert.equal(read.collection.title, 'Street trees');
    assert.deepEqual(read.queryables, ['geometry', 'height', 'kind', 'name', 'planted']);
    assert.equal(read.numberMatched, 150);
    assert.equal(read.ids.length, 150);
    assert.deepEqual(read.boxed, ['tree 0', 'tree 1']);
    assert.equal(read.filtered, 50);
  });

  it('QGIS loads an OAPIF layer with every feature and its fields, filters by a box on the server; a protected one with a personal access token', { skip: skipQgis }, async () => {
    const layer = await python('qgis_oapif.py', { url: urlOf(open), typename: 'trees', rect: [8.595, 49.995, 8.615, 50.005] });
    assert.equal(layer.valid, true, layer.error);
    assert.equal(layer.count, 150);
    assert.equal(layer.fields.planted, 'QDateTime');
    assert.equal(layer.fields.height, 'double');
    assert.deepEqual(layer.inRect, ['tree 0', 'tree 1']);
    const refused = await python('qgis_oapif.py', { url: urlOf(closed), typename: 'trees', rect: [0, 0, 1, 1] });
    assert.equal(refused.valid, false, 'no token, no layer');
    const token = await personalAccessToken();
    const allowed = await python('qgis_oapif.py', { url: urlOf(closed), typename: 'trees', rect: [8.595, 49.995, 8.615, 50.005], user: 'qgis', password: token });
    assert.equal(allowed.valid, true, allowed.error);
    assert.equal(allowed.count, 150);
  });
});
