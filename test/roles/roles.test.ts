import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import {
  bearer, createAssignment, createDatapool, createGroup, createRole, createUser, expectFieldError, expectProblem, grant,
  permissionIds, permissionsByName, seededRole, uniqueEmail, uniqueName,
} from '../helpers/factories.js';

/** /v1/roles: seeded read-only roles, CRUD, validation, usage counts, filters, If-Match and access. */

const ROLE_KEYS = ['createdAt', 'datapools', 'description', 'groupCount', 'id', 'modifiedAt', 'name', 'permissions', 'readonly', 'roleType', 'userCount'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const sorted = (values: string[]) => [...values].sort();
type Json = Record<string, any>;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`roles (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());

    const request = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers: Record<string, string> = {}, token?: string) =>
      t.app.inject({ method, url, headers: { ...bearer(token ?? t.adminToken), ...headers }, ...(payload === undefined ? {} : { payload: payload as Json }) });
    const listRoles = async (query: string, token?: string) => {
      const response = await request('GET', `/v1/roles${query}`, undefined, {}, token);
      assert.equal(response.statusCode, 200, response.body);
      return response.json();
    };
    const listNames = async (query: string) => (await listRoles(query)).content.map((r: Json) => r.name);

    describe('seeded roles', () => {
      it('are Tenant Administrator, Data Owner and Data Consumer, read-only, with the contract\'s permissions', async () => {
        const catalogue = [...(await permissionsByName(t)).values()];
        const page = await listRoles('?readonly=true&sort=name,asc');
        assert.deepEqual(page.content.map((r: Json) => r.name), ['Data Consumer', 'Data Owner', 'Tenant Administrator']);
        const [consumer, owner, administrator] = page.content;
        for (const role of page.content) {
          assert.equal(role.readonly, true);
          assert.deepEqual(Object.keys(role).sort(), ROLE_KEYS);
          for (const p of role.permissions) assert.deepEqual(Object.keys(p).sort(), ['id', 'name', 'permissionType']);
        }
        assert.equal(administrator.roleType, 'SYSTEM');
        assert.deepEqual(sorted(administrator.permissions.map((p: Json) => p.name)), sorted(catalogue.map((p) => p.name)));
        for (const p of administrator.permissions) assert.equal(p.permissionType, catalogue.find((c) => c.id === p.id)!.permissionType);
        assert.equal(owner.roleType, 'DATA');
        assert.deepEqual(sorted(owner.permissions.map((p: Json) => p.name)), sorted(catalogue.map((p) => p.name).filter((n) => n.startsWith('DATASET_'))));
        assert.ok(owner.permissions.some((p: Json) => p.name === 'DATASET_DASHBOARD_READ'));
        assert.equal(consumer.roleType, 'DATA');
        assert.deepEqual(sorted(consumer.permissions.map((p: Json) => p.name)), ['DATASET_PAYLOAD_READ', 'DATASET_READ']);
        // The Administrators group holds Tenant Administrator with the bootstrap administrator in it.
        assert.ok(administrator.groupCount >= 1);
        assert.ok(administrator.userCount >= 1);
      });

      it('answer 409 ROLE_READONLY to PUT, PATCH and DELETE and stay unchanged', async () => {
        for (const name of ['Tenant Administrator', 'Data Owner', 'Data Consumer']) {
          const before = await seededRole(t, name);
          const url = `/v1/roles/${before.id}`;
          expectProblem(await request('PUT', url, { name: `${name} renamed ${uniqueName()}`, roleType: before.roleType }), 409, 'ROLE_READONLY');
          expectProblem(await request('PATCH', url, { description: 'changed' }), 409, 'ROLE_READONLY');
          expectProblem(await request('PATCH', url, { readonly: false }), 409, 'ROLE_READONLY');
          expectProblem(await request('DELETE', url), 409, 'ROLE_READONLY');
          const after = await request('GET', url);
          assert.equal(after.statusCode, 200);
          assert.deepEqual(after.json(), before);
        }
      });
    });

    describe('create', () => {
      it('answers 201 with an absolute Location, an ETag and the full role', async () => {
        const ids = await permissionIds(t, ['DATASET_READ', 'DATASET_UPDATE']);
        const name = uniqueName('Editors');
        const response = await request('POST', '/v1/roles', { name, description: 'edit things', roleType: 'DATA', permissionIds: ids });
        assert.equal(response.statusCode, 201, response.body);
        const role = response.json();
        assert.match(role.id, UUID);
        assert.equal(response.headers['location'], `http://localhost:8080/v1/roles/${role.id}`);
        assert.match(String(response.headers['etag']), /^"[^"]+"$/);
        assert.deepEqual(Object.keys(role).sort(), ROLE_KEYS);
        assert.equal(role.name, name);
        assert.equal(role.description, 'edit things');
        assert.equal(role.roleType, 'DATA');
        assert.equal(role.readonly, false);
        assert.deepEqual(role.datapools, []);
        assert.equal(role.groupCount, 0);
        assert.equal(role.userCount, 0);
        assert.deepEqual(
          [...role.permissions].sort((a: Json, b: Json) => a.name.localeCompare(b.name)),
          [{ id: ids[0], name: 'DATASET_READ', permissionType: 'DATA' }, { id: ids[1], name: 'DATASET_UPDATE', permissionType: 'DATA' }],
        );
        assert.ok(!Number.isNaN(Date.parse(role.createdAt)));
        assert.ok(!Number.isNaN(Date.parse(role.modifiedAt)));

        const fetched = await request('GET', `/v1/roles/${role.id}`);
        assert.equal(fetched.statusCode, 200);
        assert.deepEqual(fetched.json(), role);
        assert.equal(fetched.headers['etag'], response.headers['etag']);
      });

      it('defaults description to empty, permissions to none, readonly to false; a SYSTEM role may hold both kinds', async () => {
        const minimal = await createRole(t, { roleType: 'SYSTEM' });
        assert.equal(minimal.description, '');
        assert.deepEqual(minimal.permissions, []);
        assert.equal(minimal.readonly, false);
        const mixed = await createRole(t, { roleType: 'SYSTEM', permissionIds: await permissionIds(t, ['GROUP_READ', 'DATASET_READ']) });
        assert.deepEqual(sorted(mixed.permissions.map((p: Json) => p.name)), ['DATASET_READ', 'GROUP_READ']);
      });

      it('answers 400 naming the field for every invalid body, and creates nothing', async () => {
        const [dataPermission, systemPermission] = await permissionIds(t, ['DATASET_READ', 'USER_READ']);
        const name = uniqueName('invalid');
        const cases: [Json, string][] = [
          [{ roleType: 'DATA' }, 'name'],
          [{ name: '', roleType: 'DATA' }, 'name'],
          [{ name: '   ', roleType: 'DATA' }, 'name'],
          [{ name }, 'roleType'],
          [{ name, roleType: 'ADMIN' }, 'roleType'],
          [{ name, roleType: 'data' }, 'roleType'],
          [{ name, roleType: 'DATA', colour: 'red' }, 'colour'],
          [{ name, roleType: 'DATA', id: randomUUID() }, 'id'],
          [{ name, roleType: 'DATA', permissionIds: [dataPermission, randomUUID()] }, 'permissionIds[1]'],
          [{ name, roleType: 'DATA', permissionIds: ['not-a-uuid'] }, 'permissionIds[0]'],
          [{ name, roleType: 'DATA', permissionIds: [systemPermission] }, 'permissionIds[0]'],
          [{ name, roleType: 'DATA', permissionIds: [dataPermission, systemPermission] }, 'permissionIds[1]'],
          [{ name: 42, roleType: 'DATA' }, 'name'],
          [{ name, roleType: 'DATA', description: 7 }, 'description'],
          [{ name, roleType: 'DATA', readonly: 'yes' }, 'readonly'],
          [{ name, roleType: 'DATA', permissionIds: dataPermission }, 'permissionIds'],
          [{ name, roleType: 'DATA', permissionIds: [42] }, 'permissionIds[0]'],
        ];
        for (const [body, field] of cases) {
          const response = await request('POST', '/v1/roles', body);
          const problem = expectFieldError(response, field);
          assert.equal(problem.instance, '/v1/roles');
        }
        // Duplicate permission ids are refused too.
        expectProblem(await request('POST', '/v1/roles', { name, roleType: 'DATA', permissionIds: [dataPermission, dataPermission] }), 400, 'VALIDATION_FAILED');
        assert.deepEqual(await listNames(`?name=${name}`), []);
      });

      it('answers 409 UNIQUE_CONSTRAINT_VIOLATION to a name taken in any letter case', async () => {
        const role = await createRole(t, { name: uniqueName('Unique Role') });
        for (const name of [role.name, role.name.toUpperCase(), role.name.toLowerCase()]) {
          const response = await request('POST', '/v1/roles', { name, roleType: 'DATA' });
          expectProblem(response, 409, 'UNIQUE_CONSTRAINT_VIOLATION');
        }
        expectProblem(await request('POST', '/v1/roles', { name: 'data owner', roleType: 'DATA' }), 409, 'UNIQUE_CONSTRAINT_VIOLATION');
        assert.equal((await listRoles(`?name=${encodeURIComponent(role.name)}`)).totalElements, 1);
      });
    });

    describe('update', () => {
      it('PATCH changes only the given fields', async () => {
        const [read, update] = await permissionIds(t, ['DATASET_READ', 'DATASET_UPDATE']);
        const role = await createRole(t, { description: 'before', permissionIds: [read] });
        const patched = await request('PATCH', `/v1/roles/${role.id}`, { description: 'after' });
        assert.equal(patched.statusCode, 200, patched.body);
        assert.match(String(patched.headers['etag']), /^"[^"]+"$/);
        const body = patched.json();
        assert.equal(body.description, 'after');
        assert.equal(body.name, role.name);
        assert.equal(body.roleType, 'DATA');
        assert.equal(body.readonly, false);
        assert.deepEqual(body.permissions, role.permissions);
        assert.equal(body.createdAt, role.createdAt);
        assert.ok(Date.parse(body.modifiedAt) >= Date.parse(role.modifiedAt));

        const renamed = (await request('PATCH', `/v1/roles/${role.id}`, { name: `${role.name}-x`, permissionIds: [update] })).json();
        assert.equal(renamed.name, `${role.name}-x`);
        assert.equal(renamed.description, 'after');
        assert.deepEqual(renamed.permissions.map((p: Json) => p.name), ['DATASET_UPDATE']);
        const empty = await request('PATCH', `/v1/roles/${role.id}`, {});
        assert.equal(empty.statusCode, 200, empty.body);
        assert.equal(empty.json().name, `${role.name}-x`);
      });

      it('PATCH validates like create', async () => {
        const role = await createRole(t);
        const [systemPermission] = await permissionIds(t, ['USER_WRITE']);
        expectFieldError(await request('PATCH', `/v1/roles/${role.id}`, { name: ' ' }), 'name');
        expectFieldError(await request('PATCH', `/v1/roles/${role.id}`, { roleType: 'OTHER' }), 'roleType');
        expectFieldError(await request('PATCH', `/v1/roles/${role.id}`, { permissionIds: [systemPermission] }), 'permissionIds[0]');
        expectFieldError(await request('PATCH', `/v1/roles/${role.id}`, { id: role.id }), 'id');
        expectFieldError(await request('PATCH', `/v1/roles/${role.id}`, { createdAt: role.createdAt }), 'createdAt');
        const taken = await createRole(t);
        expectProblem(await request('PATCH', `/v1/roles/${role.id}`, { name: taken.name.toUpperCase() }), 409, 'UNIQUE_CONSTRAINT_VIOLATION');
        assert.deepEqual((await request('GET', `/v1/roles/${role.id}`)).json(), role);
      });

      it('PUT replaces every field; omitted optional fields take their defaults', async () => {
        const role = await createRole(t, { description: 'something', permissionIds: await permissionIds(t, ['DATASET_READ']) });
        const name = uniqueName('Replaced');
        const response = await request('PUT', `/v1/roles/${role.id}`, { name, roleType: 'SYSTEM' });
        assert.equal(response.statusCode, 200, response.body);
        const body = response.json();
        assert.equal(body.id, role.id);
        assert.equal(body.name, name);
        assert.equal(body.roleType, 'SYSTEM');
        assert.equal(body.description, '');
        assert.deepEqual(body.permissions, []);
        assert.equal(body.readonly, false);
        assert.equal(body.createdAt, role.createdAt);
        assert.deepEqual((await request('GET', `/v1/roles/${role.id}`)).json(), body);
        expectFieldError(await request('PUT', `/v1/roles/${role.id}`, { name }), 'roleType');
        expectFieldError(await request('PUT', `/v1/roles/${role.id}`, { roleType: 'DATA' }), 'name');
      });

      it('PUT/PATCH/DELETE of an unknown role answer 404, of a malformed id 400', async () => {
        const id = randomUUID();
        expectProblem(await request('GET', `/v1/roles/${id}`), 404, 'NOT_FOUND');
        expectProblem(await request('PUT', `/v1/roles/${id}`, { name: uniqueName(), roleType: 'DATA' }), 404, 'NOT_FOUND');
        expectProblem(await request('PATCH', `/v1/roles/${id}`, { description: 'x' }), 404, 'NOT_FOUND');
        expectProblem(await request('DELETE', `/v1/roles/${id}`), 404, 'NOT_FOUND');
        expectFieldError(await request('GET', '/v1/roles/123'), 'id');
      });

      it('a role created readonly can no longer be changed', async () => {
        const role = await createRole(t, { readonly: true });
        assert.equal(role.readonly, true);
        expectProblem(await request('PATCH', `/v1/roles/${role.id}`, { readonly: false }), 409, 'ROLE_READONLY');
        expectProblem(await request('DELETE', `/v1/roles/${role.id}`), 409, 'ROLE_READONLY');
      });

      it('refuses to turn into SYSTEM a DATA role assigned below TENANT scope', async () => {
        const role = await createRole(t);
        const group = await createGroup(t);
        const pool = await createDatapool(t);
        await createAssignment(t, { groupId: group.id, roleId: role.id, scopeType: 'DATAPOOL', scopeId: pool.id });
        expectFieldError(await request('PATCH', `/v1/roles/${role.id}`, { roleType: 'SYSTEM' }), 'roleType');
        assert.equal((await request('GET', `/v1/roles/${role.id}`)).json().roleType, 'DATA');
      });

      it('If-Match: a stale ETag answers 412 PRECONDITION_FAILED, the current one 200', async () => {
        const created = await request('POST', '/v1/roles', { name: uniqueName('etag'), roleType: 'DATA' });
        const firstTag = String(created.headers['etag']);
        const id = created.json().id;
        const changed = await request('PATCH', `/v1/roles/${id}`, { description: 'v2' }, { 'if-match': firstTag });
        assert.equal(changed.statusCode, 200, changed.body);
        const currentTag = String(changed.headers['etag']);
        assert.notEqual(currentTag, firstTag);

        expectProblem(await request('PATCH', `/v1/roles/${id}`, { description: 'v3' }, { 'if-match': firstTag }), 412, 'PRECONDITION_FAILED');
        expectProblem(await request('PUT', `/v1/roles/${id}`, { name: uniqueName(), roleType: 'DATA' }, { 'if-match': firstTag }), 412, 'PRECONDITION_FAILED');
        expectProblem(await request('DELETE', `/v1/roles/${id}`, undefined, { 'if-match': firstTag }), 412, 'PRECONDITION_FAILED');
        assert.equal((await request('GET', `/v1/roles/${id}`)).json().description, 'v2');

        const replaced = await request('PUT', `/v1/roles/${id}`, { name: uniqueName('etag'), roleType: 'DATA', description: 'v3' }, { 'if-match': currentTag });
        assert.equal(replaced.statusCode, 200, replaced.body);
        const deleted = await request('DELETE', `/v1/roles/${id}`, undefined, { 'if-match': String(replaced.headers['etag']) });
        assert.equal(deleted.statusCode, 204, deleted.body);
      });
    });

    describe('delete', () => {
      it('answers 409 RESOURCE_IN_USE while the role is assigned, then 204 and 404 once unassigned', async () => {
        const role = await createRole(t);
        const group = await createGroup(t);
        const assignment = await createAssignment(t, { groupId: group.id, roleId: role.id });
        const inUse = expectProblem(await request('DELETE', `/v1/roles/${role.id}`), 409, 'RESOURCE_IN_USE');
        assert.match(inUse.detail, /assignment/);
        assert.equal((await request('GET', `/v1/roles/${role.id}`)).statusCode, 200);

        assert.equal((await request('DELETE', `/v1/assignments/${assignment.id}`)).statusCode, 204);
        const deleted = await request('DELETE', `/v1/roles/${role.id}`);
        assert.equal(deleted.statusCode, 204, deleted.body);
        assert.equal(deleted.body, '');
        expectProblem(await request('GET', `/v1/roles/${role.id}`), 404, 'NOT_FOUND');
        expectProblem(await request('DELETE', `/v1/roles/${role.id}`), 404, 'NOT_FOUND');
      });
    });

    describe('usage', () => {
      it('groupCount, userCount and datapools reflect assignments and members', async () => {
        const [u1, u2, u3] = [await createUser(t), await createUser(t), await createUser(t)];
        const role = await createRole(t);
        const g1 = await createGroup(t, { memberIds: [u1.id, u2.id] });
        const g2 = await createGroup(t, { memberIds: [u2.id, u3.id] });
        const g3 = await createGroup(t);
        const pool = await createDatapool(t);
        await createAssignment(t, { groupId: g1.id, roleId: role.id });
        let current = (await request('GET', `/v1/roles/${role.id}`)).json();
        assert.equal(current.groupCount, 1);
        assert.equal(current.userCount, 2);
        assert.deepEqual(current.datapools, []);

        await createAssignment(t, { groupId: g2.id, roleId: role.id });
        await createAssignment(t, { groupId: g2.id, roleId: role.id, scopeType: 'DATAPOOL', scopeId: pool.id });
        await createAssignment(t, { groupId: g3.id, roleId: role.id, scopeId: pool.id });
        current = (await request('GET', `/v1/roles/${role.id}`)).json();
        assert.equal(current.groupCount, 3, 'distinct groups');
        assert.equal(current.userCount, 3, 'distinct users');
        assert.deepEqual(current.datapools, [{ id: pool.id, name: pool.name }]);

        const listed = (await listRoles(`?id=${role.id}`)).content[0];
        assert.deepEqual(listed, current);
      });
    });

    describe('list', () => {
      it('is a Page of roles filtered by name, description, q, roleType and readonly', async () => {
        const prefix = uniqueName('Filter');
        const a = await createRole(t, { name: `${prefix} Alpha`, roleType: 'SYSTEM', description: 'Guards the Gate' });
        const b = await createRole(t, { name: `${prefix} Beta`, roleType: 'DATA', description: 'reads' });
        const c = await createRole(t, { name: `${prefix} Gamma`, roleType: 'DATA', readonly: true, description: 'fixed gate' });

        const page = await listRoles(`?name=${encodeURIComponent(prefix.toUpperCase())}&sort=name,asc`);
        for (const key of ['content', 'empty', 'first', 'last', 'number', 'numberOfElements', 'size', 'totalElements', 'totalPages', 'sort', 'pageable']) {
          assert.ok(key in page, key);
        }
        assert.deepEqual(page.content.map((r: Json) => r.id), [a.id, b.id, c.id]);
        assert.equal(page.totalElements, 3);
        assert.equal(page.size, 20);

        const within = (query: string, sort = 'name,asc') => listNames(`?name=${encodeURIComponent(prefix)}&sort=${sort}&${query}`);
        assert.deepEqual(await within('roleType=SYSTEM'), [a.name]);
        assert.deepEqual(await within('roleType=DATA'), [b.name, c.name]);
        assert.deepEqual(await within('roleType=SYSTEM,DATA'), [a.name, b.name, c.name]);
        assert.deepEqual(await within('roleType=SYSTEM&roleType=DATA'), [a.name, b.name, c.name]);
        assert.deepEqual(await within('readonly=true'), [c.name]);
        assert.deepEqual(await within('readonly=false'), [a.name, b.name]);
        assert.deepEqual(await within('description=GATE'), [a.name, c.name]);
        assert.deepEqual(await within('q=beta'), [b.name]);
        assert.deepEqual(await within('q=gate'), [a.name, c.name]);
        assert.deepEqual(await within('', 'name,desc'), [c.name, b.name, a.name]);
        assert.deepEqual(await within('', 'roleType,asc&sort=name,desc'), [c.name, b.name, a.name]);
        assert.deepEqual(await within(`id=${a.id},${c.id}`), [a.name, c.name]);

        // readonly=false never lists the seeded roles.
        const writable = await listRoles('?readonly=false&size=1000');
        assert.ok(!writable.content.some((r: Json) => ['Tenant Administrator', 'Data Owner', 'Data Consumer'].includes(r.name)));
        // q matches the name or the description across the whole list.
        const all = await listRoles('?q=administrator&size=1000');
        assert.ok(all.content.some((r: Json) => r.name === 'Tenant Administrator'));
      });

      it('answers 400 to a bad roleType, readonly, sort or page parameter', async () => {
        for (const query of ['roleType=ADMIN', 'roleType=SYSTEM,', 'readonly=maybe', 'sort=colour', 'page=-1', 'size=0', 'size=1001', 'id=nope']) {
          const response = await request('GET', `/v1/roles?${query}`);
          expectFieldError(response, query.split('=')[0]!);
        }
      });
    });

    describe('authorization', () => {
      it('without any permission: 403 ACCESS_DENIED on every operation', async () => {
        const role = await createRole(t);
        const token = await grant(t, uniqueEmail('nobody'), []);
        const operations: [string, string, unknown][] = [
          ['GET', '/v1/roles', undefined], ['GET', `/v1/roles/${role.id}`, undefined],
          ['POST', '/v1/roles', { name: uniqueName(), roleType: 'DATA' }], ['PUT', `/v1/roles/${role.id}`, { name: uniqueName(), roleType: 'DATA' }],
          ['PATCH', `/v1/roles/${role.id}`, { description: 'x' }], ['DELETE', `/v1/roles/${role.id}`, undefined],
        ];
        for (const [method, url, payload] of operations) {
          const body = expectProblem(await request(method as 'GET', url, payload, {}, token), 403, 'ACCESS_DENIED');
          assert.equal(body.type, 'urn:platform:error:ACCESS_DENIED');
        }
        assert.deepEqual((await request('GET', `/v1/roles/${role.id}`)).json(), role);
      });

      it('ROLE_READ only: reads answer 200, writes 403', async () => {
        const role = await createRole(t);
        const token = await grant(t, uniqueEmail('role-reader'), ['ROLE_READ']);
        assert.equal((await request('GET', '/v1/roles', undefined, {}, token)).statusCode, 200);
        assert.equal((await request('GET', `/v1/roles/${role.id}`, undefined, {}, token)).statusCode, 200);
        const name = uniqueName('forbidden');
        expectProblem(await request('POST', '/v1/roles', { name, roleType: 'DATA' }, {}, token), 403, 'ACCESS_DENIED');
        expectProblem(await request('PATCH', `/v1/roles/${role.id}`, { description: 'x' }, {}, token), 403, 'ACCESS_DENIED');
        expectProblem(await request('PUT', `/v1/roles/${role.id}`, { name, roleType: 'DATA' }, {}, token), 403, 'ACCESS_DENIED');
        expectProblem(await request('DELETE', `/v1/roles/${role.id}`, undefined, {}, token), 403, 'ACCESS_DENIED');
        assert.deepEqual(await listNames(`?name=${name}`), []);
      });

      it('ROLE_WRITE without ROLE_READ: writes answer 2xx, reads 403', async () => {
        const token = await grant(t, uniqueEmail('role-writer'), ['ROLE_WRITE']);
        const created = await request('POST', '/v1/roles', { name: uniqueName('by-writer'), roleType: 'DATA' }, {}, token);
        assert.equal(created.statusCode, 201, created.body);
        expectProblem(await request('GET', `/v1/roles/${created.json().id}`, undefined, {}, token), 403, 'ACCESS_DENIED');
        expectProblem(await request('GET', '/v1/roles', undefined, {}, token), 403, 'ACCESS_DENIED');
      });

      it('ROLE_READ granted only on a datapool does not count for roles', async () => {
        const pool = await createDatapool(t);
        const token = await grant(t, uniqueEmail('pool-reader'), ['ROLE_READ'], { scopeType: 'DATAPOOL', scopeId: pool.id });
        expectProblem(await request('GET', '/v1/roles', undefined, {}, token), 403, 'ACCESS_DENIED');
      });

      it('X-Allowed-Scope-Ids: another scope hides the TENANT grant; the tenant id or * keep it', async () => {
        const token = await grant(t, uniqueEmail('scoped'), ['ROLE_READ']);
        expectProblem(await request('GET', '/v1/roles', undefined, { 'x-allowed-scope-ids': randomUUID() }, token), 403, 'ACCESS_DENIED');
        assert.equal((await request('GET', '/v1/roles', undefined, { 'x-allowed-scope-ids': t.ctx.tenant.id }, token)).statusCode, 200);
        assert.equal((await request('GET', '/v1/roles', undefined, { 'x-allowed-scope-ids': `${randomUUID()},${t.ctx.tenant.id}` }, token)).statusCode, 200);
        assert.equal((await request('GET', '/v1/roles', undefined, { 'x-allowed-scope-ids': '*' }, token)).statusCode, 200);
      });
    });
  });
}
