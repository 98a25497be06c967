import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';

/** The contract's "Beyond the specification" and "Lists": request ids, ETags, idempotency, pages. */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const unique = () => randomUUID().slice(0, 8);

function assertProblem(response: LightMyRequestResponse, status: number, code?: string) {
  assert.equal(response.statusCode, status, response.body);
  assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
  const body = response.json();
  if (code) assert.equal(body.type, `urn:platform:error:${code}`);
  assert.equal(body.status, status);
  return body;
}

for (const kind of databaseKinds(import.meta.url)) {
  describe(`conventions (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());

    const auth = (extra: Record<string, string> = {}) => ({ authorization: `Bearer ${t.adminToken}`, ...extra });
    const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers: auth(headers) });
    async function createGroup(body: Record<string, unknown>, headers: Record<string, string> = {}) {
      const response = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: auth(headers), payload: body });
      assert.equal(response.statusCode, 201, response.body);
      return response;
    }

    describe('X-Request-Id', () => {
      it('echoes a sane id the caller sends', async () => {
        for (const id of ['abc-123', 'req.42:retry_1', randomUUID()]) {
          const response = await get('/v1/permissions', { 'x-request-id': id });
          assert.equal(response.statusCode, 200);
          assert.equal(response.headers['x-request-id'], id);
        }
      });

      it('generates a UUID when none is sent, a different one per request', async () => {
        const first = await get('/v1/permissions');
        const second = await get('/v1/permissions');
        assert.match(String(first.headers['x-request-id']), UUID);
        assert.match(String(second.headers['x-request-id']), UUID);
        assert.notEqual(first.headers['x-request-id'], second.headers['x-request-id']);
      });

      it('replaces an insane id (too long, spaces, control or injection characters)', async () => {
        for (const id of ['x'.repeat(300), 'has spaces in it', 'a"b', '<script>', 'a\tb']) {
          const response = await get('/v1/permissions', { 'x-request-id': id });
          assert.equal(response.statusCode, 200);
          assert.match(String(response.headers['x-request-id']), UUID, `kept ${JSON.stringify(id)}`);
        }
      });

      it('is set on every answer: 401, 403, 404, health', async () => {
        const answers = [
          await t.app.inject({ method: 'GET', url: '/v1/groups', headers: { 'x-request-id': 'r-401' } }),
          await get('/v1/nowhere', { 'x-request-id': 'r-403' }),
          await t.app.inject({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': 'r-404' } }),
          await t.app.inject({ method: 'GET', url: '/health/live', headers: { 'x-request-id': 'r-200' } }),
        ];
        assert.deepEqual(answers.map((r) => r.statusCode), [401, 403, 404, 200]);
        assert.deepEqual(answers.map((r) => r.headers['x-request-id']), ['r-401', 'r-403', 'r-404', 'r-200']);
      });
    });

    describe('ETag and If-Match', () => {
      it('sends an ETag on GET by id, equal for equal representations and equal to the one of the create', async () => {
        const createdResponse = await createGroup({ name: `etag-${unique()}` });
        const id = createdResponse.json().id;
        const first = await get(`/v1/groups/${id}`);
        const second = await get(`/v1/groups/${id}`);
        assert.equal(first.statusCode, 200);
        assert.match(String(first.headers.etag), /^(W\/)?"[^"]+"$/);
        assert.equal(first.headers.etag, second.headers.etag);
        assert.deepEqual(first.json(), createdResponse.json());
        assert.equal(createdResponse.headers.etag, first.headers.etag);
      });

      it('gives different resources different ETags', async () => {
        const a = (await createGroup({ name: `etag-a-${unique()}` })).json().id;
        const b = (await createGroup({ name: `etag-b-${unique()}` })).json().id;
        assert.notEqual((await get(`/v1/groups/${a}`)).headers.etag, (await get(`/v1/groups/${b}`)).headers.etag);
      });

      it('changes the ETag after a PATCH, and the PATCH answer carries the new one', async () => {
        const id = (await createGroup({ name: `etag-p-${unique()}` })).json().id;
        const before = await get(`/v1/groups/${id}`);
        const patched = await t.app.inject({ method: 'PATCH', url: `/v1/groups/${id}`, headers: auth(), payload: { description: 'changed' } });
        assert.equal(patched.statusCode, 200, patched.body);
        const afterwards = await get(`/v1/groups/${id}`);
        assert.notEqual(afterwards.headers.etag, before.headers.etag);
        assert.equal(patched.headers.etag, afterwards.headers.etag);
      });

      it('answers 412 PRECONDITION_FAILED to a stale If-Match and changes nothing', async () => {
        const id = (await createGroup({ name: `etag-s-${unique()}` })).json().id;
        const stale = (await get(`/v1/groups/${id}`)).headers.etag as string;
        const first = await t.app.inject({ method: 'PATCH', url: `/v1/groups/${id}`, headers: auth({ 'if-match': stale }), payload: { description: 'one' } });
        assert.equal(first.statusCode, 200, first.body);
        const second = await t.app.inject({ method: 'PATCH', url: `/v1/groups/${id}`, headers: auth({ 'if-match': stale }), payload: { description: 'two' } });
        const body = assertProblem(second, 412, 'PRECONDITION_FAILED');
        assert.equal(body.instance, `/v1/groups/${id}`);
        assert.equal((await get(`/v1/groups/${id}`)).json().description, 'one');
        const put = await t.app.inject({ method: 'PUT', url: `/v1/groups/${id}`, headers: auth({ 'if-match': stale }), payload: { name: `x-${unique()}` } });
        assertProblem(put, 412, 'PRECONDITION_FAILED');
        const deleted = await t.app.inject({ method: 'DELETE', url: `/v1/groups/${id}`, headers: auth({ 'if-match': stale }) });
        assertProblem(deleted, 412, 'PRECONDITION_FAILED');
        assert.equal((await get(`/v1/groups/${id}`)).statusCode, 200);
      });

      it('accepts If-Match: * and the current ETag', async () => {
        const id = (await createGroup({ name: `etag-ok-${unique()}` })).json().id;
        const star = await t.app.inject({ method: 'PATCH', url: `/v1/groups/${id}`, headers: auth({ 'if-match': '*' }), payload: { description: 'star' } });
        assert.equal(star.statusCode, 200, star.body);
        const current = star.headers.etag as string;
        const matched = await t.app.inject({ method: 'PATCH', url: `/v1/groups/${id}`, headers: auth({ 'if-match': current }), payload: { description: 'current' } });
        assert.equal(matched.statusCode, 200, matched.body);
        assert.equal(matched.json().description, 'current');
        const list = await t.app.inject({ method: 'PATCH', url: `/v1/groups/${id}`, headers: auth({ 'if-match': `"nope", ${matched.headers.etag}` }), payload: { description: 'list' } });
        assert.equal(list.statusCode, 200, list.body);
        const deleted = await t.app.inject({ method: 'DELETE', url: `/v1/groups/${id}`, headers: auth({ 'if-match': list.headers.etag as string }) });
        assert.equal(deleted.statusCode, 204, deleted.body);
        assert.equal(deleted.body, '');
      });

      it('without If-Match the last write wins', async () => {
        const id = (await createGroup({ name: `etag-lww-${unique()}` })).json().id;
        for (const description of ['a', 'b']) {
          const response = await t.app.inject({ method: 'PATCH', url: `/v1/groups/${id}`, headers: auth(), payload: { description } });
          assert.equal(response.statusCode, 200);
        }
        assert.equal((await get(`/v1/groups/${id}`)).json().description, 'b');
      });

      it('answers 412 to a stale If-Match on PUT /v1/groups/{id}/assignments', async () => {
        const id = (await createGroup({ name: `etag-asg-${unique()}` })).json().id;
        const stale = (await get(`/v1/groups/${id}`)).headers.etag as string;
        const patched = await t.app.inject({ method: 'PATCH', url: `/v1/groups/${id}`, headers: auth(), payload: { description: 'moved on' } });
        assert.equal(patched.statusCode, 200);
        const response = await t.app.inject({ method: 'PUT', url: `/v1/groups/${id}/assignments`, headers: auth({ 'if-match': stale }), payload: [] });
        assertProblem(response, 412, 'PRECONDITION_FAILED');
      });
    });

    describe('Idempotency-Key', () => {
      it('replays the first answer of a retry and creates one group only', async () => {
        const name = `idem-${unique()}`;
        const key = randomUUID();
        const first = await createGroup({ name, description: 'once' }, { 'idempotency-key': key });
        const retry = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: auth({ 'idempotency-key': key }), payload: { name, description: 'once' } });
        assert.equal(retry.statusCode, 201, retry.body);
        assert.equal(retry.body, first.body);
        assert.equal(retry.headers.location, first.headers.location);
        assert.equal(retry.headers.etag, first.headers.etag);
        assert.match(String(retry.headers['content-type']), /^application\/json/);
        assert.equal(retry.headers['idempotent-replayed'], 'true');
        assert.equal(first.headers['idempotent-replayed'], undefined);
        const listed = await get(`/v1/groups?name=${name}`);
        assert.equal(listed.json().totalElements, 1);
      });

      it('answers 409 to the same key with another body and creates nothing', async () => {
        const key = randomUUID();
        const name = `idem-other-${unique()}`;
        await createGroup({ name }, { 'idempotency-key': key });
        const other = `idem-other-${unique()}`;
        const response = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: auth({ 'idempotency-key': key }), payload: { name: other } });
        assertProblem(response, 409);
        assert.equal((await get(`/v1/groups?name=${other}`)).json().totalElements, 0);
      });

      it('does not keep a failed attempt: a corrected retry with the same key succeeds', async () => {
        const key = randomUUID();
        const name = `idem-fail-${unique()}`;
        const failed = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: auth({ 'idempotency-key': key }), payload: { name, colour: 'x' } });
        assert.equal(failed.statusCode, 400);
        const retried = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: auth({ 'idempotency-key': key }), payload: { name } });
        assert.equal(retried.statusCode, 201, retried.body);
      });

      it('keeps keys of different callers apart', async () => {
        const key = randomUUID();
        const body = { name: `idem-a-${unique()}` };
        await createGroup(body, { 'idempotency-key': key });
        // Another caller sending the same key and body is not answered with the admin's group (it has no permission: 403).
        const stranger = await t.tokenFor(`idem-${unique()}@example.com`);
        const response = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: { authorization: `Bearer ${stranger}`, 'idempotency-key': key }, payload: body });
        assertProblem(response, 403, 'ACCESS_DENIED');
      });

      it('without a key, two identical POSTs are two requests (the second a name conflict)', async () => {
        const name = `idem-none-${unique()}`;
        await createGroup({ name });
        const second = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: auth(), payload: { name } });
        assertProblem(second, 409, 'UNIQUE_CONSTRAINT_VIOLATION');
      });
    });

    describe('lists', () => {
      it('takes % and _ in a partial filter literally', async () => {
        const tag = unique();
        const percent = (await createGroup({ name: `a%b-${tag}` })).json().id;
        const x = (await createGroup({ name: `axb-${tag}` })).json().id;
        const underscore = (await createGroup({ name: `a_b-${tag}` })).json().id;
        const ids = `${percent},${x},${underscore}`;
        const names = async (query: string) => {
          const response = await get(`/v1/groups?id=${ids}&size=10&${query}`);
          assert.equal(response.statusCode, 200, response.body);
          return response.json().content.map((g: { id: string }) => g.id).sort();
        };
        assert.deepEqual(await names(`q=${encodeURIComponent('%')}`), [percent]);
        assert.deepEqual(await names(`name=${encodeURIComponent('%')}`), [percent]);
        assert.deepEqual(await names(`q=${encodeURIComponent('_')}`), [underscore]);
        assert.deepEqual(await names(`name=${encodeURIComponent('a_b')}`), [underscore]);
        assert.deepEqual(await names(`name=${encodeURIComponent('\\')}`), []);
        // Case-insensitive substring match.
        assert.deepEqual(await names(`name=${encodeURIComponent(`AXB-${tag.toUpperCase()}`)}`), [x]);
        assert.deepEqual(await names(`q=${tag}`), [percent, x, underscore].sort());
      });

      it('answers the Page envelope with exactly the fields of the specification', async () => {
        const tag = unique();
        for (let i = 0; i < 3; i++) await createGroup({ name: `env-${tag}-${i}`, description: `env-${tag}` });
        const response = await get(`/v1/groups?description=env-${tag}&size=2&page=1`);
        assert.equal(response.statusCode, 200);
        const page = response.json();
        assert.deepEqual(Object.keys(page).sort(), ['content', 'empty', 'first', 'last', 'number', 'numberOfElements', 'pageable', 'size', 'sort', 'totalElements', 'totalPages']);
        assert.deepEqual(Object.keys(page.sort).sort(), ['empty', 'sorted', 'unsorted']);
        assert.deepEqual(Object.keys(page.pageable).sort(), ['offset', 'pageNumber', 'pageSize', 'paged', 'sort', 'unpaged']);
        assert.deepEqual(Object.keys(page.pageable.sort).sort(), ['empty', 'sorted', 'unsorted']);
        assert.equal(page.content.length, 1);
        assert.equal(page.empty, false);
        assert.equal(page.first, false);
        assert.equal(page.last, true);
        assert.equal(page.number, 1);
        assert.equal(page.numberOfElements, 1);
        assert.equal(page.size, 2);
        assert.equal(page.totalElements, 3);
        assert.equal(page.totalPages, 2);
        assert.deepEqual(page.pageable, { offset: 2, pageNumber: 1, pageSize: 2, paged: true, unpaged: false, sort: page.sort });
        for (const value of Object.values(page.sort)) assert.equal(typeof value, 'boolean');
      });

      it('answers an empty page past the end with the right totals', async () => {
        const tag = unique();
        for (let i = 0; i < 2; i++) await createGroup({ name: `past-${tag}-${i}`, description: `past-${tag}` });
        const page = (await get(`/v1/groups?description=past-${tag}&size=2&page=5`)).json();
        assert.deepEqual(page.content, []);
        assert.equal(page.empty, true);
        assert.equal(page.first, false);
        assert.equal(page.last, true);
        assert.equal(page.numberOfElements, 0);
        assert.equal(page.totalElements, 2);
        assert.equal(page.totalPages, 1);
        const none = (await get(`/v1/groups?description=nothing-${tag}`)).json();
        assert.equal(none.empty, true);
        assert.equal(none.first, true);
        assert.equal(none.last, true);
        assert.equal(none.totalElements, 0);
        assert.equal(none.totalPages, 0);
      });

      it('walks 28 groups with equal sort keys in pages of 7 without repeat or gap', async () => {
        const tag = unique();
        const created = new Set<string>();
        for (let i = 0; i < 28; i++) created.add((await createGroup({ name: `tie-${tag}-${i}`, description: `tie-${tag}` })).json().id);
        for (const sort of ['description,asc', 'description,desc']) {
          const seen: string[] = [];
          for (let page = 0; page < 4; page++) {
            const response = await get(`/v1/groups?description=tie-${tag}&sort=${sort}&size=7&page=${page}`);
            assert.equal(response.statusCode, 200, response.body);
            const body = response.json();
            assert.equal(body.numberOfElements, 7);
            assert.equal(body.totalElements, 28);
            assert.equal(body.totalPages, 4);
            assert.equal(body.last, page === 3);
            seen.push(...body.content.map((g: { id: string }) => g.id));
          }
          assert.equal(new Set(seen).size, 28, `repeat under ${sort}`);
          assert.deepEqual(new Set(seen), created, `gap under ${sort}`);
          const after = (await get(`/v1/groups?description=tie-${tag}&sort=${sort}&size=7&page=4`)).json();
          assert.equal(after.numberOfElements, 0);
        }
        // The default sort (createdAt,DESC) also walks without repeat or gap, whatever ties it has.
        const seen: string[] = [];
        for (let page = 0; page < 4; page++) seen.push(...(await get(`/v1/groups?description=tie-${tag}&size=7&page=${page}`)).json().content.map((g: { id: string }) => g.id));
        assert.deepEqual(new Set(seen), created);
        assert.equal(seen.length, 28);
      });

      it('sorts by several keys, the later ones breaking ties of the earlier', async () => {
        const tag = unique();
        await createGroup({ name: `multi-${tag}-b`, description: `multi-${tag}-1` });
        await createGroup({ name: `multi-${tag}-a`, description: `multi-${tag}-1` });
        await createGroup({ name: `multi-${tag}-c`, description: `multi-${tag}-0` });
        const response = await get(`/v1/groups?q=multi-${tag}&sort=description,desc&sort=name,asc`);
        assert.equal(response.statusCode, 200, response.body);
        assert.deepEqual(response.json().content.map((g: { name: string }) => g.name), [`multi-${tag}-a`, `multi-${tag}-b`, `multi-${tag}-c`]);
      });
    });
  });
}
