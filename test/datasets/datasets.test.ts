import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { SagaRunner } from '../../src/jobs/saga-runner.js';
import { datasetSagas } from '../../src/modules/datasets/index.js';
import {
  bearer, createDatapool, createGroup, createRole, expectFieldError, expectProblem, grant, permissionIds, seededRole, uniqueEmail,
  uniqueName,
} from '../helpers/factories.js';
import { waitFor } from '../helpers/wait.js';

/** /v1/datasets: CRUD, named APIs, every row of the lifecycle table, the sagas, authorization, datapools. */

type Json = Record<string, any>;
const sta = (slug = 'sensors') => ({ name: 'Sensors', slug, standard: 'STA', version: '1.1' });

for (const kind of databaseKinds(import.meta.url)) {
  describe(`datasets (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());

    const call = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown, token = t.adminToken, headers: Record<string, string> = {}) =>
      t.app.inject({ method, url, headers: { ...bearer(token), ...headers }, ...(payload === undefined ? {} : { payload: payload as Json }) });
    const ok = async (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown, status?: number) => {
      const response = await call(method, url, payload);
      assert.equal(response.statusCode, status ?? (method === 'POST' ? 201 : 200), response.body);
      return response.json();
    };
    /** Polls until the dataset's saga has finished (or the dataset is gone). */
    const settled = async (id: string): Promise<Json | null> => {
      for (let i = 0; i < 250; i++) {
        const response = await call('GET', `/v1/datasets/${id}`);
        if (response.statusCode === 404) return null;
        const dataset = response.json();
        if (dataset.pendingSagaType === null) return dataset;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error(`the saga of dataset ${id} did not finish`);
    };
    const schemaExists = async (id: string) =>
      (await sql`select 1 from information_schema.schemata where schema_name = ${`ds_${id.replaceAll('-', '')}`}`.execute(t.ctx.db)).rows.length > 0;
    const newDataset = async (fields: Json = {}) => {
      const dataset = await ok('POST', '/v1/datasets', { name: uniqueName('Dataset'), description: 'Air quality', namedApis: [sta()], ...fields });
      return (await settled(dataset.id))!;
    };
    /** Runs `body` with this process's saga worker stopped, so that a saga stays pending meanwhile. */
    const withoutWorker = async (body: () => Promise<void>) => {
      await t.ctx.sagas.stop();
      try { await body(); } finally { t.ctx.sagas.start(); }
    };

    describe('create and read', () => {
      it('answers 201 DRAFT with a CREATE saga that provisions the storage, then clears pendingSagaType', async () => {
        const pool = await createDatapool(t);
        const response = await call('POST', '/v1/datasets', {
          name: uniqueName('Air'), description: 'Air quality', datapoolId: pool.id, openDataAccess: true, namedApis: [sta(), { name: 'Maps', slug: 'maps', standard: 'OWS' }],
        });
        assert.equal(response.statusCode, 201, response.body);
        const created = response.json();
        assert.equal(response.headers['location'], `${t.ctx.config.api.baseUrl}/v1/datasets/${created.id}`);
        assert.deepEqual([created.dataSetStatus, created.pendingSagaType, created.provisioned, created.publicUrl], ['DRAFT', 'CREATE', false, null]);
        assert.deepEqual(created.datapool, { id: pool.id, name: pool.name });
        assert.equal(created.createdBy.name, 'Admin Administrator');
        assert.deepEqual(created.namedApis, [
          { name: 'Sensors', description: null, slug: 'sensors', standard: 'STA', version: '1.1', upstreamUrl: null },
          { name: 'Maps', description: null, slug: 'maps', standard: 'OWS', version: null, upstreamUrl: null },
        ]);
        const done = (await settled(created.id))!;
        assert.deepEqual([done.provisioned, done.pendingSagaType, done.sagaError], [true, null, null]);
        assert.ok(await schemaExists(created.id));
        assert.deepEqual((await ok('GET', `/v1/datapools/${pool.id}`)).datasets, [created.id]);
      });

      it('refuses invalid input with 400 naming the field, and creates nothing', async () => {
        const before = (await ok('GET', '/v1/datasets?size=1')).totalElements;
        const valid = { name: 'Valid name', description: 'd' };
        expectFieldError(await call('POST', '/v1/datasets', { ...valid, name: 'ab' }), 'name');
        expectFieldError(await call('POST', '/v1/datasets', { ...valid, description: ' ' }), 'description');
        expectFieldError(await call('POST', '/v1/datasets', { ...valid, datapoolId: crypto.randomUUID() }), 'datapoolId');
        expectFieldError(await call('POST', '/v1/datasets', { ...valid, namedApis: [sta('Bad_Slug')] }), 'namedApis[0].slug');
        expectFieldError(await call('POST', '/v1/datasets', { ...valid, namedApis: [sta('apis')] }), 'namedApis[0].slug');
        const twice = expectFieldError(await call('POST', '/v1/datasets', { ...valid, namedApis: [sta('a'), sta('b'), sta('a'), sta('v1')] }), 'namedApis[2].slug');
        assert.ok(twice.fieldErrors.some((e: Json) => e.field === 'namedApis[3].slug'), 'every problem is listed');
        expectFieldError(await call('POST', '/v1/datasets', { ...valid, namedApis: [{ ...sta(), standard: 'WFS' }] }), 'namedApis[0].standard');
        expectFieldError(await call('POST', '/v1/datasets', { ...valid, dataSetStatus: 'AVAILABLE' }), 'dataSetStatus');
        assert.equal((await ok('GET', '/v1/datasets?size=1')).totalElements, before);
      });

      it('lists with filters, paging and SQL authorization: a reader of one datapool sees exactly its datasets', async () => {
        const [poolA, poolB] = [await createDatapool(t), await createDatapool(t)];
        const tag = uniqueName('lst');
        const a1 = await newDataset({ name: `${tag} harbour`, datapoolId: poolA.id });
        const a2 = await newDataset({ name: `${tag} river`, datapoolId: poolA.id });
        const b1 = await newDataset({ name: `${tag} harbour b`, datapoolId: poolB.id });
        const page = await ok('GET', `/v1/datasets?q=${tag}&sort=name,asc`);
        assert.deepEqual(page.content.map((d: Json) => d.id), [a1.id, b1.id, a2.id]);
        assert.equal((await ok('GET', `/v1/datasets?name=${tag}%20harbour&datapoolIds=${poolB.id}`)).content[0].id, b1.id);
        const reader = await grant(t, uniqueEmail('reader'), ['DATASET_READ'], { scopeType: 'DATAPOOL', scopeId: poolA.id });
        const seen = (await call('GET', `/v1/datasets?q=${tag}&size=1`, undefined, reader)).json();
        assert.deepEqual([seen.totalElements, seen.totalPages], [2, 2]);
        expectProblem(await call('GET', `/v1/datasets/${b1.id}`, undefined, reader), 404, 'NOT_FOUND');
        assert.equal((await call('GET', `/v1/datasets/${a1.id}`, undefined, reader)).statusCode, 200);
        expectProblem(await call('PATCH', `/v1/datasets/${a1.id}`, { description: 'x' }, reader), 403, 'ACCESS_DENIED');
        // A grant on the dataset itself covers it alone.
        const single = await grant(t, uniqueEmail('single'), ['DATASET_READ'], { scopeType: 'DATASET', scopeId: a2.id });
        assert.deepEqual((await call('GET', `/v1/datasets?q=${tag}`, undefined, single)).json().content.map((d: Json) => d.id), [a2.id]);
      });

      it('create needs DATASET_CREATE on the target datapool; moving a dataset needs it on the new one', async () => {
        const [home, elsewhere] = [await createDatapool(t), await createDatapool(t)];
        const creator = await grant(t, uniqueEmail('creator'), ['DATASET_CREATE', 'DATASET_READ', 'DATASET_UPDATE'], { scopeType: 'DATAPOOL', scopeId: home.id });
        const created = await call('POST', '/v1/datasets', { name: 'In my pool', description: 'd', datapoolId: home.id }, creator);
        assert.equal(created.statusCode, 201, created.body);
        expectProblem(await call('POST', '/v1/datasets', { name: 'Not there', description: 'd', datapoolId: elsewhere.id }, creator), 403, 'ACCESS_DENIED');
        expectProblem(await call('POST', '/v1/datasets', { name: 'Nowhere', description: 'd' }, creator), 403, 'ACCESS_DENIED');
        expectProblem(await call('PATCH', `/v1/datasets/${created.json().id}`, { datapoolId: elsewhere.id }, creator), 403, 'ACCESS_DENIED');
      });

      it('assignments in the body are scoped to the dataset, listed at /assignments, and checked against escalation', async () => {
        const group = await createGroup(t);
        const consumer = await seededRole(t, 'Data Consumer');
        const dataset = await newDataset({ assignments: [{ groupId: group.id, roleId: consumer.id }] });
        const assignments = await ok('GET', `/v1/datasets/${dataset.id}/assignments`);
        assert.deepEqual(assignments.map((a: Json) => [a.scopeType, a.scope.id, a.scope.name, a.role.name]), [['DATASET', dataset.id, dataset.name, 'Data Consumer']]);
        const pool = await createDatapool(t);
        const creator = await grant(t, uniqueEmail('esc'), ['DATASET_CREATE', 'DATASET_READ'], { scopeType: 'DATAPOOL', scopeId: pool.id });
        const owner = await seededRole(t, 'Data Owner');
        const refused = expectProblem(await call('POST', '/v1/datasets', {
          name: 'Escalating', description: 'd', datapoolId: pool.id, assignments: [{ groupId: group.id, roleId: owner.id }],
        }, creator), 403, 'ACCESS_DENIED');
        assert.ok(refused.missingPermissions.some((m: Json) => m.permission === 'DATASET_DELETE'));
        const allowed = await call('POST', '/v1/datasets', {
          name: 'Sharing reads', description: 'd', datapoolId: pool.id, assignments: [{ groupId: group.id, roleId: (await createRole(t, { permissionIds: await permissionIds(t, ['DATASET_READ']) })).id }],
        }, creator);
        assert.equal(allowed.statusCode, 201, allowed.body);
      });
    });

    describe('the lifecycle table', () => {
      it('DRAFT: PUT and PATCH edit; stage → READY (200); release → AVAILABLE (202); unstage and unrelease 409; ready/meta 422; released/meta 409', async () => {
        const dataset = await newDataset();
        const id = dataset.id;
        assert.equal((await ok('PATCH', `/v1/datasets/${id}`, { description: 'patched' })).description, 'patched');
        const replaced = await ok('PUT', `/v1/datasets/${id}`, { name: dataset.name, description: 'replaced', namedApis: [sta('again')] });
        assert.deepEqual([replaced.description, replaced.namedApis.map((a: Json) => a.slug), replaced.openDataAccess], ['replaced', ['again'], false]);
        expectProblem(await call('POST', `/v1/datasets/${id}/unstage`), 409, 'INVALID_STATE');
        expectProblem(await call('POST', `/v1/datasets/${id}/unrelease`), 409, 'INVALID_STATE');
        expectProblem(await call('PATCH', `/v1/datasets/${id}/ready/meta`, { description: 'x' }), 422, 'INVALID_STATE');
        expectProblem(await call('PATCH', `/v1/datasets/${id}/released/meta`, { description: 'x' }), 409, 'INVALID_STATE');
        assert.deepEqual(await ok('GET', `/v1/datasets/${id}/apis`), []);
        assert.equal((await ok('POST', `/v1/datasets/${id}/stage`, undefined, 200)).dataSetStatus, 'READY');
      });

      it('READY: not editable (400, "unstage"); ready/meta merges (PUT too); stage 422; unstage → DRAFT; release → AVAILABLE', async () => {
        const { id } = await newDataset();
        await ok('POST', `/v1/datasets/${id}/stage`, undefined, 200);
        const refused = expectProblem(await call('PATCH', `/v1/datasets/${id}`, { description: 'x' }), 400, 'DATASET_NOT_EDITABLE');
        assert.match(refused.detail, /unstage/);
        expectProblem(await call('POST', `/v1/datasets/${id}/stage`), 422, 'INVALID_STATE');
        const merged = await ok('PATCH', `/v1/datasets/${id}/ready/meta`, { description: 'merged' });
        assert.deepEqual([merged.description, merged.dataSetStatus], ['merged', 'READY']);
        assert.equal((await ok('PUT', `/v1/datasets/${id}/ready/meta`, { openDataAccess: true })).description, 'merged');
        expectFieldError(await call('PATCH', `/v1/datasets/${id}/ready/meta`, { namedApis: [] }), 'namedApis');
        expectFieldError(await call('PATCH', `/v1/datasets/${id}/ready/meta`, { assignments: null }), 'assignments');
        assert.equal((await ok('POST', `/v1/datasets/${id}/unstage`, undefined, 200)).dataSetStatus, 'DRAFT');
        await ok('POST', `/v1/datasets/${id}/stage`, undefined, 200);
        const released = await ok('POST', `/v1/datasets/${id}/release`, undefined, 202);
        assert.deepEqual([released.dataSetStatus, released.pendingSagaType], ['AVAILABLE', 'RELEASE']);
      });

      it('AVAILABLE: APIs published with previewUrl; not editable ("unrelease"); release 409; delete 409; released/meta; unrelease → DRAFT (202)', async () => {
        const { id } = await newDataset();
        await ok('POST', `/v1/datasets/${id}/release`, undefined, 202);
        const available = (await settled(id))!;
        assert.equal(available.publicUrl, `${t.ctx.config.dataApi.baseUrl}/v1/datasets/${id}`);
        assert.deepEqual(await ok('GET', `/v1/datasets/${id}/apis`), [{ ...sta(), description: null, previewUrl: `${t.ctx.config.dataApi.baseUrl}/v1/datasets/${id}/sensors` }]);
        assert.match(expectProblem(await call('PUT', `/v1/datasets/${id}`, { name: 'Renamed', description: 'd' }), 400, 'DATASET_NOT_EDITABLE').detail, /unrelease/);
        expectProblem(await call('POST', `/v1/datasets/${id}/release`), 409, 'INVALID_STATE');
        expectProblem(await call('POST', `/v1/datasets/${id}/stage`), 422, 'INVALID_STATE');
        expectProblem(await call('POST', `/v1/datasets/${id}/unstage`), 409, 'INVALID_STATE');
        expectProblem(await call('PATCH', `/v1/datasets/${id}/ready/meta`, { description: 'x' }), 422, 'INVALID_STATE');
        assert.match(expectProblem(await call('DELETE', `/v1/datasets/${id}`), 409, 'INVALID_STATE').detail, /unrelease/);
        assert.equal((await ok('PATCH', `/v1/datasets/${id}/released/meta`, { description: 'live' })).description, 'live');
        assert.equal((await ok('PUT', `/v1/datasets/${id}/released/meta`, { name: 'Live name' })).name, 'Live name');
        const unreleased = await ok('POST', `/v1/datasets/${id}/unrelease`, undefined, 202);
        assert.deepEqual([unreleased.dataSetStatus, unreleased.pendingSagaType, unreleased.publicUrl], ['DRAFT', 'UNRELEASE', null]);
        assert.equal((await settled(id))!.pendingSagaType, null);
        assert.deepEqual(await ok('GET', `/v1/datasets/${id}/apis`), []);
      });

      it('release validates: no named API (or no storage) answers 422 listing every problem', async () => {
        const { id } = await newDataset({ namedApis: [] });
        const refused = expectProblem(await call('POST', `/v1/datasets/${id}/release`), 422, 'VALIDATION_FAILED');
        assert.deepEqual(refused.fieldErrors.map((e: Json) => e.field), ['namedApis']);
        assert.equal((await ok('GET', `/v1/datasets/${id}`)).dataSetStatus, 'DRAFT');
      });

      it('release and unrelease need DATASET_RELEASE; released/meta needs DATASET_UPDATE and DATASET_RELEASE', async () => {
        const pool = await createDatapool(t);
        const { id } = await newDataset({ datapoolId: pool.id });
        const updater = await grant(t, uniqueEmail('upd'), ['DATASET_READ', 'DATASET_UPDATE'], { scopeType: 'DATAPOOL', scopeId: pool.id });
        expectProblem(await call('POST', `/v1/datasets/${id}/release`, undefined, updater), 403, 'ACCESS_DENIED');
        assert.equal((await call('POST', `/v1/datasets/${id}/stage`, undefined, updater)).statusCode, 200);
        await ok('POST', `/v1/datasets/${id}/release`, undefined, 202);
        await settled(id);
        expectProblem(await call('PATCH', `/v1/datasets/${id}/released/meta`, { description: 'x' }, updater), 403, 'ACCESS_DENIED');
        expectProblem(await call('POST', `/v1/datasets/${id}/unrelease`, undefined, updater), 403, 'ACCESS_DENIED');
      });

      it('a saga under way: stage and release answer 409 SAGA_IN_FLIGHT with pendingSagaType', async () => {
        await withoutWorker(async () => {
          const created = await ok('POST', '/v1/datasets', { name: uniqueName('Pending'), description: 'd', namedApis: [sta()] });
          for (const operation of ['stage', 'release', 'unstage', 'unrelease']) {
            const refused = expectProblem(await call('POST', `/v1/datasets/${created.id}/${operation}`), 409, 'SAGA_IN_FLIGHT');
            assert.equal(refused.pendingSagaType, 'CREATE');
          }
          // Metadata may still change while the storage is being provisioned.
          assert.equal((await ok('PATCH', `/v1/datasets/${created.id}`, { description: 'meanwhile' })).description, 'meanwhile');
        });
      });
    });

    describe('a saga that gives up', () => {
      it('after its last retry a RELEASE whose step keeps failing leaves the dataset DRAFT with a visible sagaError', async () => {
        const { id } = await newDataset();
        await withoutWorker(async () => {
          await ok('POST', `/v1/datasets/${id}/release`, undefined, 202);
          // A contributed step (as the gateway's route publishing will be) that always fails.
          const failing = { name: 'publish routes', run: async () => { throw new Error('gateway unreachable'); } };
          const runner = new SagaRunner(t.ctx.db, datasetSagas({ RELEASE: [failing] }), { backoffMs: () => 0 });
          for (let i = 0; i < 10; i++) await runner.runDue();
        });
        const dataset = await ok('GET', `/v1/datasets/${id}`);
        assert.deepEqual([dataset.dataSetStatus, dataset.pendingSagaType, dataset.publicUrl], ['DRAFT', null, null]);
        assert.equal(dataset.sagaError.sagaType, 'RELEASE');
        assert.match(dataset.sagaError.message, /publish routes\): gateway unreachable/);
        // The fall back to DRAFT is a lifecycle transition too, recorded in the name of whoever released.
        const events = (await ok('GET', `/v1/audit-events?objectId=${id}&type=DATASET_UNRELEASED`)).content;
        assert.equal(events.length, 1);
        assert.deepEqual([events[0].before.dataSetStatus, events[0].after.dataSetStatus], ['AVAILABLE', 'DRAFT']);
        assert.equal(events[0].actorId, (await ok('GET', '/v1/users/me')).id);
        // Not stuck: the dataset can be released again (the error clears with the next saga).
        const again = await ok('POST', `/v1/datasets/${id}/release`, undefined, 202);
        assert.equal(again.sagaError, null);
        assert.equal((await settled(id))!.dataSetStatus, 'AVAILABLE');
      });
    });

    describe('delete', () => {
      it('a never-provisioned dataset goes at once (204), even while its CREATE saga runs; the saga leaves nothing behind', async () => {
        let id = '';
        await withoutWorker(async () => {
          id = (await ok('POST', '/v1/datasets', { name: uniqueName('Short'), description: 'd' })).id;
          assert.equal((await call('DELETE', `/v1/datasets/${id}`)).statusCode, 204);
          expectProblem(await call('GET', `/v1/datasets/${id}`), 404, 'NOT_FOUND');
        });
        await waitFor(async () => !(await t.ctx.db.selectFrom('jobs').select('id').where('subject_id', '=', id).executeTakeFirst()), { what: `the CREATE saga of ${id} to end` });
        assert.equal(await schemaExists(id), false);
        assert.equal(await t.ctx.db.selectFrom('jobs').select('id').where('subject_id', '=', id).executeTakeFirst(), undefined);
      });

      it('a provisioned dataset is marked DELETE (hidden unless includePendingDelete), then its storage and row go', async () => {
        const group = await createGroup(t);
        const dataset = await newDataset({ assignments: [{ groupId: group.id, roleId: (await seededRole(t, 'Data Consumer')).id }] });
        assert.ok(await schemaExists(dataset.id));
        await withoutWorker(async () => {
          assert.equal((await call('DELETE', `/v1/datasets/${dataset.id}`)).statusCode, 204);
          assert.equal((await ok('GET', `/v1/datasets/${dataset.id}`)).pendingSagaType, 'DELETE');
          assert.equal((await ok('GET', `/v1/datasets?id=${dataset.id}`)).totalElements, 0);
          assert.equal((await ok('GET', `/v1/datasets?id=${dataset.id}&includePendingDelete=true`)).totalElements, 1);
          expectProblem(await call('PATCH', `/v1/datasets/${dataset.id}`, { description: 'x' }), 409, 'SAGA_IN_FLIGHT');
          assert.equal((await call('DELETE', `/v1/datasets/${dataset.id}`)).statusCode, 204, 'deleting twice changes nothing');
        });
        assert.equal(await settled(dataset.id), null);
        assert.equal(await schemaExists(dataset.id), false);
        assert.equal((await ok('GET', `/v1/assignments?scopeId=${dataset.id}`)).totalElements, 0);
      });
    });

    describe('datapools hold datasets', () => {
      it('a datapool holding a dataset cannot be deleted (409 RESOURCE_IN_USE naming it); empty, it can', async () => {
        const pool = await createDatapool(t);
        const dataset = await newDataset({ datapoolId: pool.id });
        const refused = expectProblem(await call('DELETE', `/v1/datapools/${pool.id}`), 409, 'RESOURCE_IN_USE');
        assert.match(refused.detail, new RegExp(dataset.id));
        await ok('PATCH', `/v1/datasets/${dataset.id}`, { datapoolId: null });
        assert.equal((await call('DELETE', `/v1/datapools/${pool.id}`)).statusCode, 204);
      });

      it('/apis honours X-Allowed-Scope-Ids: a scope the header excludes answers 404', async () => {
        const pool = await createDatapool(t);
        const { id } = await newDataset({ datapoolId: pool.id });
        await ok('POST', `/v1/datasets/${id}/release`, undefined, 202);
        await settled(id);
        const email = uniqueEmail('scoped');
        const token = await grant(t, email, ['DATASET_READ'], { scopeType: 'DATAPOOL', scopeId: pool.id });
        assert.equal((await call('GET', `/v1/datasets/${id}/apis`, undefined, token, { 'x-allowed-scope-ids': pool.id })).json().length, 1);
        expectProblem(await call('GET', `/v1/datasets/${id}/apis`, undefined, token, { 'x-allowed-scope-ids': crypto.randomUUID() }), 404, 'NOT_FOUND');
      });
    });
  });
}
