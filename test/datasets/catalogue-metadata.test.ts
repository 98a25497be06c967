import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { bearer, expectFieldError, uniqueName } from '../helpers/factories.js';
import { waitForNoSaga } from '../helpers/sta-dataset.js';

/**
 * A dataset's `catalogue` member (the contract's "Open data"): stored, merge-patched wherever the
 * metadata is writable, each code checked against its EU table, and answered in every representation.
 */

type Json = Record<string, any>;
const EMPTY = { license: null, keywords: [], themes: [], contactEmail: null, accrualPeriodicity: null, hvdCategories: [], landingPage: null };
const FULL = {
  license: 'CC0', keywords: ['air quality', 'sensors'], themes: ['ENVI', 'TRAN'], contactEmail: 'opendata@example.org',
  accrualPeriodicity: 'CONT', hvdCategories: ['c_dd313021'], landingPage: 'https://example.org/air',
};

for (const kind of databaseKinds(import.meta.url)) {
  describe(`dataset catalogue metadata (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());

    const call = (method: 'GET' | 'POST' | 'PUT' | 'PATCH', url: string, payload?: unknown) =>
      t.app.inject({ method, url, headers: bearer(t.adminToken), ...(payload === undefined ? {} : { payload: payload as Json }) });
    const ok = async (method: 'GET' | 'POST' | 'PUT' | 'PATCH', url: string, payload?: unknown, status = method === 'POST' ? 201 : 200) => {
      const response = await call(method, url, payload);
      assert.equal(response.statusCode, status, response.body);
      return response.json();
    };
    const newDataset = async (fields: Json = {}) => {
      const dataset = await ok('POST', '/v1/datasets', { name: uniqueName('Air'), description: 'Air quality', ...fields });
      return waitForNoSaga(t, dataset.id);
    };

    it('is empty by default, stored as sent on create, and read back by GET and the list', async () => {
      assert.deepEqual((await newDataset()).catalogue, EMPTY);
      const created = await newDataset({ catalogue: FULL });
      assert.deepEqual(created.catalogue, FULL);
      assert.deepEqual((await ok('GET', `/v1/datasets/${created.id}`)).catalogue, FULL);
      const listed = await ok('GET', `/v1/datasets?q=${encodeURIComponent(created.name)}`);
      assert.deepEqual(listed.content.find((dataset: Json) => dataset.id === created.id).catalogue, FULL);
    });

    it('merges as a patch on PATCH and PUT of a DRAFT dataset: members left out stay, null clears one, lists are replaced', async () => {
      const dataset = await newDataset({ catalogue: FULL });
      const patched = await ok('PATCH', `/v1/datasets/${dataset.id}`, { catalogue: { themes: ['ECON'], license: null, keywords: null } });
      assert.deepEqual(patched.catalogue, { ...FULL, themes: ['ECON'], license: null, keywords: [] });
      // A client that knows nothing of the member (the portal's PUT) keeps it.
      const replaced = await ok('PUT', `/v1/datasets/${dataset.id}`, { name: dataset.name, description: 'Changed' });
      assert.deepEqual(replaced.catalogue, patched.catalogue);
      const merged = await ok('PUT', `/v1/datasets/${dataset.id}`, { name: dataset.name, description: 'Changed', catalogue: { accrualPeriodicity: 'DAILY' } });
      assert.deepEqual(merged.catalogue, { ...patched.catalogue, accrualPeriodicity: 'DAILY' });
    });

    it('is writable by the READY and released metadata updates, and a merge patch moves nothing else', async () => {
      const dataset = await newDataset({ namedApis: [{ name: 'Sensors', slug: 'sensors', standard: 'STA' }], catalogue: { themes: ['ENVI'] } });
      await ok('POST', `/v1/datasets/${dataset.id}/stage`, undefined, 200);
      const ready = await ok('PATCH', `/v1/datasets/${dataset.id}/ready/meta`, { catalogue: { keywords: ['noise'] } });
      assert.deepEqual(ready.catalogue, { ...EMPTY, themes: ['ENVI'], keywords: ['noise'] });
      await ok('POST', `/v1/datasets/${dataset.id}/release`, undefined, 202);
      await waitForNoSaga(t, dataset.id);
      const released = await ok('PUT', `/v1/datasets/${dataset.id}/released/meta`, { catalogue: { hvdCategories: ['c_b79e35eb'], landingPage: 'http://example.org/noise?x=1' } });
      assert.deepEqual(released.catalogue, { ...ready.catalogue, hvdCategories: ['c_b79e35eb'], landingPage: 'http://example.org/noise?x=1' });
      assert.equal(released.name, dataset.name);
      assert.equal(released.dataSetStatus, 'AVAILABLE');
    });

    it('refuses a code not in its EU table with 400 naming the field, and stores nothing of the request', async () => {
      const dataset = await newDataset({ catalogue: FULL });
      const cases: Array<[Json, string]> = [
        [{ themes: ['ENVI', 'WEATHER'] }, 'catalogue.themes[1]'],
        [{ license: 'CC-BY-4.0' }, 'catalogue.license'],
        [{ accrualPeriodicity: 'SOMETIMES' }, 'catalogue.accrualPeriodicity'],
        [{ hvdCategories: ['c_00000000'] }, 'catalogue.hvdCategories[0]'],
      ];
      for (const [catalogue, field] of cases) {
        const body = expectFieldError(await call('PATCH', `/v1/datasets/${dataset.id}`, { description: 'must not be stored', catalogue }), field);
        assert.match(body.fieldErrors[0].message, /EU table http:\/\/(publications\.europa\.eu|data\.europa\.eu)\//, JSON.stringify(body));
      }
      expectFieldError(await call('POST', '/v1/datasets', { name: uniqueName('Bad'), description: 'x', catalogue: { themes: ['NOPE'] } }), 'catalogue.themes[0]');
      const unchanged = await ok('GET', `/v1/datasets/${dataset.id}`);
      assert.deepEqual(unchanged.catalogue, FULL);
      assert.equal(unchanged.description, 'Air quality');
    });

    it('refuses wrong shapes: unknown members, too many or too long keywords, a relative landing page, a bad e-mail address', async () => {
      const dataset = await newDataset();
      const cases: Array<[unknown, string]> = [
        [{ title: 'x' }, 'catalogue.title'],
        [{ keywords: Array.from({ length: 51 }, (_, i) => `k${i}`) }, 'catalogue.keywords'],
        [{ keywords: ['ok', 'x'.repeat(101)] }, 'catalogue.keywords[1]'],
        [{ keywords: [''] }, 'catalogue.keywords[0]'],
        [{ landingPage: '/air' }, 'catalogue.landingPage'],
        [{ landingPage: 'ftp://example.org/air' }, 'catalogue.landingPage'],
        [{ contactEmail: 'not an address' }, 'catalogue.contactEmail'],
        [{ themes: 'ENVI' }, 'catalogue.themes'],
        ['CC0', 'catalogue'],
      ];
      for (const [catalogue, field] of cases) expectFieldError(await call('PATCH', `/v1/datasets/${dataset.id}`, { catalogue }), field);
      assert.deepEqual((await ok('GET', `/v1/datasets/${dataset.id}`)).catalogue, EMPTY);
    });

    it('keeps each list free of repeats', async () => {
      const dataset = await newDataset({ catalogue: { themes: ['ENVI', 'ENVI'], keywords: ['a', 'a', 'b'] } });
      assert.deepEqual(dataset.catalogue.themes, ['ENVI']);
      assert.deepEqual(dataset.catalogue.keywords, ['a', 'b']);
    });
  });
}
