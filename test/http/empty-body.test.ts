import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';

// Clients that send Content-Type: application/json on every request, DELETE included, send an
// empty body: that is no body, not malformed JSON. A route that needs a body still says so.
for (const kind of databaseKinds(import.meta.url)) {
  describe(`empty JSON bodies (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());
    const headers = () => ({ authorization: `Bearer ${t.adminToken}`, 'content-type': 'application/json' });

    test('DELETE with Content-Type: application/json and no body deletes', async () => {
      const group = (await t.app.inject({ method: 'POST', url: '/v1/groups', headers: headers(), payload: { name: 'Short-lived' } })).json();
      const response = await t.app.inject({ method: 'DELETE', url: `/v1/groups/${group.id}`, headers: headers(), payload: '' });
      assert.equal(response.statusCode, 204);
      assert.equal((await t.app.inject({ method: 'GET', url: `/v1/groups/${group.id}`, headers: headers() })).statusCode, 404);
    });

    test('POST with an empty JSON body answers 400 VALIDATION_FAILED naming the body', async () => {
      const response = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: headers(), payload: '' });
      assert.equal(response.statusCode, 400);
      const problem = response.json();
      assert.equal(problem.type, 'urn:platform:error:VALIDATION_FAILED');
      assert.equal(problem.fieldErrors[0].field, 'body');
    });
  });
}
