import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { bearer, createUser, uniqueEmail } from '../helpers/factories.js';

/**
 * A valid token whose email (and subject) names no user of the service: authenticated, holding
 * nothing. Its answers keep their contract statuses and shapes (200 and empty lists) and carry the
 * header X-Caller-Unknown saying why; a known caller's answers never do.
 */

const HEADER = 'x-caller-unknown';
const PORTAL = 'http://portal.test';

for (const kind of databaseKinds(import.meta.url)) {
  describe(`a caller the service does not know (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind, { CORS_ORIGINS: PORTAL }); });
    after(() => t.close());

    const get = (url: string, token: string) => t.app.inject({ method: 'GET', url, headers: bearer(token) });

    it('gets 200 and empty lists as the contract says, each answer with X-Caller-Unknown naming the way out', async () => {
      const email = uniqueEmail('newcomer');
      const token = await t.tokenFor(email);

      const me = await get('/v1/users/me', token);
      assert.equal(me.statusCode, 200, me.body);
      assert.deepEqual([me.json().id, me.json().email, me.json().assignments], [null, email, []]);
      assert.match(String(me.headers[HEADER]), /no user of this service matches the token.*POST \/v1\/users/);

      for (const url of ['/v1/datasets', '/v1/datasources', '/v1/datapools']) {
        const list = await get(url, token);
        assert.equal(list.statusCode, 200, `${url}: ${list.body}`);
        assert.deepEqual([list.json().content, list.json().totalElements], [[], 0], url);
        assert.equal(list.headers[HEADER], me.headers[HEADER], url);
      }
      // Refusals carry it too: the reason for a 403 is the same.
      const users = await get('/v1/users', token);
      assert.equal(users.statusCode, 403);
      assert.ok(users.headers[HEADER], 'a 403 without the hint');
      // And the data API's answers (the same authentication).
      const gateway = await t.dataApi();
      const payload = await gateway.inject({ method: 'GET', url: `/v1/datasets/${randomUUID()}/api`, headers: { ...bearer(token), origin: PORTAL } });
      assert.equal(payload.statusCode, 404, payload.body);
      assert.ok(payload.headers[HEADER], 'a data API answer without the hint');
      // ... which a portal in the browser may read.
      assert.match(String(payload.headers['access-control-expose-headers']), /X-Caller-Unknown/i);

      // Once an administrator creates the user, the hint is gone and /users/me names them.
      const user = await createUser(t, { email });
      const known = await get('/v1/users/me', token);
      assert.equal(known.json().id, user.id);
      assert.equal(known.headers[HEADER], undefined);
      assert.equal((await get('/v1/datasets', token)).headers[HEADER], undefined);
    });

    it('is documented: /v1/users/me and the document\'s description name the header', async () => {
      const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      assert.match(doc.paths['/v1/users/me'].get.description, /X-Caller-Unknown/);
      assert.match(doc.info.description, /X-Caller-Unknown/);
    });

    it('is never set for a known caller, nor without a valid token', async () => {
      for (const url of ['/v1/users/me', '/v1/datasets', '/v1/users']) {
        assert.equal((await get(url, t.adminToken)).headers[HEADER], undefined, url);
      }
      const anonymous = await t.app.inject({ method: 'GET', url: '/v1/users/me' });
      assert.equal(anonymous.statusCode, 401);
      assert.equal(anonymous.headers[HEADER], undefined);
    });
  });
}
