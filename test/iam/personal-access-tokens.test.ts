import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import {
  bearer, createAssignment, createDatapool, createGroup, createRole, createUser, expectFieldError, expectHtml401, expectProblem, grant, permissionIds, uniqueEmail,
} from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { waitFor } from '../helpers/wait.js';

type Json = Record<string, any>;

// Personal access tokens (the contract's "Personal access tokens (data API)"): created and listed on
// the management API, accepted on the data API only, acting with their user's current rights.
for (const kind of databaseKinds(import.meta.url)) {
  describe(`personal access tokens (${kind})`, () => {
    let t: TestApp;
    let pool: { id: string };
    let a: PublishedDataset;
    let b: PublishedDataset;
    let open: PublishedDataset;

    before(async () => {
      t = await buildTestApp(kind);
      pool = await createDatapool(t);
      a = await publishStaDataset(t, { datapoolId: pool.id, slug: 'a' });
      b = await publishStaDataset(t, { datapoolId: pool.id, slug: 'b' });
      open = await publishStaDataset(t, { openDataAccess: true, slug: 'open' });
    });
    after(() => t.close());

    /** A user holding `permissions` on the datapool of A and B, with the assignment's id (to revoke it). */
    async function poolUser(permissions: readonly string[] = ['DATASET_PAYLOAD_READ']) {
      const email = uniqueEmail('pat');
      const user = await createUser(t, { email });
      const role = await createRole(t, { roleType: 'DATA', permissionIds: await permissionIds(t, permissions) });
      const group = await createGroup(t, { memberIds: [user.id] });
      const assignment = await createAssignment(t, { groupId: group.id, roleId: role.id, scopeType: 'DATAPOOL', scopeId: pool.id });
      return { user, assignmentId: assignment.id as string, token: await t.tokenFor(email) };
    }

    const createToken = (oidcToken: string, payload: Json) =>
      t.app.inject({ method: 'POST', url: '/v1/users/me/tokens', headers: bearer(oidcToken), payload });

    async function newToken(oidcToken: string, payload: Json = {}): Promise<Json> {
      const response = await createToken(oidcToken, { name: 'QGIS at the office', ...payload });
      assert.equal(response.statusCode, 201, response.body);
      return response.json();
    }

    const basic = (secret: string, user = 'anyone') => ({ authorization: `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}` });

    test('created: 201 with the secret once; lists never show it; only its SHA-256 is stored; audited without it', async () => {
      const owner = await poolUser();
      const before = Date.now();
      const created = await newToken(owner.token);
      assert.match(created.token, /^pat_[A-Za-z0-9_-]{43}$/);
      assert.equal(Buffer.from(created.token.slice(4), 'base64url').length, 32, '256 random bits');
      assert.equal(created.name, 'QGIS at the office');
      assert.equal(created.lastUsedAt, null);
      assert.equal(created.datasetIds, null);
      const lifetimeDays = (Date.parse(created.expiresAt) - before) / 86_400_000;
      assert.ok(lifetimeDays > 89.99 && lifetimeDays < 90.01, `default lifetime 90 days, got ${lifetimeDays}`);

      const list = await t.app.inject({ method: 'GET', url: '/v1/users/me/tokens', headers: bearer(owner.token) });
      assert.equal(list.statusCode, 200, list.body);
      assert.deepEqual(list.json().content.map((token: Json) => token.id), [created.id]);
      assert.equal(list.json().totalElements, 1);
      assert.equal(list.json().content[0].token, undefined);
      assert.ok(!list.body.includes(created.token.slice(4)), 'the list never carries the secret');

      const one = await t.app.inject({ method: 'GET', url: `/v1/users/me/tokens/${created.id}`, headers: bearer(owner.token) });
      assert.equal(one.statusCode, 200, one.body);
      const { token: _secret, ...shown } = created;
      assert.deepEqual(one.json(), shown);

      const { rows } = await sql<Json>`select * from personal_access_tokens where id = ${created.id}`.execute(t.ctx.db);
      assert.equal(rows.length, 1);
      assert.equal(rows[0]!.token_hash, createHash('sha256').update(created.token).digest('hex'));
      assert.ok(!JSON.stringify(rows[0]).includes(created.token.slice(4)), 'the row holds no secret');

      const deleted = await t.app.inject({ method: 'DELETE', url: `/v1/users/me/tokens/${created.id}`, headers: bearer(owner.token) });
      assert.equal(deleted.statusCode, 204, deleted.body);
      const again = await t.app.inject({ method: 'DELETE', url: `/v1/users/me/tokens/${created.id}`, headers: bearer(owner.token) });
      expectProblem(again, 404, 'NOT_FOUND');

      const events = await t.app.inject({ method: 'GET', url: `/v1/audit-events?objectId=${created.id}&sort=occurredAt,asc`, headers: bearer(t.adminToken) });
      assert.equal(events.statusCode, 200, events.body);
      const content: Json[] = events.json().content;
      assert.deepEqual(content.map((event) => [event.type, event.objectType, event.actorId]), [
        ['TOKEN_CREATED', 'PERSONAL_ACCESS_TOKEN', owner.user.id], ['TOKEN_DELETED', 'PERSONAL_ACCESS_TOKEN', owner.user.id],
      ]);
      assert.equal(content[0]!.after.name, 'QGIS at the office');
      assert.equal(content[1]!.before.userId, owner.user.id);
      assert.ok(!events.body.includes(created.token.slice(4)) && !events.body.includes(rows[0]!.token_hash), 'no secret nor digest in the audit log');
    });

    test('used as Bearer or as the Basic password (any user name) on the data API; 401 on the management API', async () => {
      const owner = await poolUser();
      const { token } = await newToken(owner.token);
      assert.equal((await a.request('GET', '/Things', undefined, { authorization: `Bearer ${token}` })).statusCode, 200);
      assert.equal((await a.request('GET', '/Things', undefined, basic(token))).statusCode, 200);
      assert.equal((await a.request('GET', '/Things', undefined, basic(token, ''))).statusCode, 200);
      // Its user may read but not write.
      expectProblem(await a.request('POST', '/Things', { name: 'x', description: 'y' }, { authorization: `Bearer ${token}` }), 403, 'ACCESS_DENIED');

      for (const headers of [bearer(token), basic(token)]) {
        expectHtml401(await t.app.inject({ method: 'GET', url: '/v1/users/me', headers }));
        expectHtml401(await t.app.inject({ method: 'GET', url: '/v1/users/me/tokens', headers }));
      }
      const managed = await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(token) });
      assert.match(String(managed.headers['www-authenticate']), /error="invalid_token", error_description="personal access tokens are accepted on the data API only"/);
    });

    test('unknown, malformed or deleted tokens, and Basic without one, answer 401 like a bad token', async () => {
      const owner = await poolUser();
      const created = await newToken(owner.token);
      assert.equal((await a.request('GET', '/Things', undefined, { authorization: `Bearer ${created.token}` })).statusCode, 200);
      const unknown = `pat_${Buffer.alloc(32, 7).toString('base64url')}`;
      for (const authorization of [`Bearer ${unknown}`, 'Bearer pat_short', basic(unknown).authorization, basic('password').authorization, 'Basic bm9jb2xvbg==']) {
        const response = await a.request('GET', '/Things', undefined, { authorization });
        expectHtml401(response);
        assert.match(String(response.headers['www-authenticate']), /^Bearer realm="api", error="(invalid_token|invalid_request)"/);
      }
      // Even on open data, a credential that is sent must be valid.
      expectHtml401(await open.request('GET', '/Things', undefined, { authorization: `Bearer ${unknown}` }));
      const deleted = await t.app.inject({ method: 'DELETE', url: `/v1/users/me/tokens/${created.id}`, headers: bearer(owner.token) });
      assert.equal(deleted.statusCode, 204);
      expectHtml401(await a.request('GET', '/Things', undefined, { authorization: `Bearer ${created.token}` }));
      expectHtml401(await a.request('GET', '/Things', undefined, basic(created.token)));
    });

    test('narrowed to dataset A: A is readable, B is not even though the user may read it; open data stays readable', async () => {
      const owner = await poolUser();
      const narrowed = await newToken(owner.token, { datasetIds: [a.datasetId.toUpperCase()] });
      assert.deepEqual(narrowed.datasetIds, [a.datasetId]);
      const as = { authorization: `Bearer ${narrowed.token}` };
      assert.equal((await a.request('GET', '/Things', undefined, as)).statusCode, 200);
      expectProblem(await b.request('GET', '/Things', undefined, as), 404, 'NOT_FOUND');
      assert.equal((await b.request('GET', '/Things', undefined, bearer(owner.token))).statusCode, 200, 'the user reads B with their own token');
      assert.equal((await open.request('GET', '/Things', undefined, as)).statusCode, 200);
      expectProblem(await open.request('POST', '/Things', { name: 'x', description: 'y' }, as), 403, 'ACCESS_DENIED');
    });

    test("rights follow the user's current grants: revoking the assignment takes the token's access at once", async () => {
      const owner = await poolUser();
      const { token } = await newToken(owner.token);
      const as = { authorization: `Bearer ${token}` };
      assert.equal((await a.request('GET', '/Things', undefined, as)).statusCode, 200);
      const revoked = await t.app.inject({ method: 'DELETE', url: `/v1/assignments/${owner.assignmentId}`, headers: bearer(t.adminToken) });
      assert.equal(revoked.statusCode, 204, revoked.body);
      expectProblem(await a.request('GET', '/Things', undefined, as), 404, 'NOT_FOUND');
      // Never more than the user: a token of a user who can write nowhere cannot write.
      expectProblem(await open.request('POST', '/Things', { name: 'x', description: 'y' }, as), 403, 'ACCESS_DENIED');
    });

    test('an expired token answers 401, from the cache too (no access change in between)', async () => {
      const owner = await poolUser();
      const expiresAt = Date.now() + 1_500;
      const created = await newToken(owner.token, { expiresAt: new Date(expiresAt).toISOString() });
      const as = { authorization: `Bearer ${created.token}` };
      assert.equal((await a.request('GET', '/Things', undefined, as)).statusCode, 200);
      await new Promise((resolve) => setTimeout(resolve, expiresAt - Date.now() + 50));
      expectHtml401(await a.request('GET', '/Things', undefined, as));
    });

    test('lastUsedAt is written on use, at most once a minute', async () => {
      const owner = await poolUser();
      const created = await newToken(owner.token);
      const as = { authorization: `Bearer ${created.token}` };
      assert.equal((await a.request('GET', '/Things', undefined, as)).statusCode, 200);
      const lastUsedAt = () => t.app.inject({ method: 'GET', url: '/v1/users/me/tokens', headers: bearer(owner.token) })
        .then((response) => response.json().content[0].lastUsedAt as string | null);
      const first = await waitFor(lastUsedAt, { what: 'lastUsedAt to be written', timeoutMs: 5_000 });
      for (let i = 0; i < 5; i++) assert.equal((await a.request('GET', '/Things', undefined, as)).statusCode, 200);
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(await lastUsedAt(), first, 'no second write within the minute');
    });

    test('bad inputs answer 400 naming the field', async () => {
      const owner = await poolUser();
      expectFieldError(await createToken(owner.token, { name: '' }), 'name');
      expectFieldError(await createToken(owner.token, { name: 'x'.repeat(101) }), 'name');
      expectFieldError(await createToken(owner.token, {}), 'name');
      expectFieldError(await createToken(owner.token, { name: 'n', expiresAt: new Date(Date.now() - 1000).toISOString() }), 'expiresAt');
      expectFieldError(await createToken(owner.token, { name: 'n', expiresAt: new Date(Date.now() + 367 * 86_400_000).toISOString() }), 'expiresAt');
      expectFieldError(await createToken(owner.token, { name: 'n', expiresAt: 'tomorrow' }), 'expiresAt');
      const malformed = await createToken(owner.token, { name: 'n', datasetIds: ['not-a-uuid'] });
      const body = expectProblem(malformed, 400, 'VALIDATION_FAILED');
      assert.ok(body.fieldErrors.some((error: Json) => /^datasetIds/.test(error.field)), malformed.body);
      expectFieldError(await createToken(owner.token, { name: 'n', datasetIds: [a.datasetId, randomUUID()] }), 'datasetIds[1]');
      expectFieldError(await createToken(owner.token, { name: 'n', token: 'pat_mine' }), 'token');
      // A token one year ahead is fine.
      const inAYear = new Date();
      inAYear.setUTCFullYear(inAYear.getUTCFullYear() + 1);
      inAYear.setUTCMinutes(inAYear.getUTCMinutes() - 1);
      assert.equal((await createToken(owner.token, { name: 'n', expiresAt: inAYear.toISOString() })).statusCode, 201);
      expectProblem(await t.app.inject({ method: 'DELETE', url: '/v1/users/me/tokens/not-a-uuid', headers: bearer(owner.token) }), 400, 'VALIDATION_FAILED');
    });

    test("another user's token: 404 on /users/me; administrators with USER_WRITE list and delete any user's", async () => {
      const owner = await poolUser();
      const other = await poolUser();
      const created = await newToken(owner.token);
      expectProblem(await t.app.inject({ method: 'DELETE', url: `/v1/users/me/tokens/${created.id}`, headers: bearer(other.token) }), 404, 'NOT_FOUND');
      expectProblem(await t.app.inject({ method: 'GET', url: `/v1/users/me/tokens/${created.id}`, headers: bearer(other.token) }), 404, 'NOT_FOUND');
      const reader = await grant(t, uniqueEmail('user-reader'), ['USER_READ']);
      expectProblem(await t.app.inject({ method: 'GET', url: `/v1/users/${owner.user.id}/tokens`, headers: bearer(reader) }), 403, 'ACCESS_DENIED');
      expectProblem(await t.app.inject({ method: 'DELETE', url: `/v1/users/${owner.user.id}/tokens/${created.id}`, headers: bearer(reader) }), 403, 'ACCESS_DENIED');

      const listed = await t.app.inject({ method: 'GET', url: `/v1/users/${owner.user.id}/tokens`, headers: bearer(t.adminToken) });
      assert.equal(listed.statusCode, 200, listed.body);
      assert.deepEqual(listed.json().content.map((token: Json) => token.id), [created.id]);
      expectProblem(await t.app.inject({ method: 'GET', url: `/v1/users/${randomUUID()}/tokens`, headers: bearer(t.adminToken) }), 404, 'NOT_FOUND');
      const one = await t.app.inject({ method: 'GET', url: `/v1/users/${owner.user.id}/tokens/${created.id}`, headers: bearer(t.adminToken) });
      assert.equal(one.statusCode, 200, one.body);
      assert.equal(one.json().token, undefined);
      expectProblem(await t.app.inject({ method: 'GET', url: `/v1/users/${other.user.id}/tokens/${created.id}`, headers: bearer(t.adminToken) }), 404, 'NOT_FOUND');
      expectProblem(await t.app.inject({ method: 'DELETE', url: `/v1/users/${other.user.id}/tokens/${created.id}`, headers: bearer(t.adminToken) }), 404, 'NOT_FOUND');
      const deleted = await t.app.inject({ method: 'DELETE', url: `/v1/users/${owner.user.id}/tokens/${created.id}`, headers: bearer(t.adminToken) });
      assert.equal(deleted.statusCode, 204, deleted.body);
      expectHtml401(await a.request('GET', '/Things', undefined, { authorization: `Bearer ${created.token}` }));
    });

    test('a list is paged and sorted', async () => {
      const owner = await poolUser();
      for (const name of ['b', 'c', 'a']) await newToken(owner.token, { name });
      const page = await t.app.inject({ method: 'GET', url: '/v1/users/me/tokens?sort=name,asc&size=2&page=1', headers: bearer(owner.token) });
      assert.equal(page.statusCode, 200, page.body);
      assert.deepEqual(page.json().content.map((token: Json) => token.name), ['c']);
      assert.equal(page.json().totalElements, 3);
    });

    test('a caller the service has no user for cannot create one (403); their list is empty', async () => {
      const stranger = await t.tokenFor(uniqueEmail('stranger'));
      expectProblem(await createToken(stranger, { name: 'mine' }), 403, 'ACCESS_DENIED');
      const list = await t.app.inject({ method: 'GET', url: '/v1/users/me/tokens', headers: bearer(stranger) });
      assert.equal(list.statusCode, 200, list.body);
      assert.equal(list.json().totalElements, 0);
    });
  });
}
