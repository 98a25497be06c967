import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { createGroup, createRole, createUser, uniqueName } from '../helpers/factories.js';
import { raceInDatabase } from '../helpers/race.js';

// Writes that lock several things (the tenant-administrator guard, groups, users, datapools)
// take them in one order, so concurrent writes wait for each other instead of deadlocking
// (PostgreSQL would abort one of them: a 500). PGlite has one connection and serialises anyway.
// On PostgreSQL each pair is held behind a table lock of the test until both are inside the
// database, so that every round is a real race (raceInDatabase).
for (const kind of databaseKinds(import.meta.url)) {
  describe(`lock order (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());
    const headers = () => ({ authorization: `Bearer ${t.adminToken}` });

    test('a datapool assignment change racing the delete of its contact person never answers 500', async () => {
      const group = await createGroup(t);
      const role = await createRole(t);
      const statuses: number[] = [];
      for (let i = 0; i < 15; i++) {
        const user = await createUser(t);
        const pool = (await t.app.inject({ method: 'POST', url: '/v1/datapools', headers: headers(), payload: { name: uniqueName('pool'), description: 'd', contactPersonId: user.id } })).json();
        const responses = await raceInDatabase(t, 'datapools', [
          () => t.app.inject({ method: 'DELETE', url: `/v1/users/${user.id}`, headers: headers() }),
          () => t.app.inject({ method: 'PATCH', url: `/v1/datapools/${pool.id}`, headers: headers(), payload: { assignments: [{ groupId: group.id, roleId: role.id }] } }),
        ]);
        statuses.push(...responses.map((response) => response.statusCode));
      }
      assert.deepEqual(statuses.filter((status) => status >= 500), []);
      assert.ok(statuses.every((status) => status === 200 || status === 204), statuses.join(','));
    });

    test('naming a contact person racing the delete of that user never answers 500', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 15; i++) {
        const user = await createUser(t);
        const pool = (await t.app.inject({ method: 'POST', url: '/v1/datapools', headers: headers(), payload: { name: uniqueName('pool'), description: 'd' } })).json();
        const responses = await raceInDatabase(t, 'datapools', [
          () => t.app.inject({ method: 'PATCH', url: `/v1/datapools/${pool.id}`, headers: headers(), payload: { contactPersonId: user.id } }),
          () => t.app.inject({ method: 'DELETE', url: `/v1/users/${user.id}`, headers: headers() }),
        ]);
        statuses.push(...responses.map((response) => response.statusCode));
      }
      // The PATCH either lands first (200, then the delete clears the contact) or finds no user (400).
      assert.ok(statuses.every((status) => [200, 204, 400].includes(status)), statuses.join(','));
    });

    test('a group contact change racing the replacement of that user\'s groups never answers 500', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 15; i++) {
        const user = await createUser(t);
        const group = await createGroup(t);
        const responses = await raceInDatabase(t, 'groups', [
          () => t.app.inject({ method: 'PATCH', url: `/v1/groups/${group.id}`, headers: headers(), payload: { contactUserId: user.id } }),
          () => t.app.inject({ method: 'PUT', url: `/v1/users/${user.id}/groups`, headers: headers(), payload: [group.id] }),
        ]);
        statuses.push(...responses.map((response) => response.statusCode));
      }
      assert.ok(statuses.every((status) => status === 200), statuses.join(','));
    });
  });
}
