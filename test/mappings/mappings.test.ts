import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectFieldError, expectProblem, grant, uniqueEmail } from '../helpers/factories.js';
import { datasetParts } from '../styles/dataset-parts.fixture.js';

/** /v1/datasets/{dataSetId}/mappings: URN scheme, versions, fetch, delete, references from pipelines, DRAFT-only writes, authorization. */

for (const kind of databaseKinds(import.meta.url)) {
  describe(`mappings (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());
    const { call, ok, newDataset, stage, release } = datasetParts(() => t);
    const mappingsOf = (datasetId: string) => `/v1/datasets/${datasetId}/mappings`;
    const withUrn = (datasetId: string, urn: string) => `${mappingsOf(datasetId)}?urn=${encodeURIComponent(urn)}`;

    it('create answers 200 with the URN pins of version 1; versions count up; fetch by logical URN gives the latest, by versioned URN that version', async () => {
      const dataset = await newDataset();
      const base = `urn:platform:mapping:${dataset.id}`;
      const document = { name: 'air_quality-1', fields: [{ from: 'pm10', to: 'PM10' }], nested: { a: 1 } };
      const pins = await ok('POST', mappingsOf(dataset.id), document, 200);
      assert.deepEqual(pins, { logicalUrn: `${base}:air_quality-1`, versionedUrn: `${base}:air_quality-1:1`, version: '1' });
      // Stored as sent: fetching gives back the document, its name included.
      assert.deepEqual(await ok('GET', withUrn(dataset.id, pins.logicalUrn)), document);

      const second = { logicalUrn: pins.logicalUrn, fields: [{ from: 'pm25', to: 'PM2.5' }] };
      assert.deepEqual(await ok('PUT', mappingsOf(dataset.id), second), { logicalUrn: pins.logicalUrn, versionedUrn: `${base}:air_quality-1:2`, version: '2' });
      assert.equal((await ok('PUT', mappingsOf(dataset.id), { logicalUrn: pins.logicalUrn, v: 3 })).version, '3');
      assert.deepEqual(await ok('GET', withUrn(dataset.id, pins.logicalUrn)), { logicalUrn: pins.logicalUrn, v: 3 });
      assert.deepEqual(await ok('GET', withUrn(dataset.id, `${base}:air_quality-1:2`)), second);
      assert.deepEqual(await ok('GET', withUrn(dataset.id, pins.versionedUrn)), document);

      const generated = await ok('POST', mappingsOf(dataset.id), { rules: [] }, 200);
      assert.match(generated.logicalUrn, new RegExp(`^${base}:[A-Za-z0-9_-]+$`));
      assert.equal(generated.versionedUrn, `${generated.logicalUrn}:1`);

      const list = await ok('GET', mappingsOf(dataset.id));
      const byUrn = new Map(list.mappings.map((m: { logicalUrn: string }) => [m.logicalUrn, m]));
      assert.equal(list.mappings.length, 2);
      assert.deepEqual(byUrn.get(pins.logicalUrn), {
        logicalUrn: pins.logicalUrn, latestVersionedUrn: `${base}:air_quality-1:3`, versionedUrns: [1, 2, 3].map((v) => `${base}:air_quality-1:${v}`),
      });
      assert.deepEqual(byUrn.get(generated.logicalUrn), { logicalUrn: generated.logicalUrn, latestVersionedUrn: generated.versionedUrn, versionedUrns: [generated.versionedUrn] });
      assert.deepEqual(await ok('GET', mappingsOf((await newDataset()).id)), { mappings: [] });
    });

    it('refuses a taken name (409), a bad name, a malformed URN or one of another dataset (400), and answers 404 for an unknown mapping or version', async () => {
      const [dataset, other] = [await newDataset(), await newDataset()];
      const pins = await ok('POST', mappingsOf(dataset.id), { name: 'm1' }, 200);
      expectProblem(await call('POST', mappingsOf(dataset.id), { name: 'm1', different: true }), 409, 'UNIQUE_CONSTRAINT_VIOLATION');
      assert.equal((await ok('POST', mappingsOf(other.id), { name: 'm1' }, 200)).logicalUrn, `urn:platform:mapping:${other.id}:m1`);
      expectFieldError(await call('POST', mappingsOf(dataset.id), { name: 'has space' }), 'name');
      expectFieldError(await call('POST', mappingsOf(dataset.id), { name: 'a:b' }), 'name');
      expectFieldError(await call('POST', mappingsOf(dataset.id), [1, 2]), 'body');

      expectFieldError(await call('GET', withUrn(dataset.id, 'urn:other:m1')), 'urn');
      expectFieldError(await call('GET', withUrn(dataset.id, `urn:platform:mapping:${dataset.id}:m1:0`)), 'urn');
      expectFieldError(await call('GET', withUrn(dataset.id, `urn:platform:mapping:${other.id}:m1`)), 'urn');
      expectProblem(await call('GET', withUrn(dataset.id, `urn:platform:mapping:${dataset.id}:nope`)), 404, 'NOT_FOUND');
      expectProblem(await call('GET', withUrn(dataset.id, `${pins.logicalUrn}:2`)), 404, 'NOT_FOUND');

      expectFieldError(await call('PUT', mappingsOf(dataset.id), { fields: [] }), 'logicalUrn');
      expectFieldError(await call('PUT', mappingsOf(dataset.id), { logicalUrn: pins.versionedUrn }), 'logicalUrn');
      expectFieldError(await call('PUT', mappingsOf(dataset.id), { logicalUrn: `urn:platform:mapping:${other.id}:m1` }), 'logicalUrn');
      expectFieldError(await call('PUT', mappingsOf(dataset.id), { logicalUrn: 42 }), 'logicalUrn');
      expectProblem(await call('PUT', mappingsOf(dataset.id), { logicalUrn: `urn:platform:mapping:${dataset.id}:nope` }), 404, 'NOT_FOUND');

      expectFieldError(await call('DELETE', mappingsOf(dataset.id)), 'urn');
      expectFieldError(await call('DELETE', withUrn(dataset.id, 'nonsense')), 'urn');
      expectProblem(await call('DELETE', withUrn(dataset.id, `${pins.logicalUrn}:7`)), 404, 'NOT_FOUND');
      expectProblem(await call('DELETE', withUrn(dataset.id, `urn:platform:mapping:${dataset.id}:nope`)), 404, 'NOT_FOUND');
    });

    it('delete: a versioned URN removes that version, a logical one every version (204); a pipeline\'s reference answers 409 RESOURCE_IN_USE naming it', async () => {
      const dataset = await newDataset();
      const pins = await ok('POST', mappingsOf(dataset.id), { name: 'm' }, 200);
      await ok('PUT', mappingsOf(dataset.id), { logicalUrn: pins.logicalUrn, v: 2 });
      await ok('PUT', mappingsOf(dataset.id), { logicalUrn: pins.logicalUrn, v: 3 });
      const v = (n: number) => `${pins.logicalUrn}:${n}`;

      // A pipeline pinned to version 2 holds that version, and the mapping as a whole.
      const pinned = await ok('POST', `/v1/datasets/${dataset.id}/pipelines`, { name: 'Pinned pipeline', mappingRef: v(2) });
      const inUse = expectProblem(await call('DELETE', withUrn(dataset.id, v(2))), 409, 'RESOURCE_IN_USE');
      assert.match(inUse.detail, /Pinned pipeline/);
      assert.match(inUse.detail, new RegExp(pinned.id));
      expectProblem(await call('DELETE', withUrn(dataset.id, pins.logicalUrn)), 409, 'RESOURCE_IN_USE');
      assert.equal((await call('DELETE', withUrn(dataset.id, v(3)))).statusCode, 204);
      assert.deepEqual((await ok('GET', mappingsOf(dataset.id))).mappings[0].versionedUrns, [v(1), v(2)]);
      assert.deepEqual(await ok('GET', withUrn(dataset.id, pins.logicalUrn)), { logicalUrn: pins.logicalUrn, v: 2 }, 'the latest is version 2 now');
      // The next version counts on from the latest that remains.
      assert.equal((await ok('PUT', mappingsOf(dataset.id), { logicalUrn: pins.logicalUrn })).version, '3');

      // A pipeline referring to the logical URN holds every version that would be the last.
      await ok('PATCH', `/v1/datasets/${dataset.id}/pipelines/${pinned.id}`, { mappingRef: pins.logicalUrn });
      assert.equal((await call('DELETE', withUrn(dataset.id, v(2)))).statusCode, 204);
      assert.equal((await call('DELETE', withUrn(dataset.id, v(3)))).statusCode, 204);
      assert.match(expectProblem(await call('DELETE', withUrn(dataset.id, v(1))), 409, 'RESOURCE_IN_USE').detail, /Pinned pipeline/);
      assert.match(expectProblem(await call('DELETE', withUrn(dataset.id, pins.logicalUrn)), 409, 'RESOURCE_IN_USE').detail, /Pinned pipeline/);

      await ok('PATCH', `/v1/datasets/${dataset.id}/pipelines/${pinned.id}`, { mappingRef: null });
      const gone = await call('DELETE', withUrn(dataset.id, pins.logicalUrn));
      assert.equal(gone.statusCode, 204);
      assert.equal(gone.body, '');
      assert.deepEqual(await ok('GET', mappingsOf(dataset.id)), { mappings: [] });
      expectProblem(await call('GET', withUrn(dataset.id, v(1))), 404, 'NOT_FOUND');
      // The name is free again.
      assert.equal((await ok('POST', mappingsOf(dataset.id), { name: 'm' }, 200)).version, '1');
    });

    it('writes need a DRAFT dataset (400 DATASET_NOT_EDITABLE after stage and release); reads go on', async () => {
      const dataset = await newDataset();
      const pins = await ok('POST', mappingsOf(dataset.id), { name: 'm' }, 200);
      const refusals = async (how: RegExp) => {
        assert.match(expectProblem(await call('POST', mappingsOf(dataset.id), { name: 'n' }), 400, 'DATASET_NOT_EDITABLE').detail, how);
        assert.match(expectProblem(await call('PUT', mappingsOf(dataset.id), { logicalUrn: pins.logicalUrn }), 400, 'DATASET_NOT_EDITABLE').detail, how);
        assert.match(expectProblem(await call('DELETE', withUrn(dataset.id, pins.logicalUrn)), 400, 'DATASET_NOT_EDITABLE').detail, how);
        assert.deepEqual(await ok('GET', withUrn(dataset.id, pins.versionedUrn)), { name: 'm' });
      };
      await stage(dataset.id);
      await refusals(/unstage/);
      await release(dataset.id);
      await refusals(/unrelease/);
    });

    it('authorization is the dataset\'s: unreadable 404, read-only 403 on writes', async () => {
      const dataset = await newDataset();
      const pins = await ok('POST', mappingsOf(dataset.id), { name: 'm' }, 200);
      const reader = await grant(t, uniqueEmail('reader'), ['DATASET_READ'], { scopeType: 'DATASET', scopeId: dataset.id });
      assert.equal((await call('GET', mappingsOf(dataset.id), undefined, reader)).json().mappings.length, 1);
      assert.equal((await call('GET', withUrn(dataset.id, pins.logicalUrn), undefined, reader)).statusCode, 200);
      expectProblem(await call('POST', mappingsOf(dataset.id), { name: 'n' }, reader), 403, 'ACCESS_DENIED');
      expectProblem(await call('PUT', mappingsOf(dataset.id), { logicalUrn: pins.logicalUrn }, reader), 403, 'ACCESS_DENIED');
      expectProblem(await call('DELETE', withUrn(dataset.id, pins.logicalUrn), undefined, reader), 403, 'ACCESS_DENIED');
      const elsewhere = await newDataset();
      expectProblem(await call('GET', mappingsOf(elsewhere.id), undefined, reader), 404, 'NOT_FOUND');
      expectProblem(await call('POST', mappingsOf(elsewhere.id), { name: 'n' }, reader), 404, 'NOT_FOUND');
      expectProblem(await call('GET', mappingsOf(randomUUID())), 404, 'NOT_FOUND');
      expectProblem(await call('POST', mappingsOf(randomUUID()), { name: 'n' }), 404, 'NOT_FOUND');
    });
  });
}
