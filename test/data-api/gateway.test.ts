import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { bearer, createAssignment, createDatapool, createGroup, createRole, createUser, expectHtml401, expectProblem, grant, permissionIds, uniqueEmail } from '../helpers/factories.js';
import { publishDataset, publishStaDataset, waitForNoSaga, waitForRoute, type PublishedDataset } from '../helpers/sta-dataset.js';

// The data API gateway: its route table follows releases, its token rules and payload
// authorization (the contract's "Payload routes"), CORS, and the plumbing shared with the API.
for (const kind of databaseKinds(import.meta.url)) {
  describe(`data API gateway (${kind})`, () => {
    let t: TestApp;
    let gateway: FastifyInstance;
    const unpublished = '/v1/datasets/7f1d2c4e-9b8a-4c3d-8e2f-1a2b3c4d5e6f/weather';
    before(async () => {
      t = await buildTestApp(kind, { CORS_ORIGINS: 'https://portal.example, https://partner.example' });
      gateway = await t.dataApi();
    });
    after(() => t.close());

    const get = (url: string, token: string | null = t.adminToken, headers: Record<string, string> = {}) =>
      gateway.inject({ method: 'GET', url, headers: { ...(token ? bearer(token) : {}), ...headers } });

    test('an unpublished path: 401 (HTML) without a token, 404 with one; other /v1 paths 403, outside /v1 404', async () => {
      expectHtml401(await get(unpublished, null));
      for (const url of [unpublished, `${unpublished}/Things`, '/v1/datasets/not-a-uuid/weather', '/v1/datasets/7f1d2c4e-9b8a-4c3d-8e2f-1a2b3c4d5e6f/weather/%zz']) {
        const response = await get(url);
        assert.ok([400, 404].includes(response.statusCode), `${url}: ${response.statusCode}`);
        assert.equal(response.headers['content-type'], 'application/problem+json; charset=utf-8');
      }
      expectProblem(await get(unpublished), 404, 'NOT_FOUND');
      expectProblem(await get('/v1/groups'), 403, 'ACCESS_DENIED');
      assert.equal((await get('/datasets')).statusCode, 404);
    });

    test('health answers without a token', async () => {
      assert.equal((await get('/health/live', null)).statusCode, 200);
      const ready = await get('/health/ready', null);
      assert.deepEqual([ready.statusCode, ready.json()], [200, { status: 'UP', checks: { database: 'UP' } }]);
    });

    test('a release publishes the route (service root on the public base, /v1.1 alias); an unrelease withdraws it', async () => {
      const published = await publishStaDataset(t);
      const root = await published.request('GET', '');
      assert.equal(root.statusCode, 200, root.body);
      const links = root.json().value.map((entry: { url: string }) => entry.url);
      assert.ok(links.length > 0 && links.every((url: string) => url.startsWith(`${published.publicBase}/`)), links.join());
      assert.equal((await published.request('GET', '/v1.1')).statusCode, 200);
      // The discovery list names the same base.
      const apis = await t.app.inject({ method: 'GET', url: `/v1/datasets/${published.datasetId}/apis`, headers: bearer(t.adminToken) });
      assert.equal(JSON.stringify(apis.json()).includes(published.publicBase), true, apis.body);

      const unreleased = await t.app.inject({ method: 'POST', url: `/v1/datasets/${published.datasetId}/unrelease`, headers: bearer(t.adminToken) });
      assert.equal(unreleased.statusCode, 202, unreleased.body);
      const started = Date.now();
      const gone = await waitForRoute(() => published.request('GET', ''), (status) => status === 404);
      expectProblem(gone, 404, 'NOT_FOUND');
      assert.ok(Date.now() - started < 1_000, `withdrawn after ${Date.now() - started} ms`);
      await waitForNoSaga(t, published.datasetId);
      // Another named API slug of a published dataset is no route either.
    });

    describe('payload authorization', () => {
      let closed: PublishedDataset;
      let open: PublishedDataset;
      let pool: { id: string };
      before(async () => {
        pool = await createDatapool(t);
        closed = await publishStaDataset(t, { datapoolId: pool.id, slug: 'closed' });
        open = await publishStaDataset(t, { openDataAccess: true, slug: 'open' });
      });
      const as = (token: string | null, extra: Record<string, string> = {}) => ({ authorization: token === null ? null : `Bearer ${token}`, ...extra });

      test('anonymous: reads of open data pass; a write, or any request on a closed dataset, is 401 (HTML)', async () => {
        assert.equal((await open.request('GET', '', undefined, as(null))).statusCode, 200);
        assert.equal((await open.request('HEAD', '', undefined, as(null))).statusCode, 200);
        expectHtml401(await open.request('POST', '/Things', { name: 'x', description: 'y' }, as(null)));
        expectHtml401(await open.request('DELETE', '/Things(1)', undefined, as(null)));
        expectHtml401(await closed.request('GET', '', undefined, as(null)));
      });

      test('a token that does not verify is 401 even on open data', async () => {
        const forged = await t.signToken({ sub: 'x', email: 'x@example.test' }, { realm: 'elsewhere' });
        expectHtml401(await open.request('GET', '', undefined, as(forged)));
        expectHtml401(await open.request('GET', '', undefined, { authorization: 'Basic abc' }));
      });

      test('no permission on the dataset at all: 404; it can see it but lacks the payload permission: 403', async () => {
        const stranger = await t.tokenFor(uniqueEmail('stranger'));
        expectProblem(await closed.request('GET', '', undefined, as(stranger)), 404, 'NOT_FOUND');
        const otherPool = await createDatapool(t);
        const elsewhere = await grant(t, uniqueEmail('elsewhere'), ['DATASET_PAYLOAD_READ'], { scopeType: 'DATAPOOL', scopeId: otherPool.id });
        expectProblem(await closed.request('GET', '', undefined, as(elsewhere)), 404, 'NOT_FOUND');
        const metadataOnly = await grant(t, uniqueEmail('meta'), ['DATASET_READ'], { scopeType: 'DATASET', scopeId: closed.datasetId });
        assert.match(expectProblem(await closed.request('GET', '', undefined, as(metadataOnly)), 403, 'ACCESS_DENIED').detail, /DATASET_PAYLOAD_READ/);
        // Open data reads pass with any valid token; its writes still need the permission (403: it is visibly published).
        assert.equal((await open.request('GET', '', undefined, as(stranger))).statusCode, 200);
        assert.match(expectProblem(await open.request('POST', '/Things', { name: 'x', description: 'y' }, as(stranger)), 403, 'ACCESS_DENIED').detail, /DATASET_PAYLOAD_WRITE/);
      });

      test('DATASET_PAYLOAD_READ (on the dataset or its datapool) reads but does not write; DATASET_PAYLOAD_WRITE writes', async () => {
        const reader = await grant(t, uniqueEmail('reader'), ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: closed.datasetId });
        const poolReader = await grant(t, uniqueEmail('pool-reader'), ['DATASET_PAYLOAD_READ'], { scopeType: 'DATAPOOL', scopeId: pool.id });
        for (const token of [reader, poolReader]) {
          assert.equal((await closed.request('GET', '', undefined, as(token))).statusCode, 200);
          assert.match(expectProblem(await closed.request('POST', '/Things', { name: 'x', description: 'y' }, as(token)), 403, 'ACCESS_DENIED').detail, /DATASET_PAYLOAD_WRITE/);
        }
        const writer = await grant(t, uniqueEmail('writer'), ['DATASET_PAYLOAD_WRITE'], { scopeType: 'DATASET', scopeId: closed.datasetId });
        const written = await closed.request('POST', '/Things', { name: 'Weather station', description: 'on the roof' }, as(writer));
        assert.equal(written.statusCode, 201, written.body);
        assert.match(expectProblem(await closed.request('GET', '', undefined, as(writer)), 403, 'ACCESS_DENIED').detail, /DATASET_PAYLOAD_READ/);
      });

      test('X-Allowed-Scope-Ids limits the grants that count: a grant outside the listed scopes is as if absent (404)', async () => {
        const reader = await grant(t, uniqueEmail('scoped'), ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: closed.datasetId });
        assert.equal((await closed.request('GET', '', undefined, as(reader, { 'x-allowed-scope-ids': closed.datasetId }))).statusCode, 200);
        assert.equal((await closed.request('GET', '', undefined, as(reader, { 'x-allowed-scope-ids': '*' }))).statusCode, 200);
        expectProblem(await closed.request('GET', '', undefined, as(reader, { 'x-allowed-scope-ids': pool.id })), 404, 'NOT_FOUND');
        expectProblem(await closed.request('GET', '', undefined, as(reader, { 'x-allowed-scope-ids': 'nope' })), 400, 'VALIDATION_FAILED');
      });

      test('a revoked permission takes effect on the next request', async () => {
        const email = uniqueEmail('revoked');
        const reader = await grant(t, email, ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: closed.datasetId });
        assert.equal((await closed.request('GET', '', undefined, as(reader))).statusCode, 200);
        const assignments = await t.app.inject({ method: 'GET', url: `/v1/datasets/${closed.datasetId}/assignments`, headers: bearer(t.adminToken) });
        const users = await t.app.inject({ method: 'GET', url: `/v1/users?email=${encodeURIComponent(email)}`, headers: bearer(t.adminToken) });
        const userGroups = users.json().content[0].groups.map((g: { id: string }) => g.id);
        const mine = assignments.json().filter((a: { group: { id: string } }) => userGroups.includes(a.group.id));
        assert.equal(mine.length, 1, assignments.body);
        const removed = await t.app.inject({ method: 'DELETE', url: `/v1/assignments/${mine[0].id}`, headers: bearer(t.adminToken) });
        assert.equal(removed.statusCode, 204, removed.body);
        expectProblem(await closed.request('GET', '', undefined, as(reader)), 404, 'NOT_FOUND');
      });
    });

    test('callers are cached between requests, yet every access change counts on the next one (grant, deactivation)', async () => {
      const published = await publishStaDataset(t, { slug: 'cached' });
      const email = uniqueEmail('cached');
      const token = await t.tokenFor(email);
      const read = () => published.request('GET', '', undefined, { authorization: `Bearer ${token}` });
      expectProblem(await read(), 404, 'NOT_FOUND');
      expectProblem(await read(), 404, 'NOT_FOUND');
      const user = await createUser(t, { email });
      const role = await createRole(t, { roleType: 'DATA', permissionIds: await permissionIds(t, ['DATASET_PAYLOAD_READ']) });
      const group = await createGroup(t, { memberIds: [user.id] });
      expectProblem(await read(), 404, 'NOT_FOUND');
      await createAssignment(t, { groupId: group.id, roleId: role.id, scopeType: 'DATASET', scopeId: published.datasetId });
      assert.equal((await read()).statusCode, 200);
      assert.equal((await read()).statusCode, 200);
      const deactivated = await t.app.inject({ method: 'PATCH', url: `/v1/users/${user.id}`, headers: bearer(t.adminToken), payload: { active: false } });
      assert.equal(deactivated.statusCode, 200, deactivated.body);
      expectProblem(await read(), 404, 'NOT_FOUND');
    });

    test('CORS: a preflight from a configured origin is answered without a token; another origin gets no CORS headers', async () => {
      const published = await publishDataset(t, { slug: 'cors' });
      const preflight = await gateway.inject({
        method: 'OPTIONS', url: `${published.base}/Things`,
        headers: { origin: 'https://portal.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
      });
      assert.equal(preflight.statusCode, 204, preflight.body);
      assert.equal(preflight.headers['access-control-allow-origin'], 'https://portal.example');
      assert.match(String(preflight.headers['access-control-allow-headers']), /authorization/i);
      const read = await published.request('GET', '', undefined, { origin: 'https://partner.example' });
      assert.equal(read.headers['access-control-allow-origin'], 'https://partner.example');
      const foreign = await published.request('GET', '', undefined, { origin: 'https://evil.example' });
      assert.equal(foreign.statusCode, 200);
      assert.equal(foreign.headers['access-control-allow-origin'], undefined);
    });

    test('payload bodies may exceed the management limit of 1 MiB (up to 32 MiB)', async () => {
      const published = await publishStaDataset(t, { slug: 'big' });
      const description = 'x'.repeat(2 * 1024 * 1024);
      const response = await published.request('POST', '/Things', { name: 'big', description });
      assert.equal(response.statusCode, 201, response.body.slice(0, 200));
      const tooBig = await published.request('POST', '/Things', { name: 'big', description: 'x'.repeat(33 * 1024 * 1024) });
      assert.match(expectProblem(tooBig, 413, 'PAYLOAD_TOO_LARGE').detail, /32 MiB/);
    });
  });
}
