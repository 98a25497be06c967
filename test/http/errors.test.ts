import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';

/** The contract's "Errors": problem objects from one registry, for every malformed request. */

const unique = () => randomUUID().slice(0, 8);

/** Asserts the full problem shape the contract requires and returns the body. */
function assertProblem(response: LightMyRequestResponse, status: number, code: string, instance: string) {
  assert.equal(response.statusCode, status, response.body);
  assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
  const body = response.json();
  assert.equal(body.type, `urn:platform:error:${code}`);
  assert.equal(body.title, STATUS_CODES[status]);
  assert.equal(body.status, status);
  assert.equal(typeof body.detail, 'string');
  assert.ok(body.detail.length > 0);
  assert.equal(body.instance, instance);
  return body as { detail: string; fieldErrors?: { field: string; message: string }[]; [k: string]: unknown };
}

/** Asserts a 400 VALIDATION_FAILED whose fieldErrors name `field`. */
function assertFieldError(response: LightMyRequestResponse, field: string, instance: string) {
  const body = assertProblem(response, 400, 'VALIDATION_FAILED', instance);
  assert.ok(Array.isArray(body.fieldErrors) && body.fieldErrors.length > 0, `fieldErrors missing: ${response.body}`);
  for (const error of body.fieldErrors) {
    assert.equal(typeof error.field, 'string');
    assert.equal(typeof error.message, 'string');
  }
  const fields = body.fieldErrors.map((error) => error.field);
  assert.ok(fields.includes(field), `expected field ${field} among ${JSON.stringify(fields)}`);
  return body;
}

for (const kind of databaseKinds(import.meta.url)) {
  describe(`errors (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());

    const auth = () => ({ authorization: `Bearer ${t.adminToken}` });
    const postGroup = (payload: string | object | Buffer, contentType = 'application/json') =>
      t.app.inject({ method: 'POST', url: '/v1/groups', headers: { ...auth(), 'content-type': contentType }, payload });
    const get = (url: string) => t.app.inject({ method: 'GET', url, headers: auth() });

    describe('bodies', () => {
      it('answers 400 MALFORMED_REQUEST to a body that is not valid JSON', async () => {
        assertProblem(await postGroup('{"name": "broken'), 400, 'MALFORMED_REQUEST', '/v1/groups');
        assertProblem(await postGroup('{name: 1}'), 400, 'MALFORMED_REQUEST', '/v1/groups');
      });

      it('answers 400 to an empty JSON body', async () => {
        const response = await postGroup('');
        assert.equal(response.statusCode, 400, response.body);
        assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
        assert.match(response.json().type, /^urn:platform:error:(MALFORMED_REQUEST|VALIDATION_FAILED)$/);
      });

      it('answers 415 UNSUPPORTED_MEDIA_TYPE to a text/plain body', async () => {
        const name = `plain-${unique()}`;
        assertProblem(await postGroup(JSON.stringify({ name }), 'text/plain'), 415, 'UNSUPPORTED_MEDIA_TYPE', '/v1/groups');
        assertProblem(await postGroup(`<group name="${name}"/>`, 'application/xml'), 415, 'UNSUPPORTED_MEDIA_TYPE', '/v1/groups');
        assertProblem(await postGroup(`name=${name}`, 'application/x-www-form-urlencoded'), 415, 'UNSUPPORTED_MEDIA_TYPE', '/v1/groups');
        const listed = await get(`/v1/groups?name=${name}`);
        assert.equal(listed.json().totalElements, 0);
      });

      it('accepts application/json with a charset', async () => {
        const response = await postGroup(JSON.stringify({ name: `charset-${unique()}` }), 'application/json; charset=utf-8');
        assert.equal(response.statusCode, 201, response.body);
      });

      it('answers 413 PAYLOAD_TOO_LARGE to a body over 1 MiB', async () => {
        const body = JSON.stringify({ name: `big-${unique()}`, description: 'x'.repeat(1024 * 1024) });
        assertProblem(await postGroup(body), 413, 'PAYLOAD_TOO_LARGE', '/v1/groups');
      });

      it('does not answer 413 to a body just under 1 MiB (the field rule answers instead)', async () => {
        const padding = 1024 * 1024 - 200;
        const response = await postGroup(JSON.stringify({ name: `under-${unique()}`, description: 'x'.repeat(padding) }));
        assertFieldError(response, 'description', '/v1/groups');
      });

      it('answers 400 VALIDATION_FAILED naming an unknown field', async () => {
        const body = assertFieldError(await postGroup({ name: `unknown-${unique()}`, colour: 'blue' }), 'colour', '/v1/groups');
        assert.match(body.detail, /colour/);
      });

      it('treats read-only fields in a body as unknown fields', async () => {
        assertFieldError(await postGroup({ name: `ro-${unique()}`, id: randomUUID() }), 'id', '/v1/groups');
        assertFieldError(await postGroup({ name: `ro-${unique()}`, createdAt: new Date().toISOString() }), 'createdAt', '/v1/groups');
      });

      it('answers 400 naming a field of the wrong type (no coercion of bodies)', async () => {
        assertFieldError(await postGroup({ name: 42 }), 'name', '/v1/groups');
        assertFieldError(await postGroup({ name: `type-${unique()}`, description: 7 }), 'description', '/v1/groups');
        assertFieldError(await postGroup({ name: `type-${unique()}`, memberIds: 'not-a-list' }), 'memberIds', '/v1/groups');
      });

      it('answers 400 naming a missing required field', async () => {
        assertFieldError(await postGroup({ description: 'no name' }), 'name', '/v1/groups');
      });

      it('answers 400 naming the element of an array that is not a UUID', async () => {
        const response = await postGroup({ name: `arr-${unique()}`, memberIds: ['not-a-uuid'] });
        const body = assertProblem(response, 400, 'VALIDATION_FAILED', '/v1/groups');
        assert.ok(body.fieldErrors?.some((error) => error.field.startsWith('memberIds')), response.body);
      });

      it('answers 400 (not 500) to a NUL character in a text field, which PostgreSQL cannot store', async () => {
        const response = await postGroup({ name: `nul-${unique()}\u0000x` });
        assert.equal(response.statusCode, 400, response.body);
        assertFieldError(response, 'name', '/v1/groups');
      });

      it('answers 400 to a body that is JSON but not an object', async () => {
        const response = await postGroup('[1,2,3]');
        assertProblem(response, 400, 'VALIDATION_FAILED', '/v1/groups');
      });
    });

    describe('path and query parameters', () => {
      it('answers 400 naming id for a malformed UUID in a path', async () => {
        const body = assertFieldError(await get('/v1/groups/not-a-uuid'), 'id', '/v1/groups/not-a-uuid');
        assert.match(body.detail, /id/);
        assertFieldError(await get('/v1/permissions/123'), 'id', '/v1/permissions/123');
      });

      it('answers 404 NOT_FOUND for a well-formed unknown id', async () => {
        const id = randomUUID();
        assertProblem(await get(`/v1/groups/${id}`), 404, 'NOT_FOUND', `/v1/groups/${id}`);
        assertProblem(await get(`/v1/permissions/${id}`), 404, 'NOT_FOUND', `/v1/permissions/${id}`);
      });

      it('answers 400 naming id for a malformed UUID in the id filter', async () => {
        const response = await get('/v1/groups?id=abc');
        const body = assertProblem(response, 400, 'VALIDATION_FAILED', '/v1/groups');
        assert.ok(body.fieldErrors?.some((error) => error.field === 'id' || error.field.startsWith('id[')), response.body);
        assert.equal(assertProblem(await get(`/v1/groups?id=${randomUUID()},abc`), 400, 'VALIDATION_FAILED', '/v1/groups').fieldErrors?.length, 1);
        assertProblem(await get('/v1/permissions?id=abc'), 400, 'VALIDATION_FAILED', '/v1/permissions');
      });

      it('names exactly "id" for a malformed UUID in the id filter', async () => {
        assertFieldError(await get('/v1/groups?id=abc'), 'id', '/v1/groups');
      });

      it('answers 400 naming contactUserId for a malformed UUID in an exact filter', async () => {
        assertFieldError(await get('/v1/groups?contactUserId=abc'), 'contactUserId', '/v1/groups');
      });

      it('answers 400 naming size for size=0 and size=1001, accepts 1 and 1000', async () => {
        assertFieldError(await get('/v1/groups?size=0'), 'size', '/v1/groups');
        assertFieldError(await get('/v1/groups?size=1001'), 'size', '/v1/groups');
        assertFieldError(await get('/v1/groups?size=ten'), 'size', '/v1/groups');
        assert.equal((await get('/v1/groups?size=1')).statusCode, 200);
        assert.equal((await get('/v1/groups?size=1000')).statusCode, 200);
      });

      it('answers 400 naming page for page=-1', async () => {
        assertFieldError(await get('/v1/groups?page=-1'), 'page', '/v1/groups');
        assertFieldError(await get('/v1/groups?page=1.5'), 'page', '/v1/groups');
      });

      it('answers 400 naming page for a page too large to be an offset, and an empty page for the largest one', async () => {
        assertFieldError(await get('/v1/groups?page=100000000000000000000'), 'page', '/v1/groups');
        assertFieldError(await get('/v1/groups?page=100000000000000000&size=1000'), 'page', '/v1/groups');
        const largest = await get('/v1/groups?page=2147483647&size=1000');
        assert.equal(largest.statusCode, 200, largest.body);
        assert.equal(largest.json().empty, true);
      });

      it('answers 400 naming sort for an unknown sort property', async () => {
        const body = assertFieldError(await get('/v1/groups?sort=unknown,asc'), 'sort', '/v1/groups');
        assert.match(body.detail, /unknown/);
        assertFieldError(await get('/v1/groups?sort=name,sideways'), 'sort', '/v1/groups');
        assertFieldError(await get('/v1/groups?sort=name,asc&sort=bogus,desc'), 'sort', '/v1/groups');
      });

      it('answers 400 naming a date filter that is not a date-time', async () => {
        assertFieldError(await get('/v1/groups?createdAtFrom=yesterday'), 'createdAtFrom', '/v1/groups');
      });

      it('answers 400 (not 500) to a NUL character in a partial-match filter', async () => {
        const response = await get('/v1/groups?q=a%00b');
        assert.equal(response.statusCode, 400, response.body);
        assertFieldError(response, 'q', '/v1/groups');
      });

      it('keeps the query string out of instance', async () => {
        assertProblem(await get('/v1/groups?size=0&name=x'), 400, 'VALIDATION_FAILED', '/v1/groups');
      });

      it('answers 400 naming X-Allowed-Scope-Ids when it is not a UUID list', async () => {
        const response = await t.app.inject({ method: 'GET', url: '/v1/groups', headers: { ...auth(), 'x-allowed-scope-ids': 'nope' } });
        assertFieldError(response, 'X-Allowed-Scope-Ids', '/v1/groups');
      });
    });

    describe('unknown paths', () => {
      it('answers 403 ACCESS_DENIED to an unknown path under /v1', async () => {
        assertProblem(await get('/v1/unknown'), 403, 'ACCESS_DENIED', '/v1/unknown');
        assertProblem(await get('/v1/groups/extra/segments/here'), 403, 'ACCESS_DENIED', '/v1/groups/extra/segments/here');
      });

      it('answers 404 NOT_FOUND to a path outside /v1', async () => {
        assertProblem(await get('/unknown'), 404, 'NOT_FOUND', '/unknown');
      });
    });

    describe('server failures', () => {
      let broken: TestApp;
      before(async () => {
        broken = await buildTestApp(kind);
        // The caller is loaded from the database on every request, so a gone database fails there.
        await broken.ctx.db.destroy();
      });
      after(async () => {
        // The database is already destroyed; only the app and a PostgreSQL test database remain.
        await broken.close().catch(() => undefined);
      });

      it('answers 500 INTERNAL with a correlation id and no internals when the database is gone', async () => {
        const response = await broken.app.inject({ method: 'GET', url: '/v1/groups', headers: { authorization: `Bearer ${broken.adminToken}` } });
        const body = assertProblem(response, 500, 'INTERNAL', '/v1/groups');
        assert.equal(typeof body['correlationId'], 'string');
        assert.match(body['correlationId'] as string, /^[0-9a-f-]{36}$/);
        assert.ok(body.detail.includes(body['correlationId'] as string), 'the detail quotes the correlation id');
        assert.deepEqual(Object.keys(body).sort(), ['correlationId', 'detail', 'instance', 'status', 'title', 'type']);
        for (const leak of [/\bat \S+ \(/, /node_modules/, /select/i, /\.ts:\d+/, /destroy/i, /pglite|pool|postgres/i]) {
          assert.doesNotMatch(response.body, leak);
        }
      });

      it('gives each 500 its own correlation id', async () => {
        const headers = { authorization: `Bearer ${broken.adminToken}` };
        const first = await broken.app.inject({ method: 'GET', url: '/v1/permissions', headers });
        const second = await broken.app.inject({ method: 'GET', url: '/v1/permissions', headers });
        assert.equal(first.statusCode, 500);
        assert.equal(second.statusCode, 500);
        assert.notEqual(first.json().correlationId, second.json().correlationId);
      });

      it('still answers 401 (HTML) without a token, since no database is needed for that', async () => {
        const response = await broken.app.inject({ method: 'GET', url: '/v1/groups' });
        assert.equal(response.statusCode, 401);
        assert.match(String(response.headers['content-type']), /^text\/html/);
      });

      it('answers /health/ready 503 and /health/live 200 when the database is gone', async () => {
        const ready = await broken.app.inject({ method: 'GET', url: '/health/ready' });
        assert.equal(ready.statusCode, 503, ready.body);
        assert.match(String(ready.headers['content-type']), /^application\/json/);
        assert.equal(ready.json().status, 'DOWN');
        const live = await broken.app.inject({ method: 'GET', url: '/health/live' });
        assert.equal(live.statusCode, 200);
      });

      it('answers /health/ready 200 while the database is there', async () => {
        const ready = await t.app.inject({ method: 'GET', url: '/health/ready' });
        assert.equal(ready.statusCode, 200, ready.body);
        assert.equal(ready.json().status, 'UP');
      });
    });
  });
}
