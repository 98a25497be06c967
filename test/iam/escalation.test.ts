import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import {
  administratorsGroup, bearer, createAssignment, createDatapool, createGroup, createRole, createUser, expectProblem, grant,
  permissionIds, seededRole, uniqueEmail,
} from '../helpers/factories.js';

/**
 * No privilege escalation (the rule of Kubernetes RBAC): a change that grants permissions needs the
 * caller to hold each of them at a scope covering the scope it is granted on. Each path that used
 * to make a holder of one SYSTEM write permission a Tenant Administrator in one request.
 */

type Json = Record<string, any>;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`privilege escalation (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());

    const call = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, token: string, payload?: unknown) =>
      t.app.inject({ method, url, headers: bearer(token), ...(payload === undefined ? {} : { payload: payload as Json }) });
    const userIdOf = async (email: string) => {
      const response = await call('GET', `/v1/users?email=${encodeURIComponent(email)}`, t.adminToken);
      return response.json().content[0].id as string;
    };
    const meOf = async (token: string) => (await call('GET', '/v1/users/me', token)).json();
    /** 403 ACCESS_DENIED whose detail and missingPermissions name `permission`. */
    const expectMissing = (response: Awaited<ReturnType<typeof call>>, permission: string) => {
      const problem = expectProblem(response, 403, 'ACCESS_DENIED');
      assert.match(problem.detail, new RegExp(permission));
      assert.ok(problem.missingPermissions.some((m: Json) => m.permission === permission), response.body);
      return problem;
    };

    it('GROUP_WRITE cannot add oneself to Administrators', async () => {
      const email = uniqueEmail('gw');
      const token = await grant(t, email, ['GROUP_WRITE', 'GROUP_READ']);
      const administrators = await administratorsGroup(t);
      const me = await userIdOf(email);
      const members = administrators.members.map((m: Json) => m.id);
      expectMissing(await call('PATCH', `/v1/groups/${administrators.id}`, token, { memberIds: [...members, me] }), 'USER_WRITE');
      expectMissing(await call('PUT', `/v1/groups/${administrators.id}`, token, { name: 'Administrators', memberIds: [...members, me] }), 'ROLE_WRITE');
      assert.deepEqual((await administratorsGroup(t)).members, administrators.members);
      assert.equal((await meOf(token)).assignments.length, 1);
    });

    it('USER_WRITE cannot put oneself into Administrators, by any of the user operations', async () => {
      const email = uniqueEmail('uw');
      const token = await grant(t, email, ['USER_WRITE', 'USER_READ']);
      const administrators = await administratorsGroup(t);
      const me = await userIdOf(email);
      const own = (await call('GET', `/v1/users/${me}`, t.adminToken)).json();
      const ownGroups = own.groups.map((g: Json) => g.id);
      expectMissing(await call('PUT', `/v1/users/${me}/groups`, token, [...ownGroups, administrators.id]), 'GROUP_WRITE');
      expectMissing(await call('PATCH', `/v1/users/${me}`, token, { groupIds: [...ownGroups, administrators.id] }), 'ASSIGNMENT_WRITE');
      expectMissing(await call('PUT', `/v1/users/${me}`, token, {
        email, firstName: own.firstName, lastName: own.lastName, groupIds: [...ownGroups, administrators.id],
      }), 'ROLE_WRITE');
      expectMissing(await call('POST', '/v1/users', token, {
        email: uniqueEmail('sock'), firstName: 'Sock', lastName: 'Puppet', groupIds: [administrators.id],
      }), 'DATAPOOL_WRITE');
      assert.deepEqual((await call('GET', `/v1/users/${me}`, t.adminToken)).json().groups, own.groups);
      // Taking over the administrator's account by changing its email (or externalId) to one's own identity.
      const adminId = await userIdOf('admin@example.com');
      expectMissing(await call('PATCH', `/v1/users/${adminId}`, token, { externalId: 'attacker-subject' }), 'ROLE_WRITE');
      expectMissing(await call('PATCH', `/v1/users/${adminId}`, token, { email: uniqueEmail('takeover') }), 'ROLE_WRITE');
    });

    it('ASSIGNMENT_WRITE cannot assign Tenant Administrator to its own group', async () => {
      const email = uniqueEmail('aw');
      const token = await grant(t, email, ['ASSIGNMENT_WRITE', 'ASSIGNMENT_READ', 'GROUP_WRITE']);
      const administrator = await seededRole(t, 'Tenant Administrator');
      const me = await userIdOf(email);
      const ownGroup = (await call('GET', `/v1/users/${me}`, t.adminToken)).json().groups[0].id;
      expectMissing(await call('POST', '/v1/assignments', token, { groupId: ownGroup, roleId: administrator.id, scopeType: 'TENANT' }), 'USER_WRITE');
      const before = (await call('GET', `/v1/groups/${ownGroup}`, t.adminToken)).json().assignments;
      const replaced = await call('PUT', `/v1/groups/${ownGroup}/assignments`, token, [
        ...before.map((a: Json) => ({ roleId: a.role.id, scopeType: a.scopeType, scopeId: a.scope.id })),
        { roleId: administrator.id, scopeType: 'TENANT' },
      ]);
      expectMissing(replaced, 'DATASET_DELETE');
      assert.deepEqual((await call('GET', `/v1/groups/${ownGroup}`, t.adminToken)).json().assignments, before);
    });

    it('ROLE_WRITE cannot add every permission to its own role, but may change a role nobody holds', async () => {
      const email = uniqueEmail('rw');
      const token = await grant(t, email, ['ROLE_WRITE', 'ROLE_READ']);
      const me = await userIdOf(email);
      const ownGroup = (await call('GET', `/v1/users/${me}`, t.adminToken)).json().groups[0].id;
      const ownRole = (await call('GET', `/v1/groups/${ownGroup}`, t.adminToken)).json().assignments[0].role;
      const all = (await call('GET', '/v1/permissions', t.adminToken)).json().map((p: Json) => p.id);
      expectMissing(await call('PATCH', `/v1/roles/${ownRole.id}`, token, { permissionIds: all }), 'USER_WRITE');
      assert.equal((await call('GET', `/v1/roles/${ownRole.id}`, t.adminToken)).json().permissions.length, 2);
      // A role with no assignment grants nothing; removing permissions grants nothing either.
      const unused = await createRole(t, { roleType: 'SYSTEM' });
      assert.equal((await call('PATCH', `/v1/roles/${unused.id}`, token, { permissionIds: all })).statusCode, 200);
      const [roleWrite] = await permissionIds(t, ['ROLE_WRITE']);
      assert.equal((await call('PATCH', `/v1/roles/${ownRole.id}`, token, { permissionIds: [roleWrite] })).statusCode, 200);
    });

    it('a caller may grant what it holds, at a scope its own grant covers, and nothing more', async () => {
      const pool = await createDatapool(t);
      const other = await createDatapool(t);
      const email = uniqueEmail('delegate');
      // ASSIGNMENT_WRITE tenant-wide, and DATASET_READ only on `pool`.
      const token = await grant(t, email, ['ASSIGNMENT_WRITE']);
      const me = await userIdOf(email);
      const readerRole = await createRole(t, { roleType: 'DATA', permissionIds: await permissionIds(t, ['DATASET_READ']) });
      const ownerRole = await createRole(t, { roleType: 'DATA', permissionIds: await permissionIds(t, ['DATASET_READ', 'DATASET_DELETE']) });
      const ownGroup = await createGroup(t, { memberIds: [me] });
      await createAssignment(t, { groupId: ownGroup.id, roleId: readerRole.id, scopeType: 'DATAPOOL', scopeId: pool.id });
      const target = await createGroup(t);
      const granted = await call('POST', '/v1/assignments', token, { groupId: target.id, roleId: readerRole.id, scopeType: 'DATAPOOL', scopeId: pool.id });
      assert.equal(granted.statusCode, 201, granted.body);
      expectMissing(await call('POST', '/v1/assignments', token, { groupId: target.id, roleId: readerRole.id, scopeType: 'DATAPOOL', scopeId: other.id }), 'DATASET_READ');
      expectMissing(await call('POST', '/v1/assignments', token, { groupId: target.id, roleId: readerRole.id, scopeType: 'TENANT' }), 'DATASET_READ');
      const tooMuch = expectMissing(await call('POST', '/v1/assignments', token, { groupId: target.id, roleId: ownerRole.id, scopeType: 'DATAPOOL', scopeId: pool.id }), 'DATASET_DELETE');
      assert.deepEqual(tooMuch.missingPermissions, [{ permission: 'DATASET_DELETE', scopeType: 'DATAPOOL', scopeId: pool.id }]);
    });

    it('adding a member to a group grants what the group and its ancestors hold: allowed when the caller holds it', async () => {
      const email = uniqueEmail('gw2');
      const token = await grant(t, email, ['GROUP_WRITE', 'DATASET_READ']);
      const readerRole = await createRole(t, { roleType: 'DATA', permissionIds: await permissionIds(t, ['DATASET_READ']) });
      const deleterRole = await createRole(t, { roleType: 'DATA', permissionIds: await permissionIds(t, ['DATASET_DELETE']) });
      const readers = await createGroup(t);
      await createAssignment(t, { groupId: readers.id, roleId: readerRole.id });
      const newcomer = await createUser(t);
      assert.equal((await call('PATCH', `/v1/groups/${readers.id}`, token, { memberIds: [newcomer.id] })).statusCode, 200);
      // A subgroup of a group holding DATASET_DELETE: its members would hold it too.
      const deleters = await createGroup(t);
      await createAssignment(t, { groupId: deleters.id, roleId: deleterRole.id });
      expectMissing(await call('POST', '/v1/groups', token, { name: `sub-${Date.now()}`, parentGroupId: deleters.id, memberIds: [newcomer.id] }), 'DATASET_DELETE');
      // Moving a group with members under it grants the same.
      expectMissing(await call('PATCH', `/v1/groups/${readers.id}`, token, { parentGroupId: deleters.id }), 'DATASET_DELETE');
      // Without members nothing is granted.
      const empty = await createGroup(t);
      assert.equal((await call('PATCH', `/v1/groups/${empty.id}`, token, { parentGroupId: deleters.id })).statusCode, 200);
    });

    it('reactivating a user gives them back their permissions: a grant like any other', async () => {
      const email = uniqueEmail('uw2');
      const token = await grant(t, email, ['USER_WRITE']);
      const holderEmail = uniqueEmail('holder');
      await grant(t, holderEmail, ['DATASET_DELETE']);
      const holder = await userIdOf(holderEmail);
      assert.equal((await call('PATCH', `/v1/users/${holder}`, t.adminToken, { active: false })).statusCode, 200);
      expectMissing(await call('PATCH', `/v1/users/${holder}`, token, { active: true }), 'DATASET_DELETE');
      assert.equal((await call('PATCH', `/v1/users/${holder}`, t.adminToken, { active: true })).statusCode, 200);
    });
  });
}
