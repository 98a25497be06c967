import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { gzipSync } from 'node:zlib';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';

// A JSON body is UTF-8 and not compressed; anything else is refused with a problem that says so,
// rather than read as garbled text (U+FFFD stored in place of what the client meant).
function assertProblem(response: LightMyRequestResponse, status: number, code: string) {
  assert.equal(response.statusCode, status, response.body);
  assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
  const problem = response.json();
  assert.equal(problem.type, `urn:platform:error:${code}`);
  assert.equal(problem.title, STATUS_CODES[status]);
  assert.equal(problem.instance, '/v1/groups');
  return problem as { detail: string; fieldErrors?: Array<{ field: string; message: string }> };
}

for (const kind of databaseKinds(import.meta.url)) {
  describe(`JSON body representation (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());
    const name = () => `body-${randomUUID().slice(0, 8)}`;
    const post = (payload: string | Buffer, headers: Record<string, string> = {}) =>
      t.app.inject({ method: 'POST', url: '/v1/groups', headers: { authorization: `Bearer ${t.adminToken}`, 'content-type': 'application/json', ...headers }, payload });

    test('a charset other than UTF-8 answers 415', async () => {
      for (const contentType of ['application/json; charset=latin1', 'application/json; charset=ISO-8859-1', 'application/json;charset="utf-16"']) {
        const problem = assertProblem(await post(JSON.stringify({ name: name() }), { 'content-type': contentType }), 415, 'UNSUPPORTED_MEDIA_TYPE');
        assert.match(problem.detail, /UTF-8/);
      }
    });

    test('charset=utf-8 is accepted in any case, quoted or not', async () => {
      for (const contentType of ['application/json; charset=utf-8', 'application/json; charset=UTF-8', 'application/json; charset="Utf-8"', 'application/merge-patch+json; charset=utf-8']) {
        const response = await post(JSON.stringify({ name: name() }), { 'content-type': contentType });
        assert.equal(response.statusCode, 201, `${contentType}: ${response.body}`);
      }
    });

    test('a Content-Encoding other than identity answers 415', async () => {
      const json = JSON.stringify({ name: name() });
      assertProblem(await post(gzipSync(json), { 'content-encoding': 'gzip' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
      assertProblem(await post(json, { 'content-encoding': 'br' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
      assertProblem(await post(json, { 'content-encoding': 'identity, deflate' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
      assert.equal((await post(json, { 'content-encoding': 'identity' })).statusCode, 201);
    });

    test('invalid UTF-8 bytes answer 400 MALFORMED_REQUEST', async () => {
      const bytes = Buffer.concat([Buffer.from('{"name":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]);
      const problem = assertProblem(await post(bytes), 400, 'MALFORMED_REQUEST');
      assert.match(problem.detail, /UTF-8/);
    });

    test('a lone surrogate answers 400 VALIDATION_FAILED naming the field', async () => {
      const problem = assertProblem(await post('{"name":"half \\ud800 a pair"}'), 400, 'VALIDATION_FAILED');
      assert.deepEqual(problem.fieldErrors, [{ field: 'name', message: 'must be well-formed Unicode (no lone surrogate)' }]);
      const paired = await post(`{"name":"${name()} \\ud83d\\ude00"}`);
      assert.equal(paired.statusCode, 201, paired.body);
      assert.match(paired.json().name, /\u{1F600}$/u);
    });

    test('UTF-8 text (with a byte order mark) is read as such', async () => {
      const text = `${name()} Zürich – 東京`;
      const response = await post(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify({ name: text }))]));
      assert.equal(response.statusCode, 201, response.body);
      assert.equal(response.json().name, text);
    });

    test('the 1 MiB limit still answers 413', async () => {
      assertProblem(await post(JSON.stringify({ name: 'x'.repeat(1024 * 1024) })), 413, 'PAYLOAD_TOO_LARGE');
    });
  });
}
