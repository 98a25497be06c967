import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { bearer, createDatapool, expectProblem, grant, uniqueEmail, uniqueName } from '../helpers/factories.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The authorization matrix of datasets: for every operation, the permission it needs on the
 * dataset's datapool. A caller holding every DATA permission but that one answers 403; a caller
 * who cannot read the dataset answers 404 (no existence leak); the permission alone (with
 * DATASET_READ) succeeds.
 */

type Json = Record<string, any>;
const DATA_PERMISSIONS = ['DATASET_READ', 'DATASET_CREATE', 'DATASET_UPDATE', 'DATASET_RELEASE', 'DATASET_DELETE', 'DATASET_PAYLOAD_READ', 'DATASET_PAYLOAD_WRITE'];

interface Operation {
  name: string;
  /** What the operation needs besides DATASET_READ. */
  needs: string[];
  /** The dataset state it runs from. */
  from: 'DRAFT' | 'READY' | 'AVAILABLE';
  request: (id: string, datapoolId: string) => { method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'; url: string; payload?: Json };
  status: number;
}

const OPERATIONS: Operation[] = [
  { name: 'get', needs: [], from: 'DRAFT', request: (id) => ({ method: 'GET', url: `/v1/datasets/${id}` }), status: 200 },
  { name: 'named APIs', needs: [], from: 'DRAFT', request: (id) => ({ method: 'GET', url: `/v1/datasets/${id}/apis` }), status: 200 },
  { name: 'assignments', needs: [], from: 'DRAFT', request: (id) => ({ method: 'GET', url: `/v1/datasets/${id}/assignments` }), status: 200 },
  { name: 'PUT', needs: ['DATASET_UPDATE'], from: 'DRAFT', request: (id, datapoolId) => ({ method: 'PUT', url: `/v1/datasets/${id}`, payload: { name: 'Replaced name', description: 'd', datapoolId } }), status: 200 },
  { name: 'PATCH', needs: ['DATASET_UPDATE'], from: 'DRAFT', request: (id) => ({ method: 'PATCH', url: `/v1/datasets/${id}`, payload: { description: 'patched' } }), status: 200 },
  { name: 'stage', needs: ['DATASET_UPDATE'], from: 'DRAFT', request: (id) => ({ method: 'POST', url: `/v1/datasets/${id}/stage` }), status: 200 },
  { name: 'unstage', needs: ['DATASET_UPDATE'], from: 'READY', request: (id) => ({ method: 'POST', url: `/v1/datasets/${id}/unstage` }), status: 200 },
  { name: 'READY metadata', needs: ['DATASET_UPDATE'], from: 'READY', request: (id) => ({ method: 'PATCH', url: `/v1/datasets/${id}/ready/meta`, payload: { description: 'm' } }), status: 200 },
  { name: 'release', needs: ['DATASET_RELEASE'], from: 'DRAFT', request: (id) => ({ method: 'POST', url: `/v1/datasets/${id}/release` }), status: 202 },
  { name: 'unrelease', needs: ['DATASET_RELEASE'], from: 'AVAILABLE', request: (id) => ({ method: 'POST', url: `/v1/datasets/${id}/unrelease` }), status: 202 },
  { name: 'released metadata (UPDATE)', needs: ['DATASET_UPDATE', 'DATASET_RELEASE'], from: 'AVAILABLE', request: (id) => ({ method: 'PATCH', url: `/v1/datasets/${id}/released/meta`, payload: { description: 'r' } }), status: 200 },
  { name: 'delete', needs: ['DATASET_DELETE'], from: 'DRAFT', request: (id) => ({ method: 'DELETE', url: `/v1/datasets/${id}` }), status: 204 },
];

for (const kind of databaseKinds(import.meta.url)) {
  describe(`datasets: the authorization matrix (${kind})`, () => {
    let t: TestApp;
    let pool: { id: string };
    before(async () => {
      t = await buildTestApp(kind);
      pool = await createDatapool(t);
    });
    after(() => t.close());

    const call = (token: string, request: ReturnType<Operation['request']>) =>
      t.app.inject({ method: request.method, url: request.url, headers: bearer(token), ...(request.payload ? { payload: request.payload } : {}) });
    const asAdmin = async (method: 'GET' | 'POST', url: string, payload?: Json) => {
      const response = await t.app.inject({ method, url, headers: bearer(t.adminToken), ...(payload ? { payload } : {}) });
      // A read 200, a stage 200, a release 202 (its saga runs on), a create 201.
      const expected = method === 'GET' || url.endsWith('/stage') ? 200 : url.endsWith('/release') ? 202 : 201;
      assert.equal(response.statusCode, expected, response.body);
      return response.json();
    };
    /** A provisioned dataset in `pool`, brought to the state the operation starts from. */
    async function datasetIn(state: Operation['from']): Promise<string> {
      const { id } = await asAdmin('POST', '/v1/datasets', {
        name: uniqueName('Matrix'), description: 'd', datapoolId: pool.id, namedApis: [{ name: 'S', slug: 's', standard: 'STA' }],
      });
      const settle = () => waitFor(async () => (await asAdmin('GET', `/v1/datasets/${id}`)).pendingSagaType === null, { what: `the saga of dataset ${id} to finish`, timeoutMs: 10_000 });
      await settle();
      if (state === 'READY') await asAdmin('POST', `/v1/datasets/${id}/stage`);
      if (state === 'AVAILABLE') {
        await asAdmin('POST', `/v1/datasets/${id}/release`);
        await settle();
      }
      return id;
    }
    const onPool = (permissions: string[]) => grant(t, uniqueEmail('matrix'), permissions, { scopeType: 'DATAPOOL', scopeId: pool.id });

    for (const operation of OPERATIONS) {
      it(`${operation.name}: ${operation.needs.join(' and ') || 'DATASET_READ'} on the datapool`, async () => {
        const id = await datasetIn(operation.from);
        const request = operation.request(id, pool.id);
        // Every DATA permission but one of those needed: 403, and the dataset is unchanged.
        for (const missing of operation.needs) {
          const token = await onPool(DATA_PERMISSIONS.filter((p) => p !== missing));
          const refused = expectProblem(await call(token, request), 403, 'ACCESS_DENIED');
          assert.match(refused.detail, new RegExp(missing));
        }
        // Every DATA permission but DATASET_READ: the dataset does not exist for the caller.
        const blind = await onPool(DATA_PERMISSIONS.filter((p) => p !== 'DATASET_READ'));
        expectProblem(await call(blind, request), 404, 'NOT_FOUND');
        // Nothing on this datapool (all of it on another one): 404 as well.
        const elsewhere = await grant(t, uniqueEmail('matrix'), DATA_PERMISSIONS, { scopeType: 'DATAPOOL', scopeId: (await createDatapool(t)).id });
        expectProblem(await call(elsewhere, request), 404, 'NOT_FOUND');
        // Exactly what it needs: done.
        const allowed = await call(await onPool(['DATASET_READ', ...operation.needs]), request);
        assert.equal(allowed.statusCode, operation.status, allowed.body);
      });
    }

    it('list: only the datasets of scopes the caller holds DATASET_READ on, and X-Allowed-Scope-Ids narrows it', async () => {
      const id = await datasetIn('DRAFT');
      const reader = await onPool(['DATASET_READ']);
      const listed = (await call(reader, { method: 'GET', url: `/v1/datasets?id=${id}` })).json();
      assert.equal(listed.totalElements, 1);
      const narrowed = await t.app.inject({ method: 'GET', url: `/v1/datasets?id=${id}`, headers: { ...bearer(reader), 'x-allowed-scope-ids': crypto.randomUUID() } });
      assert.equal(narrowed.json().totalElements, 0);
      const blind = await onPool(DATA_PERMISSIONS.filter((p) => p !== 'DATASET_READ'));
      assert.equal((await call(blind, { method: 'GET', url: `/v1/datasets?id=${id}` })).json().totalElements, 0);
    });

    it('create: DATASET_CREATE on the target datapool', async () => {
      const payload = { name: uniqueName('Created'), description: 'd', datapoolId: pool.id };
      const without = await onPool(DATA_PERMISSIONS.filter((p) => p !== 'DATASET_CREATE'));
      expectProblem(await call(without, { method: 'POST', url: '/v1/datasets', payload }), 403, 'ACCESS_DENIED');
      const creator = await onPool(['DATASET_CREATE']);
      assert.equal((await call(creator, { method: 'POST', url: '/v1/datasets', payload })).statusCode, 201);
    });
  });
}
