import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { ADMINISTRATORS_GROUP } from '../../src/access/catalogue.js';

// Removing the last person who holds Tenant Administrator (by user delete or membership change)
// would lock everybody out of the tenant; the service answers 409 and changes nothing.
for (const kind of databaseKinds(import.meta.url)) {
  describe(`last tenant administrator person (${kind})`, () => {
    let t: TestApp;
    let admin: { id: string };
    const auth = () => ({ authorization: `Bearer ${t.adminToken}` });
    before(async () => {
      t = await buildTestApp(kind);
      admin = (await t.app.inject({ method: 'GET', url: '/v1/users?email=admin@example.com', headers: auth() })).json().content[0];
    });
    after(() => t.close());

    test('deleting the only administrator answers 409 and keeps the user', async () => {
      const response = await t.app.inject({ method: 'DELETE', url: `/v1/users/${admin.id}`, headers: auth() });
      assert.equal(response.statusCode, 409);
      assert.equal(response.json().type, 'urn:platform:error:LAST_TENANT_ADMINISTRATOR');
      assert.equal((await t.app.inject({ method: 'GET', url: `/v1/users/${admin.id}`, headers: auth() })).statusCode, 200);
    });

    test('taking the only administrator out of Administrators answers 409', async () => {
      const byUser = await t.app.inject({ method: 'PUT', url: `/v1/users/${admin.id}/groups`, headers: auth(), payload: [] });
      assert.equal(byUser.statusCode, 409);
      const byGroup = await t.app.inject({ method: 'PATCH', url: `/v1/groups/${ADMINISTRATORS_GROUP.id}`, headers: auth(), payload: { memberIds: [] } });
      assert.equal(byGroup.statusCode, 409);
      const group = (await t.app.inject({ method: 'GET', url: `/v1/groups/${ADMINISTRATORS_GROUP.id}`, headers: auth() })).json();
      assert.deepEqual(group.members.map((m: { id: string }) => m.id), [admin.id]);
    });

    test('with a second administrator, the first may leave', async () => {
      const second = (await t.app.inject({ method: 'POST', url: '/v1/users', headers: auth(), payload: { email: 'second-admin@example.com', firstName: 'Second', lastName: 'Admin' } })).json();
      const added = await t.app.inject({ method: 'PATCH', url: `/v1/groups/${ADMINISTRATORS_GROUP.id}`, headers: auth(), payload: { memberIds: [admin.id, second.id] } });
      assert.equal(added.statusCode, 200);
      const left = await t.app.inject({ method: 'PUT', url: `/v1/users/${admin.id}/groups`, headers: auth(), payload: [] });
      assert.equal(left.statusCode, 200);
      assert.deepEqual(left.json().groups, []);
    });
  });
}
