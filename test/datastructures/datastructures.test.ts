import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { requestsOf } from '../helpers/requests.js';
import { bearer, createDatapool, createGroup, createRole, expectFieldError, expectProblem, grant, permissionIds, uniqueEmail, uniqueName } from '../helpers/factories.js';

/** /v1/datastructures and their versions: fields, model validation, release rules, authorization, assignments. */

type Json = Record<string, any>;
const MODEL = { type: 'object', properties: { temperature: { type: 'number' } }, required: ['temperature'] };

for (const kind of databaseKinds(import.meta.url)) {
  describe(`data structures (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());

    const { call, ok, deleted } = requestsOf(() => t);
    const newStructure = (fields: Json = {}) => ok('POST', '/v1/datastructures', { name: uniqueName('Structure'), ...fields });
    const newVersion = (structureId: string, fields: Json = {}) =>
      ok('POST', `/v1/datastructures/${structureId}/versions`, { dataStructureVersionSource: 'OWN', model: MODEL, ...fields });
    /** An AVAILABLE structure with one AVAILABLE version. */
    const released = async () => {
      const structure = await newStructure();
      const version = await newVersion(structure.id);
      await ok('POST', `/v1/datastructures/${structure.id}/versions/${version.id}/release`);
      await ok('POST', `/v1/datastructures/${structure.id}/release`);
      return { structure, version };
    };

    describe('structures', () => {
      it('creates a DRAFT structure (201 + Location) with its fields and defaults; dataStructureVersionIds is ignored', async () => {
        const pool = await createDatapool(t);
        const response = await call('POST', '/v1/datastructures', { name: uniqueName('Weather'), description: 'Weather records', datapoolId: pool.id, dataStructureVersionIds: [crypto.randomUUID()] });
        assert.equal(response.statusCode, 201, response.body);
        const created = response.json();
        assert.equal(response.headers['location'], `${t.ctx.config.api.baseUrl}/v1/datastructures/${created.id}`);
        assert.deepEqual(
          [created.description, created.datapool, created.createdFromDataSource, created.dataStructureVersions, created.dataStructureStatus, created.inUse],
          ['Weather records', { id: pool.id, name: pool.name }, false, [], 'DRAFT', false],
        );
        assert.deepEqual(await ok('GET', `/v1/datastructures/${created.id}`), created);
        const bare = await newStructure();
        assert.deepEqual([bare.description, bare.datapool], [null, null]);
      });

      it('stays when its datapool is deleted, at tenant level; If-Match guards writes', async () => {
        const pool = await createDatapool(t);
        const structure = await newStructure({ datapoolId: pool.id });
        const response = await call('DELETE', `/v1/datapools/${pool.id}`);
        assert.equal(response.statusCode, 204, response.body);
        assert.equal((await ok('GET', `/v1/datastructures/${structure.id}`)).datapool, null);
        const stale = await t.app.inject({ method: 'PATCH', url: `/v1/datastructures/${structure.id}`, headers: { ...bearer(t.adminToken), 'if-match': '"stale"' }, payload: { name: 'x' } });
        expectProblem(stale, 412, 'PRECONDITION_FAILED');
        const current = await call('GET', `/v1/datastructures/${structure.id}`);
        const fresh = await t.app.inject({ method: 'PATCH', url: `/v1/datastructures/${structure.id}`, headers: { ...bearer(t.adminToken), 'if-match': String(current.headers['etag']) }, payload: { name: 'fresh name' } });
        assert.equal(fresh.statusCode, 200, fresh.body);
      });

      it('refuses a missing name, an unknown datapool and unknown fields, naming them', async () => {
        expectFieldError(await call('POST', '/v1/datastructures', { description: 'x' }), 'name');
        expectFieldError(await call('POST', '/v1/datastructures', { name: 'x', datapoolId: crypto.randomUUID() }), 'datapoolId');
        expectFieldError(await call('POST', '/v1/datastructures', { name: 'x', dataStructureStatus: 'AVAILABLE' }), 'dataStructureStatus');
      });

      it('PUT replaces, PATCH merges (null clears the description), lists filter by status', async () => {
        const structure = await newStructure({ description: 'first' });
        const patched = await ok('PATCH', `/v1/datastructures/${structure.id}`, { createdFromDataSource: true });
        assert.deepEqual([patched.description, patched.createdFromDataSource], ['first', true]);
        assert.equal((await ok('PATCH', `/v1/datastructures/${structure.id}`, { description: null })).description, null);
        const replaced = await ok('PUT', `/v1/datastructures/${structure.id}`, { name: 'renamed structure' });
        assert.deepEqual([replaced.name, replaced.createdFromDataSource], ['renamed structure', false]);
        const { structure: available } = await released();
        const page = await ok('GET', `/v1/datastructures?dataStructureStatus=AVAILABLE&size=1000`);
        assert.ok(page.content.every((s: Json) => s.dataStructureStatus === 'AVAILABLE'));
        assert.ok(page.content.some((s: Json) => s.id === available.id));
      });
    });

    describe('versions', () => {
      it('numbers versions "1", "2", ... when left out, refuses a taken one (409), and lists them on the structure oldest first', async () => {
        const structure = await newStructure();
        const response = await call('POST', `/v1/datastructures/${structure.id}/versions`, { dataStructureVersionSource: 'OWN' });
        assert.equal(response.statusCode, 201, response.body);
        const first = response.json();
        assert.equal(response.headers['location'], `${t.ctx.config.api.baseUrl}/v1/datastructures/${structure.id}/versions/${first.id}`);
        assert.deepEqual(
          [first.version, first.dataStructure, first.dataStructureVersionSource, first.model, first.styles, first.dataStructureVersionStatus, first.inUse, first.modelName],
          ['1', { id: structure.id, name: structure.name }, 'OWN', null, {}, 'DRAFT', false, null],
        );
        const named = await newVersion(structure.id, { version: '3', modelName: 'Weather', styles: { color: 'red' } });
        assert.equal((await newVersion(structure.id)).version, '2');
        expectProblem(await call('POST', `/v1/datastructures/${structure.id}/versions`, { dataStructureVersionSource: 'OWN', version: '3' }), 409, 'UNIQUE_CONSTRAINT_VIOLATION');
        expectFieldError(await call('POST', `/v1/datastructures/${structure.id}/versions`, {}), 'dataStructureVersionSource');
        const read = await ok('GET', `/v1/datastructures/${structure.id}`);
        assert.deepEqual(read.dataStructureVersions.map((v: Json) => v.version), ['1', '3', '2']);
        assert.deepEqual(Object.keys(read.dataStructureVersions[0]).sort(), ['createdAt', 'dataStructureId', 'description', 'id', 'modifiedAt', 'source', 'status', 'version']);
        // PUT keeps a version left out, PATCH changes only what it names.
        const put = await ok('PUT', `/v1/datastructures/${structure.id}/versions/${named.id}`, { dataStructureVersionSource: 'OWN', model: MODEL });
        assert.deepEqual([put.version, put.modelName, put.styles], ['3', null, {}]);
        assert.equal((await ok('PATCH', `/v1/datastructures/${structure.id}/versions/${named.id}`, { modelName: 'M' })).modelName, 'M');
        // A version of another structure is not found under this one.
        const other = await newStructure();
        expectProblem(await call('GET', `/v1/datastructures/${other.id}/versions/${named.id}`), 404, 'NOT_FOUND');
      });

      it('refuses a model that is not an object, that its meta-schema refuses or whose $ref does not resolve (400 naming model), and nothing changes', async () => {
        const structure = await newStructure();
        const version = await newVersion(structure.id);
        for (const model of [5, 'a string', [1], true, { type: 7 }, { properties: { a: { minimum: 'zero' } } }, { $ref: '#/$defs/missing' }, { $schema: 'http://json-schema.org/draft-04/schema#' }]) {
          expectFieldError(await call('POST', `/v1/datastructures/${structure.id}/versions`, { dataStructureVersionSource: 'OWN', model }), 'model');
          expectFieldError(await call('PATCH', `/v1/datastructures/${structure.id}/versions/${version.id}`, { model }), 'model');
          expectFieldError(await call('PUT', `/v1/datastructures/${structure.id}/versions/${version.id}`, { dataStructureVersionSource: 'OWN', model }), 'model');
        }
        const after = await ok('GET', `/v1/datastructures/${structure.id}/versions/${version.id}`);
        assert.deepEqual(after.model, MODEL);
        assert.equal((await ok('GET', `/v1/datastructures/${structure.id}`)).dataStructureVersions.length, 1);
      });

      it('takes draft-07 and 2019-09 models by $schema, and refs that resolve within the model', async () => {
        const structure = await newStructure();
        const draft07 = { $schema: 'http://json-schema.org/draft-07/schema#', definitions: { t: { type: 'number' } }, properties: { t: { $ref: '#/definitions/t' } } };
        assert.deepEqual((await newVersion(structure.id, { model: draft07 })).model, draft07);
        // draft-07 has no `$defs`-only keywords to refuse, but its meta-schema refuses a wrong type.
        expectFieldError(await call('POST', `/v1/datastructures/${structure.id}/versions`, { dataStructureVersionSource: 'OWN', model: { ...draft07, type: 'thing' } }), 'model');
        const v2019 = { $schema: 'https://json-schema.org/draft/2019-09/schema', $defs: { a: { type: 'string' } }, properties: { a: { $ref: '#/$defs/a' } } };
        assert.deepEqual((await newVersion(structure.id, { model: v2019 })).model, v2019);
        const v2020 = { $defs: { a: { type: 'string' } }, prefixItems: [{ $ref: '#/$defs/a' }] };
        assert.deepEqual((await newVersion(structure.id, { model: v2020 })).model, v2020);
      });
    });

    describe('release rules', () => {
      it('release of a version needs its model; of a structure one AVAILABLE version; each status refusal names its status field', async () => {
        const structure = await newStructure();
        const version = await newVersion(structure.id, { model: null });
        const base = `/v1/datastructures/${structure.id}`;
        const versionUrl = `${base}/versions/${version.id}`;
        expectFieldError(await call('POST', `${versionUrl}/release`), 'model');
        expectFieldError(await call('POST', `${base}/release`), 'dataStructureVersions');
        expectFieldError(await call('POST', `${versionUrl}/unrelease`), 'dataStructureVersionStatus');
        expectFieldError(await call('POST', `${base}/unrelease`), 'dataStructureStatus');
        expectFieldError(await call('PATCH', `${base}/released/meta`, { name: 'x' }), 'dataStructureStatus');
        expectFieldError(await call('PATCH', `${versionUrl}/released/meta`, { description: 'x' }), 'dataStructureVersionStatus');
        await ok('PATCH', versionUrl, { model: MODEL });
        const releasedVersion = await ok('POST', `${versionUrl}/release`);
        assert.equal(releasedVersion.dataStructureVersionStatus, 'AVAILABLE');
        expectFieldError(await call('POST', `${versionUrl}/release`), 'dataStructureVersionStatus');
        expectFieldError(await call('PATCH', versionUrl, { description: 'x' }), 'dataStructureVersionStatus');
        expectFieldError(await call('PUT', versionUrl, { dataStructureVersionSource: 'OWN' }), 'dataStructureVersionStatus');
        expectFieldError(await call('DELETE', versionUrl), 'dataStructureVersionStatus');
        const meta = await ok('PUT', `${versionUrl}/released/meta`, { modelName: 'Weather' });
        assert.deepEqual([meta.modelName, meta.description, meta.model], ['Weather', null, MODEL]);
        expectFieldError(await call('PATCH', `${versionUrl}/released/meta`, { model: {} }), 'model');

        const structureReleased = await ok('POST', `${base}/release`);
        assert.equal(structureReleased.dataStructureStatus, 'AVAILABLE');
        expectFieldError(await call('POST', `${base}/release`), 'dataStructureStatus');
        expectFieldError(await call('PUT', base, { name: 'x' }), 'dataStructureStatus');
        expectFieldError(await call('PATCH', base, { name: 'x' }), 'dataStructureStatus');
        expectFieldError(await call('DELETE', base), 'dataStructureStatus');
        const renamed = await ok('PATCH', `${base}/released/meta`, { description: 'now described' });
        assert.deepEqual([renamed.name, renamed.description], [structure.name, 'now described']);
        expectFieldError(await call('PATCH', `${base}/released/meta`, { datapoolId: null }), 'datapoolId');

        // The only AVAILABLE version of an AVAILABLE structure stays; an AVAILABLE structure takes DRAFT versions.
        expectFieldError(await call('POST', `${versionUrl}/unrelease`), 'dataStructureVersionStatus');
        const second = await newVersion(structure.id);
        assert.equal(second.dataStructureVersionStatus, 'DRAFT');
        await ok('POST', `${base}/versions/${second.id}/release`);
        assert.equal((await ok('POST', `${versionUrl}/unrelease`)).dataStructureVersionStatus, 'DRAFT');
        await deleted(versionUrl);
        assert.equal((await call('GET', versionUrl)).statusCode, 404);
        assert.equal((await ok('POST', `${base}/unrelease`)).dataStructureStatus, 'DRAFT');
      });

      it('does not serve the older names publish, unpublish and published/meta', async () => {
        const { structure, version } = await released();
        for (const path of [`${structure.id}/publish`, `${structure.id}/unpublish`, `${structure.id}/versions/${version.id}/publish`]) {
          assert.equal((await call('POST', `/v1/datastructures/${path}`)).statusCode, 403);
        }
        assert.equal((await call('PATCH', `/v1/datastructures/${structure.id}/published/meta`, { name: 'x' })).statusCode, 403);
      });

      it('deleting a DRAFT structure removes its versions and its assignments (foreign keys cascade)', async () => {
        const role = await createRole(t, { permissionIds: await permissionIds(t, ['DATASTRUCTURE_READ']) });
        const group = await createGroup(t);
        const structure = await newStructure({ assignments: [{ groupId: group.id, roleId: role.id }] });
        const version = await newVersion(structure.id);
        const assignments = await ok('GET', `/v1/datastructures/${structure.id}/assignments`);
        assert.equal(assignments.length, 1);
        assert.equal(assignments[0].scopeType, 'DATASTRUCTURE');
        await deleted(`/v1/datastructures/${structure.id}`);
        assert.equal((await call('GET', `/v1/datastructures/${structure.id}`)).statusCode, 404);
        assert.equal((await t.ctx.db.selectFrom('data_structure_versions').select('id').where('id', '=', version.id).execute()).length, 0);
        assert.equal((await t.ctx.db.selectFrom('assignments').select('id').where('scope_id', '=', structure.id).execute()).length, 0);
        expectProblem(await call('GET', `/v1/assignments/${assignments[0].id}`), 404, 'NOT_FOUND');
      });
    });

    describe('authorization', () => {
      it('reads need DATASTRUCTURE_READ (else 404), writes DATASTRUCTURE_WRITE (else 403), on the structure, its datapool or the tenant; lists are filtered in SQL', async () => {
        const pool = await createDatapool(t);
        const inPool = await newStructure({ datapoolId: pool.id });
        const elsewhere = await newStructure();
        const reader = await grant(t, uniqueEmail('reader'), ['DATASTRUCTURE_READ'], { scopeType: 'DATAPOOL', scopeId: pool.id });
        const page = await ok('GET', '/v1/datastructures?size=1000', undefined, 200, reader);
        assert.deepEqual(page.content.map((s: Json) => s.id), [inPool.id]);
        assert.equal(page.totalElements, 1);
        await ok('GET', `/v1/datastructures/${inPool.id}`, undefined, 200, reader);
        expectProblem(await call('GET', `/v1/datastructures/${elsewhere.id}`, undefined, reader), 404, 'NOT_FOUND');
        expectProblem(await call('PATCH', `/v1/datastructures/${inPool.id}`, { name: 'x' }, reader), 403, 'ACCESS_DENIED');
        expectProblem(await call('PATCH', `/v1/datastructures/${elsewhere.id}`, { name: 'x' }, reader), 404, 'NOT_FOUND');
        expectProblem(await call('POST', `/v1/datastructures/${inPool.id}/versions`, { dataStructureVersionSource: 'OWN' }, reader), 403, 'ACCESS_DENIED');
        expectProblem(await call('POST', `/v1/datastructures/${elsewhere.id}/versions`, { dataStructureVersionSource: 'OWN' }, reader), 404, 'NOT_FOUND');

        const writer = await grant(t, uniqueEmail('writer'), ['DATASTRUCTURE_READ', 'DATASTRUCTURE_WRITE'], { scopeType: 'DATAPOOL', scopeId: pool.id });
        await ok('POST', '/v1/datastructures', { name: uniqueName('S'), datapoolId: pool.id }, 201, writer);
        expectProblem(await call('POST', '/v1/datastructures', { name: uniqueName('S') }, writer), 403, 'ACCESS_DENIED');
        expectProblem(await call('PATCH', `/v1/datastructures/${inPool.id}`, { datapoolId: null }, writer), 403, 'ACCESS_DENIED');
        await ok('POST', `/v1/datastructures/${inPool.id}/versions`, { dataStructureVersionSource: 'OWN' }, 201, writer);

        // An assignment on the structure itself covers only it.
        const own = await grant(t, uniqueEmail('own'), ['DATASTRUCTURE_READ'], { scopeType: 'DATASTRUCTURE', scopeId: elsewhere.id });
        const ownPage = await ok('GET', '/v1/datastructures?size=1000', undefined, 200, own);
        assert.deepEqual([ownPage.totalElements, ownPage.content[0].id], [1, elsewhere.id]);
      });
    });
  });
}
