import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { buildApp } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';
import { createTokenVerifier } from '../../src/http/token-verifier.js';
import { freePort } from '../helpers/ports.js';

// Logs are JSON lines carrying the request id; a bearer token never appears in them.
describe('request logs', () => {
  let t: TestApp;
  let app: FastifyInstance;
  const lines: string[] = [];
  before(async () => {
    t = await buildTestApp('pglite');
    const sink = new Writable({ write(chunk, _encoding, done) { lines.push(...String(chunk).split('\n').filter(Boolean)); done(); } });
    app = await buildApp(t.ctx, createLogger('info', sink));
    await app.ready();
  });
  after(async () => {
    await app.close();
    await t.close();
  });

  test('every line is JSON, the request id is logged, the token is not', async () => {
    const response = await app.inject({ method: 'GET', url: '/v1/groups', headers: { authorization: `Bearer ${t.adminToken}`, 'x-request-id': 'log-check-1' } });
    assert.equal(response.statusCode, 200);
    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const ofRequest = entries.filter((entry) => entry['reqId'] === 'log-check-1');
    // One access line per request at info, with the id, the method, the URL and the status.
    assert.equal(ofRequest.length, 1, JSON.stringify(ofRequest));
    assert.equal(ofRequest[0]!['msg'], 'request completed');
    assert.deepEqual(ofRequest[0]!['req'], { method: 'GET', url: '/v1/groups' }, 'inject has no client address');
    assert.deepEqual(ofRequest[0]!['res'], { statusCode: 200 });
    assert.equal(typeof ofRequest[0]!['responseTime'], 'number');
    assert.ok(lines.every((line) => !line.includes(t.adminToken)), 'the token is not in the logs');
  });

  test('a header object logged on purpose has its credentials redacted', () => {
    const captured: string[] = [];
    const logger = createLogger('info', new Writable({ write(chunk, _encoding, done) { captured.push(String(chunk)); done(); } }));
    logger.info({ req: { headers: { authorization: 'Bearer secret-token', cookie: 'session=secret' } } }, 'headers');
    const entry = JSON.parse(captured[0]!);
    assert.equal(entry.req.headers.authorization, '[redacted]');
    assert.equal(entry.req.headers.cookie, '[redacted]');
    assert.ok(!captured[0]!.includes('secret'));
  });
});

describe('an identity provider that cannot be reached', () => {
  let t: TestApp;
  before(async () => { t = await buildTestApp('pglite'); });
  after(async () => { await t.close(); });

  test('answers 401 "identity provider unavailable" and logs the URL that failed, for the operator', async () => {
    // A port nothing listens on (one of this process's own: no other test binds it meanwhile).
    const closed = await freePort();
    const issuer = `http://127.0.0.1:${closed}/realms/platform`;
    const lines: string[] = [];
    const sink = new Writable({ write(chunk, _encoding, done) { lines.push(...String(chunk).split('\n').filter(Boolean)); done(); } });
    const verifier = createTokenVerifier({ issuer, clientId: 'api-access' });
    const app = await buildApp({ ...t.ctx, verifier }, createLogger('info', sink));
    try {
      // A real token of another issuer: well-formed, so the verifier must ask the (absent) provider for keys.
      const response = await app.inject({ method: 'GET', url: '/v1/users/me', headers: { authorization: `Bearer ${t.adminToken}` } });
      assert.equal(response.statusCode, 401);
      assert.match(String(response.headers['www-authenticate']), /error_description="identity provider unavailable"/);
      assert.doesNotMatch(String(response.headers['www-authenticate']), /127\.0\.0\.1/, 'the client is not told internal addresses');
      const warning = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((entry) => entry['level'] === 40);
      assert.ok(warning, lines.join('\n'));
      assert.equal(warning['msg'], `identity provider unavailable: ${issuer}/.well-known/openid-configuration (ECONNREFUSED)`);
    } finally {
      await app.close();
    }
  });
});
