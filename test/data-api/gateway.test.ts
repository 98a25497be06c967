import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { buildDataApiApp } from '../../src/data-api/gateway.app.js';

// The data API listener before datasets can publish: the gateway's token rules, then 404 for
// every payload path (as for an unpublished dataset), 403 for other /v1 paths, 404 outside /v1.
for (const kind of databaseKinds()) {
  describe(`data API gateway (${kind})`, () => {
    let t: TestApp;
    let gateway: FastifyInstance;
    const payloadPath = '/v1/datasets/7f1d2c4e-9b8a-4c3d-8e2f-1a2b3c4d5e6f/weather';
    before(async () => {
      t = await buildTestApp(kind);
      gateway = await buildDataApiApp(t.ctx);
      await gateway.ready();
    });
    after(async () => {
      await gateway.close();
      await t.close();
    });

    test('a payload path without a token answers the gateway 401 (HTML)', async () => {
      const response = await gateway.inject({ method: 'GET', url: `${payloadPath}?SERVICE=WFS&REQUEST=GetCapabilities` });
      assert.equal(response.statusCode, 401);
      assert.match(String(response.headers['content-type']), /^text\/html/);
    });

    test('a payload path with a valid token answers 404 NOT_FOUND (nothing is published yet)', async () => {
      for (const url of [payloadPath, `${payloadPath}/Things`]) {
        const response = await gateway.inject({ method: 'GET', url, headers: { authorization: `Bearer ${t.adminToken}` } });
        assert.equal(response.statusCode, 404, url);
        assert.equal(response.headers['content-type'], 'application/problem+json; charset=utf-8');
        assert.equal(response.json().type, 'urn:platform:error:NOT_FOUND');
      }
    });

    test('another path under /v1 answers 403, a path outside /v1 404', async () => {
      const inside = await gateway.inject({ method: 'GET', url: '/v1/groups', headers: { authorization: `Bearer ${t.adminToken}` } });
      assert.equal(inside.statusCode, 403);
      assert.equal(inside.json().type, 'urn:platform:error:ACCESS_DENIED');
      const outside = await gateway.inject({ method: 'GET', url: '/datasets' });
      assert.equal(outside.statusCode, 404);
    });

    test('health answers without a token', async () => {
      assert.equal((await gateway.inject({ method: 'GET', url: '/health/live' })).statusCode, 200);
      const ready = await gateway.inject({ method: 'GET', url: '/health/ready' });
      assert.equal(ready.statusCode, 200);
      assert.deepEqual(ready.json(), { status: 'UP', checks: { database: 'UP' } });
    });
  });
}
