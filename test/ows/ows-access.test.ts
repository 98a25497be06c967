import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { bearer, expectHtml401, expectProblem, grant, uniqueEmail } from '../helpers/factories.js';
import { publishDataset, waitForNoSaga, waitForRoute, type PublishedDataset } from '../helpers/sta-dataset.js';
import { eventually, request, startDataApiBeside } from '../faults/harness.js';
import { decodePng, isGreen, isRed, ogc, parseXml, plantTrees, squareStyle } from './ows-helpers.js';
import { missing, requireMapServer, requirePostgis } from '../helpers/requirements.js';

const postgis = await requirePostgis();
const skip = missing(requireMapServer(), postgis);

const CAPABILITIES = { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetCapabilities' };
const as = (token: string | null) => ({ authorization: token === null ? null : `Bearer ${token}` });
const transaction = `<?xml version="1.0"?>
<wfs:Transaction service="WFS" version="2.0.0" xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:fes="http://www.opengis.net/fes/2.0">
  <wfs:Delete typeName="trees"><fes:Filter><fes:ResourceId rid="trees.1"/></fes:Filter></wfs:Delete>
</wfs:Transaction>`;
const postedGetFeature = `<wfs:GetFeature service="WFS" version="2.0.0" outputFormat="application/json" xmlns:wfs="http://www.opengis.net/wfs/2.0"><wfs:Query typeNames="{type}"/></wfs:GetFeature>`;

describe('OWS authorization and faults (postgres, real MapServer)', { skip }, () => {
  let t: TestApp;
  let closed: PublishedDataset;
  let open: PublishedDataset;
  before(async () => {
    t = await buildTestApp('postgres');
    closed = await publishDataset(t, { standard: 'OWS', slug: 'closed', styles: [{ name: 'red', sldContent: squareStyle('trees', '#ff0000') }] });
    open = await publishDataset(t, { standard: 'OWS', slug: 'open', openDataAccess: true });
    await plantTrees(closed);
    await plantTrees(open);
  });
  after(() => t?.close());

  test('anonymous: OGC reads of open data pass (GET and XML POST); a closed dataset and every write answer 401', async () => {
    assert.equal((await ogc(open, CAPABILITIES, as(null))).statusCode, 200);
    const posted = await open.request('POST', '', postedGetFeature.replace('{type}', 'open:trees'), { authorization: null, 'content-type': 'text/xml' });
    assert.equal(posted.statusCode, 200, posted.body.slice(0, 300));
    assert.equal(posted.json().features.length, 3);
    const form = await open.request('POST', '', new URLSearchParams(CAPABILITIES).toString(), { authorization: null, 'content-type': 'application/x-www-form-urlencoded' });
    assert.equal(form.statusCode, 200, form.body.slice(0, 300));
    parseXml(form);

    expectHtml401(await ogc(closed, CAPABILITIES, as(null)));
    expectHtml401(await open.request('POST', '', transaction, { authorization: null, 'content-type': 'text/xml' }));
    expectHtml401(await ogc(open, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'Transaction' }, as(null)));
    expectHtml401(await open.request('POST', '/collections', { name: 'x', geometryType: 'Point', properties: {} }, { authorization: null }));
  });

  test('no permission on the dataset: 404; it can see it but lacks the payload permission: 403; DATASET_PAYLOAD_READ reads but does not write', async () => {
    const stranger = await t.tokenFor(uniqueEmail('stranger'));
    expectProblem(await ogc(closed, CAPABILITIES, as(stranger)), 404, 'NOT_FOUND');
    const metadataOnly = await grant(t, uniqueEmail('meta'), ['DATASET_READ'], { scopeType: 'DATASET', scopeId: closed.datasetId });
    assert.match(expectProblem(await ogc(closed, CAPABILITIES, as(metadataOnly)), 403, 'ACCESS_DENIED').detail, /DATASET_PAYLOAD_READ/);

    const reader = await grant(t, uniqueEmail('reader'), ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: closed.datasetId });
    assert.equal((await ogc(closed, CAPABILITIES, as(reader))).statusCode, 200);
    const map = await ogc(closed, { SERVICE: 'WMS', VERSION: '1.3.0', REQUEST: 'GetMap', LAYERS: 'trees', STYLES: '', CRS: 'EPSG:4326', BBOX: '50.0,8.55,50.25,8.75', WIDTH: '50', HEIGHT: '50', FORMAT: 'image/png' }, as(reader));
    assert.ok(decodePng(map).count(isRed) > 0);
    // A WFS-T Transaction is a write whatever its method; MapServer does not do WFS-T, so a writer gets its exception report.
    assert.match(expectProblem(await closed.request('POST', '', transaction, { ...as(reader), 'content-type': 'text/xml' }), 403, 'ACCESS_DENIED').detail, /DATASET_PAYLOAD_WRITE/);
    assert.match(expectProblem(await closed.request('POST', '/collections', { name: 'x', geometryType: 'Point', properties: {} }, as(reader)), 403, 'ACCESS_DENIED').detail, /DATASET_PAYLOAD_WRITE/);

    const writer = await grant(t, uniqueEmail('writer'), ['DATASET_PAYLOAD_WRITE'], { scopeType: 'DATASET', scopeId: closed.datasetId });
    assert.match(expectProblem(await ogc(closed, CAPABILITIES, as(writer)), 403, 'ACCESS_DENIED').detail, /DATASET_PAYLOAD_READ/);
    const refusedByMapServer = await closed.request('POST', '', transaction, { ...as(writer), 'content-type': 'text/xml' });
    assert.equal(refusedByMapServer.statusCode, 400, refusedByMapServer.body.slice(0, 300));
    assert.match(refusedByMapServer.body, /ExceptionReport/);
    // Open data: any valid token reads; writing still needs the permission.
    assert.equal((await ogc(open, CAPABILITIES, as(stranger))).statusCode, 200);
    assert.match(expectProblem(await open.request('POST', '', transaction, { ...as(stranger), 'content-type': 'text/xml' }), 403, 'ACCESS_DENIED').detail, /DATASET_PAYLOAD_WRITE/);
  });

  test('a MapServer worker killed with SIGKILL is replaced, and requests keep being answered', async () => {
    assert.equal((await ogc(closed, CAPABILITIES)).statusCode, 200);
    const before = t.ctx.ows.workerPids();
    assert.equal(before.length, t.ctx.config.ows.workers);
    process.kill(before[0]!, 'SIGKILL');
    await eventually('a replacement worker', 5_000, () => {
      const now = t.ctx.ows.workerPids();
      return now.length === before.length && !now.includes(before[0]!) ? now : undefined;
    });
    for (let i = 0; i < 10; i += 1) assert.equal((await ogc(closed, CAPABILITIES)).statusCode, 200);
    // Not a process per request: the same workers answered all ten.
    assert.equal(t.ctx.ows.workerPids().length, before.length);
  });

  test('a collection created through one gateway process shows in another process\'s WFS within a second', async () => {
    const { server, url } = await startDataApiBeside(t);
    try {
      const capabilities = async () => (await request(`${url}${closed.base}?SERVICE=WFS&VERSION=2.0.0&REQUEST=GetCapabilities`, { token: t.adminToken })).body as string;
      assert.match(await capabilities(), /closed:trees/);
      assert.doesNotMatch(await capabilities(), /closed:poles/);
      const created = await closed.request('POST', '/collections', { name: 'poles', geometryType: 'Point', properties: {} });
      assert.equal(created.statusCode, 201);
      const started = Date.now();
      await eventually('the other process to list the new collection', 3_000, async () => (/closed:poles/.test(await capabilities()) ? true : undefined));
      assert.ok(Date.now() - started < 1_500, `took ${Date.now() - started} ms`);
    } finally {
      await server.kill('SIGTERM');
    }
  });

  test('unreleasing removes the API\'s map from MapServer\'s config; a style changed while DRAFT draws after the next release', async () => {
    const dataset = await publishDataset(t, { standard: 'OWS', slug: 'fleeting', styles: [{ name: 'look', sldContent: squareStyle('trees', '#ff0000') }] });
    await plantTrees(dataset);
    const map = { SERVICE: 'WMS', VERSION: '1.3.0', REQUEST: 'GetMap', LAYERS: 'trees', STYLES: '', CRS: 'EPSG:4326', BBOX: '50.0,8.55,50.25,8.75', WIDTH: '50', HEIGHT: '50', FORMAT: 'image/png' };
    assert.ok(decodePng(await ogc(dataset, map)).count(isRed) > 0);
    const configFile = t.ctx.ows.configFile()!;
    const alias = `ds_${dataset.datasetId.replaceAll('-', '')}_fleeting`;
    assert.match(readFileSync(configFile, 'utf8'), new RegExp(alias));

    const unreleased = await t.app.inject({ method: 'POST', url: `/v1/datasets/${dataset.datasetId}/unrelease`, headers: bearer(t.adminToken) });
    assert.equal(unreleased.statusCode, 202, unreleased.body);
    await waitForNoSaga(t, dataset.datasetId);
    await waitForRoute(() => ogc(dataset, CAPABILITIES), (status) => status === 404);
    // Unregistered first, then its folder deleted.
    await eventually('the map to be unregistered and deleted', 3_000, () =>
      (readFileSync(configFile, 'utf8').includes(alias) || existsSync(path.join(path.dirname(configFile), alias)) ? undefined : true));

    const styles = await t.app.inject({ method: 'GET', url: `/v1/datasets/${dataset.datasetId}/styles`, headers: bearer(t.adminToken) });
    const styleId = styles.json().content[0].id;
    const restyled = await t.app.inject({
      method: 'PUT', url: `/v1/datasets/${dataset.datasetId}/styles/${styleId}`, headers: bearer(t.adminToken),
      payload: { name: 'look', sldContent: squareStyle('trees', '#00ff00') },
    });
    assert.equal(restyled.statusCode, 200, restyled.body);
    const released = await t.app.inject({ method: 'POST', url: `/v1/datasets/${dataset.datasetId}/release`, headers: bearer(t.adminToken) });
    assert.equal(released.statusCode, 202, released.body);
    await waitForNoSaga(t, dataset.datasetId);
    await waitForRoute(() => ogc(dataset, CAPABILITIES), (status) => status === 200);
    const redrawn = decodePng(await ogc(dataset, map));
    assert.ok(redrawn.count(isGreen) > 0);
    assert.equal(redrawn.count(isRed), 0);
  });
});

// PostGIS still needed: without it every OWS request answers 503 for want of PostGIS, before MapServer is looked for.
describe('OWS without MapServer', { skip: missing(postgis) }, () => {
  let t: TestApp;
  let ows: PublishedDataset;
  const saved = process.env.MAPSERV_PATH;
  before(async () => {
    process.env.MAPSERV_PATH = '/nonexistent/mapserv';
    t = await buildTestApp('postgres');
    ows = await publishDataset(t, { standard: 'OWS', slug: 'bare' });
  });
  after(async () => {
    if (saved === undefined) delete process.env.MAPSERV_PATH;
    else process.env.MAPSERV_PATH = saved;
    await t?.close();
  });

  test('OGC requests answer 503 naming the packages to install; the feature collections still work', async () => {
    const refused = expectProblem(await ogc(ows, CAPABILITIES), 503, 'SERVICE_UNAVAILABLE');
    assert.match(refused.detail, /MapServer/);
    assert.match(refused.detail, /cgi-mapserver/);
    const created = await ows.request('POST', '/collections', { name: 'trees', geometryType: 'Point', properties: {} });
    assert.equal(created.statusCode, 201, created.body);
  });
});
