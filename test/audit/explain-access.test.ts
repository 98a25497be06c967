import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { randomUUID } from 'node:crypto';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import {
  bearer, createAssignment, createDatapool, createGroup, createRole, createUser, expectFieldError, expectProblem, grant, permissionIds,
  seededRole, uniqueEmail, uniqueName,
} from '../helpers/factories.js';

/**
 * GET /v1/datasets/{id}/access: every permission a user holds on a dataset with every assignment
 * granting it, through the dataset, its datapool or the tenant, and through the user's groups and
 * their ancestors; who may ask; the 404s.
 */

type Json = Record<string, any>;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`explain access (${kind})`, () => {
    let t: TestApp;
    const call = (url: string, token = t.adminToken) => t.app.inject({ method: 'GET', url, headers: bearer(token) });
    const explain = async (datasetId: string, userId?: string, token = t.adminToken) => {
      const response = await call(`/v1/datasets/${datasetId}/access${userId ? `?userId=${userId}` : ''}`, token);
      assert.equal(response.statusCode, 200, response.body);
      return response.json();
    };
    const newDataset = async (datapoolId?: string) => {
      const response = await t.app.inject({
        method: 'POST', url: '/v1/datasets', headers: bearer(t.adminToken),
        payload: { name: uniqueName('Explained'), description: 'd', ...(datapoolId ? { datapoolId } : {}) },
      });
      assert.equal(response.statusCode, 201, response.body);
      return response.json();
    };

    // A pool with a dataset; a parent group holding a DATAPOOL assignment; its subgroup (the
    // user's only group) holding a DATASET assignment; an assignment elsewhere that must not count.
    let pool: { id: string; name: string };
    let dataset: Json;
    let otherDataset: Json;
    let parent: Json;
    let child: Json;
    let editor: Json;
    let reader: Json;
    let viaPool: Json;
    let viaDataset: Json;
    let user: { id: string; email: string };
    before(async () => {
      t = await buildTestApp(kind);
      pool = await createDatapool(t);
      const otherPool = await createDatapool(t);
      dataset = await newDataset(pool.id);
      otherDataset = await newDataset(otherPool.id);
      user = await createUser(t, { email: uniqueEmail('explained') });
      parent = await createGroup(t, { name: uniqueName('parent') });
      child = await createGroup(t, { name: uniqueName('child'), parentGroupId: parent.id, memberIds: [user.id] });
      editor = await createRole(t, { name: uniqueName('editor'), permissionIds: await permissionIds(t, ['DATASET_READ', 'DATASET_UPDATE']) });
      reader = await createRole(t, { name: uniqueName('reader'), permissionIds: await permissionIds(t, ['DATASET_READ']) });
      viaPool = await createAssignment(t, { groupId: parent.id, roleId: editor.id, scopeType: 'DATAPOOL', scopeId: pool.id });
      viaDataset = await createAssignment(t, { groupId: child.id, roleId: reader.id, scopeType: 'DATASET', scopeId: dataset.id });
      await createAssignment(t, { groupId: child.id, roleId: editor.id, scopeType: 'DATAPOOL', scopeId: otherPool.id });
    });
    after(() => t.close());

    const grantOf = (assignment: Json, group: Json, role: Json) => ({
      assignmentId: assignment.id, groupId: group.id, groupName: group.name, roleId: role.id, roleName: role.name,
      scopeType: assignment.scopeType, scopeId: assignment.scope.id,
    });

    it('names every assignment granting each permission: the datapool one inherited from the parent group, the dataset one of the own group', async () => {
      const answer = await explain(dataset.id, user.id);
      assert.deepEqual(answer, {
        userId: user.id,
        datasetId: dataset.id,
        permissions: [
          { name: 'DATASET_READ', grants: [grantOf(viaPool, parent, editor), grantOf(viaDataset, child, reader)] },
          { name: 'DATASET_UPDATE', grants: [grantOf(viaPool, parent, editor)] },
        ],
      });
      // The other pool's assignment covers the other dataset, not this one.
      assert.deepEqual((await explain(otherDataset.id, user.id)).permissions.map((p: Json) => [p.name, p.grants.map((g: Json) => g.scopeId)]), [
        ['DATASET_READ', [otherDataset.datapool.id]], ['DATASET_UPDATE', [otherDataset.datapool.id]],
      ]);
    });

    it('names a TENANT assignment, with the tenant as its scope, and sorts permissions by name', async () => {
      const consumer = await seededRole(t, 'Data Consumer');
      const tenantUser = await createUser(t);
      const group = await createGroup(t, { memberIds: [tenantUser.id] });
      const assignment = await createAssignment(t, { groupId: group.id, roleId: consumer.id });
      const grantEntry = grantOf(assignment, group, consumer);
      assert.equal(grantEntry.scopeType, 'TENANT');
      assert.equal(grantEntry.scopeId, t.ctx.tenant.id);
      assert.deepEqual((await explain(dataset.id, tenantUser.id)).permissions, [
        { name: 'DATASET_PAYLOAD_READ', grants: [grantEntry] },
        { name: 'DATASET_READ', grants: [grantEntry] },
      ]);
      const admin = await explain(dataset.id);
      const names = admin.permissions.map((p: Json) => p.name);
      assert.deepEqual(names, [...names].sort());
      assert.ok(names.includes('ASSIGNMENT_READ') && names.includes('DATASET_DELETE'));
      assert.equal(admin.userId, (await call('/v1/users/me')).json().id);
    });

    it('a user without any permission, and an inactive user, get "permissions": []', async () => {
      const nobody = await createUser(t);
      assert.deepEqual((await explain(dataset.id, nobody.id)).permissions, []);
      const inactive = await createUser(t);
      await createGroup(t, { parentGroupId: child.id, memberIds: [inactive.id] });
      assert.equal((await explain(dataset.id, inactive.id)).permissions.length, 2);
      const patched = await t.app.inject({ method: 'PATCH', url: `/v1/users/${inactive.id}`, headers: bearer(t.adminToken), payload: { active: false } });
      assert.equal(patched.statusCode, 200, patched.body);
      assert.deepEqual(await explain(dataset.id, inactive.id), { userId: inactive.id, datasetId: dataset.id, permissions: [] });
    });

    it('the caller may explain its own access without ASSIGNMENT_READ, but not anyone else\'s (403)', async () => {
      const token = await t.tokenFor(user.email);
      const own = await explain(dataset.id, undefined, token);
      assert.equal(own.userId, user.id);
      assert.deepEqual(own.permissions.map((p: Json) => p.name), ['DATASET_READ', 'DATASET_UPDATE']);
      assert.deepEqual(await explain(dataset.id, user.id, token), own);
      const someone = await createUser(t);
      expectProblem(await call(`/v1/datasets/${dataset.id}/access?userId=${someone.id}`, token), 403, 'ACCESS_DENIED');
    });

    it('ASSIGNMENT_READ on the datapool explains anyone on its datasets; a dataset outside it is not found', async () => {
      const token = await grant(t, uniqueEmail('pool-auditor'), ['ASSIGNMENT_READ', 'DATASET_READ'], { scopeType: 'DATAPOOL', scopeId: pool.id });
      assert.equal((await explain(dataset.id, user.id, token)).permissions.length, 2);
      expectProblem(await call(`/v1/datasets/${otherDataset.id}/access?userId=${user.id}`, token), 404, 'NOT_FOUND');
    });

    it('404 for an unknown or unreadable dataset, 404 naming userId for an unknown user, 400 for a malformed one', async () => {
      expectProblem(await call(`/v1/datasets/${randomUUID()}/access`), 404, 'NOT_FOUND');
      // A dataset the caller may not read is not found, even for the caller's own access.
      const outsider = await createUser(t, { email: uniqueEmail('outsider') });
      const outsiderToken = await t.tokenFor(outsider.email);
      expectProblem(await call(`/v1/datasets/${dataset.id}/access`, outsiderToken), 404, 'NOT_FOUND');
      const unknown = randomUUID();
      const body = expectProblem(await call(`/v1/datasets/${dataset.id}/access?userId=${unknown}`), 404, 'NOT_FOUND');
      assert.match(body.detail, /userId/);
      assert.deepEqual(body.fieldErrors, [{ field: 'userId', message: 'no user has this id' }]);
      expectFieldError(await call(`/v1/datasets/${dataset.id}/access?userId=nope`), 'userId');
      expectFieldError(await call('/v1/datasets/nope/access'), 'id');
    });

    it('is in the OpenAPI document', async () => {
      const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      const operation = doc.paths['/v1/datasets/{id}/access']?.get;
      assert.ok(operation, 'GET /v1/datasets/{id}/access is documented');
      assert.ok(operation.parameters.some((p: Json) => p.name === 'userId' && p.in === 'query'));
      assert.ok(operation.responses['200'] && operation.responses['403'] && operation.responses['404']);
    });
  });
}
