import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';

// Inputs a careless or hostile client can send, each answered with a clear 4xx, never a 500.
for (const kind of databaseKinds(import.meta.url)) {
  describe(`hostile input (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());
    const headers = () => ({ authorization: `Bearer ${t.adminToken}` });

    test('date-times PostgreSQL cannot hold (year 0000, offset beyond ±15:59) answer 400 naming the filter', async () => {
      for (const value of ['0000-01-01T00:00:00Z', '2026-01-01T00:00:00+23:00']) {
        const response = await t.app.inject({ method: 'GET', url: `/v1/users?createdAtFrom=${encodeURIComponent(value)}`, headers: headers() });
        assert.equal(response.statusCode, 400, value);
        assert.equal(response.json().fieldErrors[0].field, 'createdAtFrom');
      }
      const fine = await t.app.inject({ method: 'GET', url: `/v1/users?createdAtFrom=${encodeURIComponent('2026-01-01T00:00:00+02:00')}`, headers: headers() });
      assert.equal(fine.statusCode, 200);
    });

    test('a body nested thousands deep answers 400, not a stack overflow', async () => {
      const payload = '['.repeat(6000) + ']'.repeat(6000);
      const response = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: { ...headers(), 'content-type': 'application/json' }, payload });
      assert.equal(response.statusCode, 400);
      assert.equal(response.json().type, 'urn:platform:error:VALIDATION_FAILED');
    });

    test('a percent-encoded /v1 path gets the same token rules as the plain one', async () => {
      const anonymous = await t.app.inject({ method: 'GET', url: '/%761/users' });
      assert.equal(anonymous.statusCode, 401);
      assert.match(String(anonymous.headers['content-type']), /^text\/html/);
      const unknown = await t.app.inject({ method: 'GET', url: '/%761/nothing-here', headers: headers() });
      assert.equal(unknown.statusCode, 403);
    });

    test('a weak ETag never satisfies If-Match', async () => {
      const group = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: headers(), payload: { name: `weak-${Date.now()}` } });
      const etag = String(group.headers['etag']);
      const weak = await t.app.inject({ method: 'DELETE', url: `/v1/groups/${group.json().id}`, headers: { ...headers(), 'if-match': `W/${etag}` } });
      assert.equal(weak.statusCode, 412);
      const strong = await t.app.inject({ method: 'DELETE', url: `/v1/groups/${group.json().id}`, headers: { ...headers(), 'if-match': etag } });
      assert.equal(strong.statusCode, 204);
    });
  });
}
