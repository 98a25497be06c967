import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { decodeProtectedHeader } from 'jose';
import { buildTestApp, databaseKinds, ADMIN_EMAIL, DEV_PASSWORD, REALM, type TestApp } from '../helpers/test-app.js';
import { buildApp } from '../../src/app.js';
import { createTokenVerifier } from '../../src/http/token-verifier.js';
import { ConfigError, loadConfig } from '../../src/config.js';

// The 401 says why in WWW-Authenticate (RFC 6750 §3) and nothing more; tokens whose identity
// claims the database cannot hold are authenticated without permissions; OIDC_CLIENT_ID may list
// several clients.

const now = () => Math.floor(Date.now() / 1000);

function assertChallenge(response: LightMyRequestResponse, challenge: string) {
  assert.equal(response.statusCode, 401, response.body);
  assert.match(String(response.headers['content-type']), /^text\/html/);
  assert.equal(response.headers['www-authenticate'], challenge);
}

for (const kind of databaseKinds(import.meta.url)) {
  describe(`token errors (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());
    const getGroups = (authorization?: string) =>
      t.app.inject({ method: 'GET', url: '/v1/groups', headers: authorization === undefined ? {} : { authorization } });
    const invalidToken = (description: string) => `Bearer realm="api", error="invalid_token", error_description="${description}"`;

    test('a request without a token gets the realm and no error (RFC 6750 §3.1)', async () => {
      assertChallenge(await getGroups(), 'Bearer realm="api"');
    });

    test('a malformed Authorization header is invalid_request', async () => {
      for (const header of ['Basic YWRtaW46ZGV2', 'Bearer', 'Bearer a b']) {
        assertChallenge(await getGroups(header), 'Bearer realm="api", error="invalid_request", error_description="malformed Authorization header"');
      }
    });

    test('each rejected token names its reason', async () => {
      const sign = (claims: Record<string, unknown>) => t.signToken({ sub: randomUUID(), email: ADMIN_EMAIL, ...claims });
      const cases: Array<[string, Promise<string> | string]> = [
        ['token expired', sign({ iat: now() - 600, exp: now() - 300 })],
        ['wrong issuer', sign({ iss: 'https://elsewhere.example/realms/secret-realm-name' })],
        ['token issued to another client', sign({ azp: 'some-other-client' })],
        ['token not yet valid', sign({ nbf: now() + 300 })],
        ['malformed token', 'not-a-jwt'],
        ['invalid signature', (async () => { const token = await sign({}); return `${token.slice(0, -6)}AAAAAA`; })()],
      ];
      for (const [reason, token] of cases) {
        const response = await getGroups(`Bearer ${await token}`);
        assertChallenge(response, invalidToken(reason));
        // Nothing from the token is echoed: neither claim values nor the key id.
        const header = String(response.headers['www-authenticate']);
        assert.doesNotMatch(header, /elsewhere|secret-realm-name|some-other-client|example\.com/);
        if (reason !== 'malformed token') assert.ok(!header.includes(String(decodeProtectedHeader(await token).kid)));
      }
    });

    test('a token whose email holds a NUL is authenticated without permissions', async () => {
      const token = await t.signToken({ sub: randomUUID(), email: `${ADMIN_EMAIL}\u0000`, preferred_username: 'nul\u0000user' });
      const me = await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: { authorization: `Bearer ${token}` } });
      assert.equal(me.statusCode, 200, me.body);
      assert.deepEqual(me.json().assignments, []);
      const groups = await getGroups(`Bearer ${token}`);
      assert.equal(groups.statusCode, 403, groups.body);
      assert.equal(groups.json().type, 'urn:platform:error:ACCESS_DENIED');
    });

    test('a token whose sub holds a NUL is authenticated without permissions, even with a known email', async () => {
      const token = await t.signToken({ sub: `${randomUUID()}\u0000`, email: ADMIN_EMAIL });
      const me = await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: { authorization: `Bearer ${token}` } });
      assert.equal(me.statusCode, 200, me.body);
      assert.deepEqual(me.json().assignments, []);
      const groups = await getGroups(`Bearer ${token}`);
      assert.equal(groups.statusCode, 403, groups.body);
      // Idempotency keys are stored per subject: that path must not fail either.
      const create = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: { authorization: `Bearer ${token}`, 'idempotency-key': randomUUID() }, payload: { name: 'nul-sub' } });
      assert.equal(create.statusCode, 403, create.body);
    });

    test('the development identity provider refuses a username with a control character', async () => {
      for (const username of [`nul\u0000@example.com`, `bell\u0007@example.com`, `del\u007f@example.com`, `c1\u0085@example.com`]) {
        const response = await fetch(`${t.idpUrl}/realms/${REALM}/protocol/openid-connect/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'password', client_id: 'api-access', username, password: DEV_PASSWORD }),
        });
        assert.equal(response.status, 400, JSON.stringify(username));
        assert.equal(((await response.json()) as { error: string }).error, 'invalid_request');
      }
    });
  });

  describe(`several accepted clients (${kind})`, () => {
    let t: TestApp;
    let app: FastifyInstance;
    before(async () => {
      t = await buildTestApp(kind, { OIDC_CLIENT_ID: ' portal , api-access' });
      const { issuer, clientIds } = t.ctx.config.oidc;
      app = await buildApp({ ...t.ctx, verifier: createTokenVerifier({ issuer, clientId: clientIds }) });
      await app.ready();
    });
    after(async () => {
      await app.close();
      await t.close();
    });
    const getGroups = (token: string) => app.inject({ method: 'GET', url: '/v1/groups', headers: { authorization: `Bearer ${token}` } });

    test('OIDC_CLIENT_ID lists the clients; the first is the one clientId names', () => {
      assert.deepEqual(t.ctx.config.oidc.clientIds, ['portal', 'api-access']);
      assert.equal(t.ctx.config.oidc.clientId, 'portal');
      assert.throws(() => loadConfig({ OIDC_CLIENT_ID: ' , ' }), (error: unknown) => error instanceof ConfigError && /OIDC_CLIENT_ID/.test(error.message));
    });

    test('a token of any listed client is accepted (by azp, or by aud without azp)', async () => {
      for (const client of ['portal', 'api-access']) {
        assert.equal((await getGroups(await t.tokenFor(ADMIN_EMAIL, client))).statusCode, 200, client);
        const byAudience = await t.signToken({ sub: randomUUID(), email: ADMIN_EMAIL, azp: undefined, aud: ['account', client] });
        assert.equal((await getGroups(byAudience)).statusCode, 200, `aud ${client}`);
      }
    });

    test('a token of a client not listed answers 401 naming the reason', async () => {
      const response = await getGroups(await t.tokenFor(ADMIN_EMAIL, 'elsewhere'));
      assertChallenge(response, 'Bearer realm="api", error="invalid_token", error_description="token issued to another client"');
      const byAudience = await t.signToken({ sub: randomUUID(), email: ADMIN_EMAIL, azp: undefined, aud: ['account', 'elsewhere'] });
      assertChallenge(await getGroups(byAudience), 'Bearer realm="api", error="invalid_token", error_description="token not meant for this client"');
    });
  });
}
