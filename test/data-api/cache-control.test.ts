import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { publishDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { missing, requireMapServer, requirePostgis } from '../helpers/requirements.js';
import { ogc } from '../ows/ows-helpers.js';

const PRIVATE = 'private, no-store';
const PUBLIC = 'public, max-age=60';

/**
 * The contract's caching rule, both standards alike: an answer for a dataset that is not open data
 * is never kept by a shared or browser cache; an open-data read may be kept a minute, with a
 * validator that a conditional GET answers 304 to.
 */
describe('Cache-Control of payload answers: SensorThings (PGlite)', () => {
  let t: TestApp;
  let closed: PublishedDataset;
  let open: PublishedDataset;
  before(async () => {
    t = await buildTestApp('pglite');
    closed = await publishDataset(t, { standard: 'STA', slug: 'closed' });
    open = await publishDataset(t, { standard: 'STA', slug: 'open', openDataAccess: true });
    for (const dataset of [closed, open]) assert.equal((await dataset.request('POST', '/Things', { name: 'pole 1', description: 'a pole' })).statusCode, 201);
  });
  after(async () => { await t?.close(); });

  test('an authenticated read of a dataset that is not open data: private, no-store, no validator', async () => {
    const response = await closed.request('GET', '/Things');
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.headers['cache-control'], PRIVATE);
    assert.equal(response.headers['etag'], undefined);
  });

  test('an open-data read, anonymous or with a token: public for a minute, with a validator a conditional GET answers 304 to', async () => {
    for (const authorization of [null, undefined]) {
      const response = await open.request('GET', '/Things', undefined, authorization === null ? { authorization: null } : {});
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(response.headers['cache-control'], PUBLIC);
      const etag = String(response.headers['etag']);
      assert.match(etag, /^W\/".+"$/);
      const again = await open.request('GET', '/Things', undefined, { authorization: null, 'if-none-match': etag });
      assert.equal(again.statusCode, 304);
      assert.equal(again.body, '');
      assert.equal(again.headers['cache-control'], PUBLIC);
    }
    // A changed answer has another validator: the old one gets the whole answer again.
    const before = await open.request('GET', '/Things', undefined, { authorization: null });
    assert.equal((await open.request('POST', '/Things', { name: 'pole 2', description: 'a pole' })).statusCode, 201);
    const after = await open.request('GET', '/Things', undefined, { authorization: null, 'if-none-match': String(before.headers['etag']) });
    assert.equal(after.statusCode, 200);
    assert.notEqual(after.headers['etag'], before.headers['etag']);
  });

  test('writes and errors on open data are not cached', async () => {
    const created = await open.request('POST', '/Things', { name: 'pole 3', description: 'a pole' });
    assert.equal(created.statusCode, 201);
    assert.equal(created.headers['cache-control'], PRIVATE);
    const missingThing = await open.request('GET', '/Things(999999)', undefined, { authorization: null });
    assert.equal(missingThing.statusCode, 404);
    assert.equal(missingThing.headers['cache-control'], PRIVATE);
  });
});

describe('Cache-Control of payload answers: OWS (postgres, real MapServer)', { skip: missing(requireMapServer(), await requirePostgis()) }, () => {
  let t: TestApp;
  let closed: PublishedDataset;
  let open: PublishedDataset;
  before(async () => {
    t = await buildTestApp('postgres');
    closed = await publishDataset(t, { standard: 'OWS', slug: 'closed' });
    open = await publishDataset(t, { standard: 'OWS', slug: 'open', openDataAccess: true });
    for (const dataset of [closed, open]) {
      assert.equal((await dataset.request('POST', '/collections', { name: 'poles', geometryType: 'Point', properties: { label: 'string' } })).statusCode, 201);
    }
  });
  after(async () => { await t?.close(); });

  const capabilities = { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetCapabilities' };

  test('WFS, WMS and the collection routes of a dataset that is not open data: private, no-store', async () => {
    for (const response of [
      await ogc(closed, capabilities),
      await ogc(closed, { SERVICE: 'WMS', VERSION: '1.3.0', REQUEST: 'GetCapabilities' }),
      await closed.request('GET', '/collections/poles'),
    ]) {
      assert.equal(response.statusCode, 200, response.body.slice(0, 300));
      assert.equal(response.headers['cache-control'], PRIVATE);
    }
  });

  test('open-data OWS reads are public for a minute, with a validator; an OGC error is not cached', async () => {
    const response = await ogc(open, capabilities, { authorization: null });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['cache-control'], PUBLIC);
    const again = await ogc(open, capabilities, { authorization: null, 'if-none-match': String(response.headers['etag']) });
    assert.equal(again.statusCode, 304);
    const refused = await ogc(open, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetFeature', TYPENAMES: 'open:nothing' }, { authorization: null });
    assert.equal(refused.statusCode, 400);
    assert.equal(refused.headers['cache-control'], PRIVATE);
  });
});
