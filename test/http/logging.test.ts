import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { buildApp } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';

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
    assert.ok(ofRequest.length >= 2, 'incoming request and request completed are logged with the id');
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
