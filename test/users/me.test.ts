import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { scopeColumns } from '../../src/access/scopes.js';
import { ADMIN_EMAIL, buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';

const ME_KEYS = ['assignments', 'email', 'firstName', 'id', 'lastName', 'title', 'username'];
const tagOf = () => randomUUID().slice(0, 8);

interface Me {
  id: string | null; username: string | null; email: string | null; firstName: string | null; lastName: string | null; title: string;
  assignments: { scopeType: string; scopeId: string; permissions: string[] }[];
}

for (const kind of databaseKinds(import.meta.url)) {
  describe(`GET /v1/users/me (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());

    const me = (token: string | null, headers: Record<string, string> = {}) =>
      t.app.inject({ method: 'GET', url: '/v1/users/me', headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers } });

    async function okMe(token: string, headers: Record<string, string> = {}): Promise<Me> {
      const response = await me(token, headers);
      assert.equal(response.statusCode, 200, response.body);
      assert.match(String(response.headers['content-type']), /^application\/json/);
      assert.match(String(response.headers['etag']), /^"[^"]+"$/);
      const body: Me = response.json();
      assert.deepEqual(Object.keys(body).sort(), ME_KEYS);
      return body;
    }

    /** Every permission name of a role, sorted, as the database holds them. */
    const permissionsOfRole = async (roleName: string) =>
      (await t.ctx.db.selectFrom('role_permissions as rp').innerJoin('roles as r', 'r.id', 'rp.role_id').innerJoin('permissions as p', 'p.id', 'rp.permission_id')
        .select('p.name').where('r.name', '=', roleName).execute()).map((row) => row.name).sort();

    test('the bootstrap administrator: profile and the TENANT assignment with every permission', async () => {
      const body = await okMe(t.adminToken);
      const [admin] = (await t.ctx.db.selectFrom('users').select('id').where('email', '=', ADMIN_EMAIL).execute());
      const permissions = await t.app.inject({ method: 'GET', url: '/v1/permissions', headers: { authorization: `Bearer ${t.adminToken}` } });
      const everyPermission = permissions.json<{ name: string }[]>().map((p) => p.name).sort();
      assert.ok(everyPermission.includes('USER_WRITE') && everyPermission.includes('DATASET_READ'));
      assert.deepEqual(body, {
        id: admin!.id,
        username: ADMIN_EMAIL,
        email: ADMIN_EMAIL,
        firstName: 'Admin',
        lastName: 'Administrator',
        title: 'OTHER',
        assignments: [{ scopeType: 'TENANT', scopeId: t.ctx.tenant.id, permissions: everyPermission }],
      });
    });

    test('is not taken for /users/{id} and needs no USER_READ', async () => {
      const tag = tagOf();
      const response = await t.app.inject({
        method: 'POST', url: '/v1/users', headers: { authorization: `Bearer ${t.adminToken}` },
        payload: { email: `plain.${tag}@example.com`, firstName: 'Stored', lastName: 'Names', title: 'MS', phone: '1' },
      });
      assert.equal(response.statusCode, 201, response.body);
      const user = response.json<{ id: string; email: string }>();
      const token = await t.tokenFor(user.email);
      assert.equal((await t.app.inject({ method: 'GET', url: `/v1/users/${user.id}`, headers: { authorization: `Bearer ${token}` } })).statusCode, 403);
      // The service's own names win over the token's.
      assert.deepEqual(await okMe(token), {
        id: user.id, username: user.email, email: user.email, firstName: 'Stored', lastName: 'Names', title: 'MS', assignments: [],
      });
    });

    test('an email unknown to the service: 200, id null, the token names, title OTHER, no assignments', async () => {
      const tag = tagOf();
      const email = `jane.doe+${tag}@example.com`;
      assert.deepEqual(await okMe(await t.tokenFor(email)), {
        id: null, username: email, email, firstName: 'Jane', lastName: 'Doe', title: 'OTHER', assignments: [],
      });
    });

    test('username is preferred_username when present, else the email; missing name claims answer null', async () => {
      const tag = tagOf();
      const email = `claims.${tag}@example.com`;
      const withUsername = await t.signToken({ sub: randomUUID(), email, preferred_username: `handle-${tag}`, given_name: 'Given', family_name: 'Family' });
      assert.deepEqual(await okMe(withUsername), {
        id: null, username: `handle-${tag}`, email, firstName: 'Given', lastName: 'Family', title: 'OTHER', assignments: [],
      });
      const bare = await t.signToken({ sub: randomUUID(), email });
      assert.deepEqual(await okMe(bare), { id: null, username: email, email, firstName: null, lastName: null, title: 'OTHER', assignments: [] });
    });

    test('assignments are grouped per scope, sorted by scopeType then scopeId, permissions merged and sorted', async () => {
      const tag = tagOf();
      const userId = randomUUID();
      const email = `grants.${tag}@example.com`;
      await t.ctx.db.insertInto('users').values({ id: userId, email, first_name: 'Gr', last_name: 'Ants', title: 'MR' }).execute();
      const groupA = randomUUID();
      const groupB = randomUUID();
      await t.ctx.db.insertInto('groups').values([{ id: groupA, name: `grants-a-${tag}`, description: '' }, { id: groupB, name: `grants-b-${tag}`, description: '' }]).execute();
      await t.ctx.db.insertInto('group_members').values([{ group_id: groupA, user_id: userId }, { group_id: groupB, user_id: userId }]).execute();
      const roles = await t.ctx.db.selectFrom('roles').select(['id', 'name']).where('name', 'in', ['Data Consumer', 'Data Owner']).execute();
      const roleId = (name: string) => roles.find((role) => role.name === name)!.id;
      const [poolLow, poolHigh] = ['00000000-0000-4000-8000-000000000001', 'ffffffff-ffff-4fff-bfff-ffffffffffff'];
      await t.ctx.db.insertInto('datapools').values([
        { id: poolLow, name: `pool-low-${tag}`, description: 'low' }, { id: poolHigh, name: `pool-high-${tag}`, description: 'high' },
      ]).execute();
      await t.ctx.db.insertInto('assignments').values([
        { id: randomUUID(), group_id: groupA, role_id: roleId('Data Consumer'), ...scopeColumns('DATAPOOL', poolHigh) },
        // The same scope through two groups and two roles: one entry, the union of the permissions.
        { id: randomUUID(), group_id: groupA, role_id: roleId('Data Consumer'), ...scopeColumns('DATAPOOL', poolLow) },
        { id: randomUUID(), group_id: groupB, role_id: roleId('Data Owner'), ...scopeColumns('DATAPOOL', poolLow) },
        { id: randomUUID(), group_id: groupB, role_id: roleId('Data Consumer'), ...scopeColumns('DATAPOOL', poolLow) },
      ]).execute();
      const consumer = await permissionsOfRole('Data Consumer');
      const owner = await permissionsOfRole('Data Owner');
      assert.deepEqual(consumer, ['DATASET_PAYLOAD_READ', 'DATASET_READ']);

      const body = await okMe(await t.tokenFor(email));
      assert.deepEqual(body, {
        id: userId, username: email, email, firstName: 'Gr', lastName: 'Ants', title: 'MR',
        assignments: [
          { scopeType: 'DATAPOOL', scopeId: poolLow, permissions: [...new Set([...owner, ...consumer])].sort() },
          { scopeType: 'DATAPOOL', scopeId: poolHigh, permissions: consumer },
        ],
      });

      // X-Allowed-Scope-Ids keeps only the listed scopes.
      const narrowed = await okMe(await t.tokenFor(email), { 'x-allowed-scope-ids': `${randomUUID()}, ${poolHigh.toUpperCase()}` });
      assert.deepEqual(narrowed.assignments, body.assignments.slice(1));
    });

    test('X-Allowed-Scope-Ids set to a scope the caller holds nothing on: no assignments', async () => {
      const body = await okMe(t.adminToken, { 'x-allowed-scope-ids': randomUUID() });
      assert.equal(body.id !== null, true);
      assert.deepEqual(body.assignments, []);
    });

    test('X-Allowed-Scope-Ids set to the tenant id (or *): the TENANT assignment is back', async () => {
      const unrestricted = await okMe(t.adminToken);
      assert.deepEqual((await okMe(t.adminToken, { 'x-allowed-scope-ids': t.ctx.tenant.id })).assignments, unrestricted.assignments);
      assert.deepEqual((await okMe(t.adminToken, { 'x-allowed-scope-ids': `${randomUUID()},${t.ctx.tenant.id}` })).assignments, unrestricted.assignments);
      assert.deepEqual((await okMe(t.adminToken, { 'x-allowed-scope-ids': '*' })).assignments, unrestricted.assignments);
      assert.equal(unrestricted.assignments.length, 1);
      assert.equal(unrestricted.assignments[0]!.scopeType, 'TENANT');
    });

    test('X-Allowed-Scope-Ids that is not a list of uuids: 400 VALIDATION_FAILED', async () => {
      const response = await me(t.adminToken, { 'x-allowed-scope-ids': 'not-a-uuid' });
      assert.equal(response.statusCode, 400);
      assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
      const problem = response.json();
      assert.equal(problem.type, 'urn:platform:error:VALIDATION_FAILED');
      assert.equal(problem.instance, '/v1/users/me');
      assert.deepEqual(problem.fieldErrors.map((error: { field: string }) => error.field), ['X-Allowed-Scope-Ids']);
    });

    test('no token, or a token that does not verify: 401 with an HTML body', async () => {
      for (const token of [null, 'not.a.token']) {
        const response = await me(token);
        assert.equal(response.statusCode, 401);
        assert.match(String(response.headers['content-type']), /^text\/html/);
      }
    });
  });
}
