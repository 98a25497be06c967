import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import {
  administratorsGroup, bearer, createAssignment, createDatapool, createGroup, createRole, createUser, expectFieldError, expectProblem,
  grant, permissionIds, uniqueEmail, uniqueName,
} from '../helpers/factories.js';
import { raceInDatabase } from '../helpers/race.js';
import { CHECK_VIOLATION, FOREIGN_KEY_VIOLATION } from '../helpers/sql-states.js';

/**
 * What the clients written against the platform's Spring backend send and read: users' `active`,
 * `groupIds` and `externalId`, the group tree (`parentGroupId`), and explicit nulls.
 */

type Json = Record<string, any>;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`existing clients (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());

    const call = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown, token = t.adminToken) =>
      t.app.inject({ method, url, headers: bearer(token), ...(payload === undefined ? {} : { payload: payload as Json }) });
    const ok = async (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown, status = method === 'POST' ? 201 : 200) => {
      const response = await call(method, url, payload);
      assert.equal(response.statusCode, status, response.body);
      return response.json();
    };
    const me = async (token: string) => (await call('GET', '/v1/users/me', undefined, token)).json();
    const readerRole = async () => createRole(t, { roleType: 'DATA', permissionIds: await permissionIds(t, ['DATASET_READ']) });

    describe('users: active, groupIds, externalId', () => {
      it('active defaults to true, is read back, filters the list, and an inactive user holds nothing', async () => {
        const email = uniqueEmail('active');
        const token = await grant(t, email, ['USER_READ']);
        const user = (await ok('GET', `/v1/users?email=${email}`)).content[0];
        assert.equal(user.active, true);
        assert.equal((await call('GET', '/v1/users', undefined, token)).statusCode, 200);

        assert.equal((await ok('PATCH', `/v1/users/${user.id}`, { active: false })).active, false);
        assert.deepEqual((await me(token)).assignments, []);
        expectProblem(await call('GET', '/v1/users', undefined, token), 403, 'ACCESS_DENIED');
        assert.ok((await ok('GET', `/v1/users?active=false&size=1000`)).content.some((u: Json) => u.id === user.id));
        assert.ok(!(await ok('GET', `/v1/users?active=true&size=1000`)).content.some((u: Json) => u.id === user.id));

        assert.equal((await ok('PATCH', `/v1/users/${user.id}`, { active: true })).active, true);
        assert.equal((await call('GET', '/v1/users', undefined, token)).statusCode, 200);
      });

      it('the last administrator cannot be deactivated', async () => {
        const administrators = await administratorsGroup(t);
        const [admin] = administrators.members;
        expectProblem(await call('PATCH', `/v1/users/${admin.id}`, { active: false }), 409, 'LAST_TENANT_ADMINISTRATOR');
      });

      it('groupIds on create and PUT set the memberships (omitted on PUT: unchanged); unknown groups answer 400', async () => {
        const [a, b] = [await createGroup(t), await createGroup(t)];
        const created = await ok('POST', '/v1/users', { email: uniqueEmail('g'), firstName: 'Gro', lastName: 'Ups', groupIds: [a.id] });
        assert.deepEqual(created.groups.map((g: Json) => g.id), [a.id]);
        const body = { email: created.email, firstName: 'Gro', lastName: 'Ups' };
        assert.deepEqual((await ok('PUT', `/v1/users/${created.id}`, body)).groups.map((g: Json) => g.id), [a.id]);
        assert.deepEqual((await ok('PUT', `/v1/users/${created.id}`, { ...body, groupIds: [b.id] })).groups.map((g: Json) => g.id), [b.id]);
        assert.deepEqual((await ok('PATCH', `/v1/users/${created.id}`, { groupIds: null })).groups, []);
        expectFieldError(await call('POST', '/v1/users', { ...body, email: uniqueEmail('g'), groupIds: [a.id, crypto.randomUUID()] }), 'groupIds[1]');
      });

      it('externalId: unique, and the token whose sub it is names the user, before any email match', async () => {
        const email = uniqueEmail('ext');
        await grant(t, email, ['GROUP_READ']);
        const user = (await ok('GET', `/v1/users?email=${email}`)).content[0];
        assert.equal(user.externalId, null);
        const subject = `kc-${crypto.randomUUID()}`;
        assert.equal((await ok('PATCH', `/v1/users/${user.id}`, { externalId: subject })).externalId, subject);
        assert.equal((await ok('GET', `/v1/users?externalId=${subject}`)).content[0].id, user.id);
        const taken = expectProblem(await call('POST', '/v1/users', { email: uniqueEmail('dup'), firstName: 'D', lastName: 'Up', externalId: subject }), 409, 'UNIQUE_CONSTRAINT_VIOLATION');
        assert.deepEqual(taken.fieldErrors, [{ field: 'externalId', message: 'is already taken' }]);

        // Found by sub, whatever email the token carries.
        const bySubject = await t.signToken({ sub: subject, email: 'someone.else@example.com' });
        assert.equal((await me(bySubject)).id, user.id);
        assert.equal((await call('GET', '/v1/groups', undefined, bySubject)).statusCode, 200);
        // A bound user is not found by email with another subject.
        const byEmail = await t.signToken({ sub: crypto.randomUUID(), email });
        assert.equal((await me(byEmail)).id, null);
        expectProblem(await call('GET', '/v1/groups', undefined, byEmail), 403, 'ACCESS_DENIED');
        // Cleared again: the email finds the user.
        assert.equal((await ok('PATCH', `/v1/users/${user.id}`, { externalId: null })).externalId, null);
        assert.equal((await me(byEmail)).id, user.id);
      });
    });

    describe('groups: a tree', () => {
      it('members of a subgroup hold the assignments of every ancestor; parentGroup is a Ref; parentGroupId filters', async () => {
        const role = await readerRole();
        const pool = await createDatapool(t);
        const root = await createGroup(t);
        await createAssignment(t, { groupId: root.id, roleId: role.id, scopeType: 'DATAPOOL', scopeId: pool.id });
        const middle = await ok('POST', '/v1/groups', { name: uniqueName('middle'), parentGroupId: root.id });
        assert.deepEqual(middle.parentGroup, { id: root.id, name: root.name });
        const email = uniqueEmail('leaf');
        const user = await createUser(t, { email });
        const leaf = await ok('POST', '/v1/groups', { name: uniqueName('leaf'), parentGroupId: middle.id, memberIds: [user.id] });
        assert.deepEqual((await me(await t.tokenFor(email))).assignments, [{ scopeType: 'DATAPOOL', scopeId: pool.id, permissions: ['DATASET_READ'] }]);
        assert.deepEqual((await ok('GET', `/v1/groups?parentGroupId=${middle.id}`)).content.map((g: Json) => g.id), [leaf.id]);

        // Moved to the top: the inherited assignment is gone.
        assert.equal((await ok('PATCH', `/v1/groups/${leaf.id}`, { parentGroupId: null })).parentGroup, null);
        assert.deepEqual((await me(await t.tokenFor(email))).assignments, []);
      });

      it('refuses cycles and unknown parents with 400 naming parentGroupId', async () => {
        const a = await createGroup(t);
        const b = await ok('POST', '/v1/groups', { name: uniqueName('b'), parentGroupId: a.id });
        const c = await ok('POST', '/v1/groups', { name: uniqueName('c'), parentGroupId: b.id });
        expectFieldError(await call('PATCH', `/v1/groups/${a.id}`, { parentGroupId: a.id }), 'parentGroupId');
        expectFieldError(await call('PATCH', `/v1/groups/${a.id}`, { parentGroupId: c.id }), 'parentGroupId');
        expectFieldError(await call('PUT', `/v1/groups/${a.id}`, { name: a.name, parentGroupId: b.id }), 'parentGroupId');
        expectFieldError(await call('POST', '/v1/groups', { name: uniqueName('x'), parentGroupId: crypto.randomUUID() }), 'parentGroupId');
        assert.equal((await ok('GET', `/v1/groups/${a.id}`)).parentGroup, null);
      });

      it('a group with subgroups cannot be deleted (409 RESOURCE_IN_USE); its subgroups first', async () => {
        const parent = await createGroup(t);
        const child = await ok('POST', '/v1/groups', { name: uniqueName('child'), parentGroupId: parent.id });
        const refused = expectProblem(await call('DELETE', `/v1/groups/${parent.id}`), 409, 'RESOURCE_IN_USE');
        assert.match(refused.detail, new RegExp(child.name));
        assert.equal((await call('DELETE', `/v1/groups/${child.id}`)).statusCode, 204);
        assert.equal((await call('DELETE', `/v1/groups/${parent.id}`)).statusCode, 204);
      });
    });

    describe('explicit null', () => {
      it('means "not given" on create and "clear" on PATCH where the field may be empty', async () => {
        const contact = await createUser(t);
        const group = await ok('POST', '/v1/groups', { name: uniqueName('nulls'), description: null, contactUserId: null, memberIds: null, parentGroupId: null });
        assert.equal(group.description, '');
        const patched = await ok('PATCH', `/v1/groups/${group.id}`, { description: 'd', contactUserId: contact.id, memberIds: [contact.id] });
        assert.equal(patched.description, 'd');
        const cleared = await ok('PATCH', `/v1/groups/${group.id}`, { description: null, contactUserId: null, memberIds: null });
        assert.deepEqual([cleared.description, cleared.contactUser, cleared.members], ['', null, []]);

        const role = await ok('POST', '/v1/roles', { name: uniqueName('r'), roleType: 'DATA', description: null, permissionIds: null, readonly: null });
        assert.deepEqual([role.description, role.permissions, role.readonly], ['', [], false]);
        const user = await ok('POST', '/v1/users', { email: uniqueEmail('n'), firstName: 'N', lastName: 'Ull', phone: null, title: null, active: null, externalId: null, groupIds: null });
        assert.deepEqual([user.phone, user.title, user.active, user.externalId, user.groups], [null, 'OTHER', true, null, []]);
      });

      it('scopeType TENANT with scopeId null is a valid assignment', async () => {
        const group = await createGroup(t);
        const role = await readerRole();
        const created = await ok('POST', '/v1/assignments', { groupId: group.id, roleId: role.id, scopeType: 'TENANT', scopeId: null });
        assert.deepEqual([created.scopeType, created.scope.id], ['TENANT', t.ctx.tenant.id]);
        const replaced = await ok('PUT', `/v1/groups/${group.id}/assignments`, [{ roleId: role.id, scopeType: null, scopeId: null }]);
        assert.deepEqual(replaced.assignments.map((a: Json) => a.id), [created.id]);
      });

      it('is refused where the field cannot be empty, naming it', async () => {
        const group = await createGroup(t);
        expectFieldError(await call('PATCH', `/v1/groups/${group.id}`, { name: null }), 'name');
        expectFieldError(await call('POST', '/v1/groups', { name: null }), 'name');
        const user = await createUser(t);
        expectFieldError(await call('PATCH', `/v1/users/${user.id}`, { title: null }), 'title');
        expectFieldError(await call('PATCH', `/v1/users/${user.id}`, { active: null }), 'active');
        const pool = await createDatapool(t);
        expectFieldError(await call('PATCH', `/v1/datapools/${pool.id}`, { assignments: null }), 'assignments');
        expectFieldError(await call('PATCH', `/v1/datapools/${pool.id}`, { description: null }), 'description');
      });
    });

    describe('an assignment never points at a missing object', () => {
      it('DELETE of a datapool racing assignments on it: after every round no assignment of the deleted pool remains', async () => {
        const role = await readerRole();
        const group = await createGroup(t);
        const other = await createGroup(t);
        for (let round = 0; round < 20; round++) {
          const pool = await createDatapool(t);
          const [deleted, created, replaced] = await raceInDatabase(t, 'datapools', [
            () => call('DELETE', `/v1/datapools/${pool.id}`),
            () => call('POST', '/v1/assignments', { groupId: group.id, roleId: role.id, scopeType: 'DATAPOOL', scopeId: pool.id }),
            () => call('PUT', `/v1/groups/${other.id}/assignments`, [{ roleId: role.id, scopeType: 'DATAPOOL', scopeId: pool.id }]),
          ]);
          assert.equal(deleted.statusCode, 204, deleted.body);
          assert.ok([201, 400].includes(created.statusCode), created.body);
          assert.ok([200, 400].includes(replaced.statusCode), replaced.body);
          const left = await ok('GET', `/v1/assignments?scopeId=${pool.id}`);
          assert.equal(left.totalElements, 0, `round ${round}: ${JSON.stringify(left.content)}`);
          if (created.statusCode === 201) expectProblem(await call('GET', `/v1/assignments/${created.json().id}`), 404, 'NOT_FOUND');
        }
        // Nothing of the deleted pools is left to show in a profile or to block the role's deletion.
        assert.deepEqual((await ok('GET', `/v1/groups/${group.id}`)).assignments, []);
        assert.deepEqual((await ok('GET', `/v1/groups/${other.id}`)).assignments, []);
        assert.equal((await call('DELETE', `/v1/roles/${role.id}`)).statusCode, 204);
      });

      it('the database refuses an assignment row whose scope object does not exist', async () => {
        const group = await createGroup(t);
        const role = await readerRole();
        // A well-formed row (scope id = datapool id, as the check constraint wants) naming no datapool: the foreign key refuses it.
        const missing = crypto.randomUUID();
        await assert.rejects(t.ctx.db.insertInto('assignments').values({
          id: crypto.randomUUID(), group_id: group.id, role_id: role.id, scope_type: 'DATAPOOL', scope_id: missing,
          tenant_id: null, datapool_id: missing,
        }).execute(), (error: { code?: string; message?: string }) => error.code === FOREIGN_KEY_VIOLATION && /datapool/.test(String(error.message)));
        await assert.rejects(t.ctx.db.insertInto('assignments').values({
          id: crypto.randomUUID(), group_id: group.id, role_id: role.id, scope_type: 'DATAPOOL', scope_id: t.ctx.tenant.id,
          tenant_id: t.ctx.tenant.id, datapool_id: null,
        }).execute(), (error: { code?: string }) => error.code === CHECK_VIOLATION); // a DATAPOOL scope naming the tenant
      });
    });
  });
}
