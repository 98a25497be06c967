import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectFieldError, expectProblem, grant, uniqueEmail, uniqueName } from '../helpers/factories.js';
import { datasetParts, sta, type Json } from './dataset-parts.fixture.js';

/** /v1/datasets/{dataSetId}/styles: CRUD, SLD checks, names, DRAFT-only writes, inUse, authorization. */

const sld = (layer = 'roads') => `<?xml version="1.0" encoding="UTF-8"?>
<!-- a road style -->
<sld:StyledLayerDescriptor version="1.0.0" xmlns:sld="http://www.opengis.net/sld" xmlns:ogc="http://www.opengis.net/ogc">
  <sld:NamedLayer><sld:Name>${layer}</sld:Name>
    <sld:UserStyle><sld:FeatureTypeStyle><sld:Rule><sld:LineSymbolizer/></sld:Rule></sld:FeatureTypeStyle></sld:UserStyle>
  </sld:NamedLayer>
</sld:StyledLayerDescriptor>`;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`styles (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());
    const { call, ok, newDataset, stage, release, unrelease } = datasetParts(() => t);
    const stylesOf = (datasetId: string) => `/v1/datasets/${datasetId}/styles`;

    it('creates (201, Location, ETag), reads, lists (paged and sorted in SQL), replaces, patches and deletes (204)', async () => {
      const dataset = await newDataset();
      const response = await call('POST', stylesOf(dataset.id), { name: 'roads_Main-1', sldContent: sld() });
      assert.equal(response.statusCode, 201, response.body);
      const style = response.json();
      assert.equal(response.headers['location'], `${t.ctx.config.api.baseUrl}/v1/datasets/${dataset.id}/styles/${style.id}`);
      assert.ok(response.headers['etag']);
      assert.deepEqual(
        { ...style, id: undefined, createdAt: undefined, modifiedAt: undefined },
        { id: undefined, dataSetId: dataset.id, name: 'roads_Main-1', sldContent: sld(), inUse: false, createdAt: undefined, modifiedAt: undefined },
      );
      // A bare root element without a prefix is as good.
      const other = await ok('POST', stylesOf(dataset.id), { name: 'areas', sldContent: '<StyledLayerDescriptor version="1.0.0"/>' });
      assert.deepEqual(await ok('GET', `${stylesOf(dataset.id)}/${style.id}`), style);

      const page = await ok('GET', `${stylesOf(dataset.id)}?sort=name,asc&size=1`);
      assert.deepEqual([page.totalElements, page.totalPages, page.content.map((s: Json) => s.id)], [2, 2, [other.id]]);
      assert.deepEqual((await ok('GET', `${stylesOf(dataset.id)}?sort=name,asc&size=1&page=1`)).content.map((s: Json) => s.id), [style.id]);
      assert.deepEqual((await ok('GET', `${stylesOf(dataset.id)}?name=ROADS`)).content.map((s: Json) => s.id), [style.id]);
      expectFieldError(await call('GET', `${stylesOf(dataset.id)}?sort=sldContent,asc`), 'sort');

      const replaced = await ok('PUT', `${stylesOf(dataset.id)}/${style.id}`, { name: 'roads', sldContent: sld('streets') });
      assert.deepEqual([replaced.name, replaced.sldContent], ['roads', sld('streets')]);
      const patched = await ok('PATCH', `${stylesOf(dataset.id)}/${style.id}`, { sldContent: sld('lanes') });
      assert.deepEqual([patched.name, patched.sldContent], ['roads', sld('lanes')]);
      expectFieldError(await call('PUT', `${stylesOf(dataset.id)}/${style.id}`, { name: 'roads' }), 'sldContent');

      // If-Match: a stale ETag answers 412, the current one passes.
      const stale = (await call('GET', `${stylesOf(dataset.id)}/${other.id}`)).headers['etag'] as string;
      await ok('PATCH', `${stylesOf(dataset.id)}/${other.id}`, { name: 'areas2' });
      expectProblem(await call('PATCH', `${stylesOf(dataset.id)}/${other.id}`, { name: 'areas3' }, t.adminToken, { 'if-match': stale }), 412, 'PRECONDITION_FAILED');
      expectProblem(await call('DELETE', `${stylesOf(dataset.id)}/${other.id}`, undefined, t.adminToken, { 'if-match': stale }), 412, 'PRECONDITION_FAILED');
      const fresh = (await call('GET', `${stylesOf(dataset.id)}/${other.id}`)).headers['etag'] as string;
      assert.equal((await call('DELETE', `${stylesOf(dataset.id)}/${other.id}`, undefined, t.adminToken, { 'if-match': fresh })).statusCode, 204);
      const gone = await call('DELETE', `${stylesOf(dataset.id)}/${style.id}`);
      assert.equal(gone.statusCode, 204);
      assert.equal(gone.body, '');
      expectProblem(await call('GET', `${stylesOf(dataset.id)}/${style.id}`), 404, 'NOT_FOUND');
      expectProblem(await call('DELETE', `${stylesOf(dataset.id)}/${style.id}`), 404, 'NOT_FOUND');
      assert.equal((await ok('GET', stylesOf(dataset.id))).totalElements, 0);
    });

    it('refuses a malformed SLD with its line and column, a wrong root element, and bad names (400 naming the field)', async () => {
      const dataset = await newDataset();
      const malformed = expectFieldError(await call('POST', stylesOf(dataset.id), {
        name: 'broken', sldContent: '<StyledLayerDescriptor>\n  <NamedLayer>\n</StyledLayerDescriptor>',
      }), 'sldContent');
      assert.match(malformed.detail, /not well-formed XML/);
      assert.match(malformed.fieldErrors[0].message, /line 3, column \d+/);
      const wrongRoot = expectFieldError(await call('POST', stylesOf(dataset.id), { name: 'wrong', sldContent: '<se:FeatureTypeStyle xmlns:se="x"/>' }), 'sldContent');
      assert.match(wrongRoot.fieldErrors[0].message, /root element is se:FeatureTypeStyle, not StyledLayerDescriptor/);
      expectFieldError(await call('POST', stylesOf(dataset.id), { name: 'text', sldContent: 'not xml at all' }), 'sldContent');
      expectFieldError(await call('POST', stylesOf(dataset.id), { name: 'two', sldContent: '<StyledLayerDescriptor/><StyledLayerDescriptor/>' }), 'sldContent');
      expectFieldError(await call('POST', stylesOf(dataset.id), { name: 'empty', sldContent: '' }), 'sldContent');
      expectFieldError(await call('POST', stylesOf(dataset.id), { name: 'has space', sldContent: sld() }), 'name');
      expectFieldError(await call('POST', stylesOf(dataset.id), { name: 'dot.ted', sldContent: sld() }), 'name');
      expectFieldError(await call('POST', stylesOf(dataset.id), { name: '', sldContent: sld() }), 'name');
      expectFieldError(await call('POST', stylesOf(dataset.id), { sldContent: sld() }), 'name');
      expectFieldError(await call('POST', stylesOf(dataset.id), { name: 'x', sldContent: sld(), inUse: true }), 'inUse');
      const style = await ok('POST', stylesOf(dataset.id), { name: 'good', sldContent: sld() });
      expectFieldError(await call('PATCH', `${stylesOf(dataset.id)}/${style.id}`, { sldContent: '<a>' }), 'sldContent');
      assert.equal((await ok('GET', `${stylesOf(dataset.id)}/${style.id}`)).sldContent, sld(), 'a refused change changes nothing');
      assert.equal((await ok('GET', stylesOf(dataset.id))).totalElements, 1);
    });

    it('keeps names unique within a dataset (409), not across datasets', async () => {
      const [one, two] = [await newDataset(), await newDataset()];
      const style = await ok('POST', stylesOf(one.id), { name: 'roads', sldContent: sld() });
      expectProblem(await call('POST', stylesOf(one.id), { name: 'roads', sldContent: sld() }), 409, 'UNIQUE_CONSTRAINT_VIOLATION');
      await ok('POST', stylesOf(two.id), { name: 'roads', sldContent: sld() });
      const other = await ok('POST', stylesOf(one.id), { name: 'rivers', sldContent: sld() });
      expectProblem(await call('PATCH', `${stylesOf(one.id)}/${other.id}`, { name: 'roads' }), 409, 'UNIQUE_CONSTRAINT_VIOLATION');
      // A style is found only under its own dataset.
      expectProblem(await call('GET', `${stylesOf(two.id)}/${style.id}`), 404, 'NOT_FOUND');
      expectProblem(await call('DELETE', `${stylesOf(two.id)}/${style.id}`), 404, 'NOT_FOUND');
    });

    it('writes need a DRAFT dataset: 400 DATASET_NOT_EDITABLE after stage ("unstage") and after release ("unrelease"); inUse while released with OWS', async () => {
      const dataset = await newDataset();
      const style = await ok('POST', stylesOf(dataset.id), { name: 'roads', sldContent: sld() });
      const item = `${stylesOf(dataset.id)}/${style.id}`;
      const writes = async (how: RegExp) => {
        for (const [method, url, body] of [
          ['POST', stylesOf(dataset.id), { name: 'more', sldContent: sld() }],
          ['PUT', item, { name: 'roads', sldContent: sld('x') }],
          ['PATCH', item, { name: 'renamed' }],
          ['DELETE', item, undefined],
        ] as const) {
          assert.match(expectProblem(await call(method, url, body), 400, 'DATASET_NOT_EDITABLE').detail, how, `${method} ${url}`);
        }
      };
      await stage(dataset.id);
      await writes(/unstage/);
      assert.equal((await ok('GET', item)).inUse, false, 'a READY dataset serves nothing');
      await ok('POST', `/v1/datasets/${dataset.id}/unstage`, undefined, 200);
      await release(dataset.id);
      await writes(/unrelease/);
      assert.equal((await ok('GET', item)).inUse, true);
      assert.equal((await ok('GET', stylesOf(dataset.id))).content[0].inUse, true);
      await unrelease(dataset.id);
      assert.equal((await ok('PATCH', item, { name: 'renamed' })).inUse, false);

      // A released dataset without an OWS API serves no style.
      const sensors = await newDataset({ namedApis: [sta()] });
      const sensorStyle = await ok('POST', stylesOf(sensors.id), { name: 'dots', sldContent: sld() });
      await release(sensors.id);
      assert.equal((await ok('GET', `${stylesOf(sensors.id)}/${sensorStyle.id}`)).inUse, false);
    });

    it('authorization is the dataset\'s: unreadable 404, read-only 403 on writes, a grant on the dataset or its datapool covers its styles', async () => {
      const dataset = await newDataset();
      const style = await ok('POST', stylesOf(dataset.id), { name: 'roads', sldContent: sld() });
      const item = `${stylesOf(dataset.id)}/${style.id}`;
      const elsewhere = await newDataset();
      const reader = await grant(t, uniqueEmail('reader'), ['DATASET_READ'], { scopeType: 'DATASET', scopeId: dataset.id });
      assert.equal((await call('GET', stylesOf(dataset.id), undefined, reader)).json().totalElements, 1);
      assert.equal((await call('GET', item, undefined, reader)).statusCode, 200);
      expectProblem(await call('POST', stylesOf(dataset.id), { name: 'mine', sldContent: sld() }, reader), 403, 'ACCESS_DENIED');
      expectProblem(await call('PUT', item, { name: 'mine', sldContent: sld() }, reader), 403, 'ACCESS_DENIED');
      expectProblem(await call('PATCH', item, { name: 'mine' }, reader), 403, 'ACCESS_DENIED');
      expectProblem(await call('DELETE', item, undefined, reader), 403, 'ACCESS_DENIED');
      for (const [method, url, body] of [
        ['GET', stylesOf(elsewhere.id), undefined],
        ['GET', `${stylesOf(elsewhere.id)}/${style.id}`, undefined],
        ['POST', stylesOf(elsewhere.id), { name: 'mine', sldContent: sld() }],
        ['GET', stylesOf(randomUUID()), undefined],
      ] as const) {
        expectProblem(await call(method, url, body, reader), 404, 'NOT_FOUND');
      }
      const nobody = await t.tokenFor(uniqueEmail('nobody'));
      expectProblem(await call('GET', item, undefined, nobody), 404, 'NOT_FOUND');
      expectProblem(await call('DELETE', item, undefined, nobody), 404, 'NOT_FOUND');
      const pool = (await ok('POST', '/v1/datapools', { name: uniqueName('pool'), description: 'd' }));
      const pooled = await newDataset({ datapoolId: pool.id });
      const owner = await grant(t, uniqueEmail('owner'), ['DATASET_READ', 'DATASET_UPDATE'], { scopeType: 'DATAPOOL', scopeId: pool.id });
      assert.equal((await call('POST', stylesOf(pooled.id), { name: 'mine', sldContent: sld() }, owner)).statusCode, 201);
      expectProblem(await call('POST', stylesOf(dataset.id), { name: 'mine', sldContent: sld() }, owner), 404, 'NOT_FOUND');
      expectFieldError(await call('GET', '/v1/datasets/not-a-uuid/styles'), 'dataSetId');
    });
  });
}
