import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, DEV_PASSWORD, ADMIN_EMAIL, REALM, type TestApp } from '../helpers/test-app.js';
import { buildIdpApp } from '../../src/idp/idp.app.js';
import { loadConfig } from '../../src/config.js';
import { docsOrigins } from '../../src/http/docs-login.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request, startReadyServer, type ChildServer } from '../faults/harness.js';
import { prefilledPgliteDirectory } from '../helpers/pglite-snapshot.js';

/**
 * Swagger UI (/docs) logs in by itself: the OpenAPI document's `login` scheme is the development
 * identity provider's password flow while that provider issues the accepted tokens, else OpenID
 * Connect discovery at OIDC_ISSUER. The token request below is the one Swagger UI 5 sends for the
 * password flow (its default "client credentials location" is the Authorization header; an empty
 * scope is left out of the form). The document does not depend on the database: PGlite is enough.
 */

const openApi = async (t: TestApp) => (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();

describe('Swagger UI login', () => {
  let t: TestApp;
  before(async () => { t = await buildTestApp('pglite'); });
  after(() => t.close());

  it('the document offers the password flow at the development realm\'s token endpoint, beside a pasted bearer token', async () => {
    const doc = await openApi(t);
    const tokenUrl = `${t.idpUrl}/realms/${REALM}/protocol/openid-connect/token`;
    assert.equal(t.ctx.config.oidc.issuer, `${t.idpUrl}/realms/${REALM}`);
    assert.deepEqual(doc.components.securitySchemes.login.flows, { password: { tokenUrl, scopes: {} } });
    assert.equal(doc.components.securitySchemes.login.type, 'oauth2');
    assert.deepEqual(doc.security, [{ bearerAuth: [] }, { login: [] }]);
    // The same document is the one /docs loads, and Swagger UI is told the client id.
    assert.deepEqual((await t.app.inject({ method: 'GET', url: '/docs/json' })).json().components.securitySchemes, doc.components.securitySchemes);
    const initializer = await t.app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    assert.equal(initializer.statusCode, 200);
    assert.match(initializer.body, /initOAuth\(\{"clientId":"api-access","usePkceWithAuthorizationCodeGrant":true\}\)/);
  });

  it('a token obtained exactly as Swagger UI asks for it works on /v1/users/me', async () => {
    const { tokenUrl } = (await openApi(t)).components.securitySchemes.login.flows.password;
    const response = await fetch(tokenUrl, {
      method: 'POST',
      headers: {
        Accept: 'application/json, text/plain, */*',
        'Content-Type': 'application/x-www-form-urlencoded',
        'X-Requested-With': 'XMLHttpRequest',
        Authorization: `Basic ${Buffer.from('api-access:').toString('base64')}`,
      },
      body: `grant_type=password&username=${encodeURIComponent(ADMIN_EMAIL)}&password=${DEV_PASSWORD}`,
    });
    assert.equal(response.status, 200, await response.clone().text());
    const { access_token: token } = await response.json() as { access_token: string };
    const me = await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: { authorization: `Bearer ${token}` } });
    assert.equal(me.statusCode, 200, me.body);
    assert.equal(me.json().email, ADMIN_EMAIL);
    assert.ok(me.json().assignments.length > 0);

    // The "request body" choice of Swagger UI (client_id in the form) works as well; a wrong password does not.
    const inBody = await fetch(tokenUrl, {
      method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: `grant_type=password&username=${encodeURIComponent(ADMIN_EMAIL)}&password=${DEV_PASSWORD}&client_id=api-access`,
    });
    assert.equal(inBody.status, 200);
    const wrong = await fetch(tokenUrl, {
      method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: `Basic ${Buffer.from('api-access:').toString('base64')}` },
      body: `grant_type=password&username=${encodeURIComponent(ADMIN_EMAIL)}&password=wrong`,
    });
    assert.equal(wrong.status, 401);
  });

  it('without the development identity provider (or with another issuer), the scheme is OpenID Connect discovery at OIDC_ISSUER', async () => {
    const off = await buildTestApp('pglite', { DEV_IDP: 'off' });
    try {
      const { login } = (await openApi(off)).components.securitySchemes;
      assert.deepEqual([login.type, login.openIdConnectUrl], ['openIdConnect', `${off.ctx.config.oidc.issuer}/.well-known/openid-configuration`]);
      // It is a real discovery document there (the test's provider stands in for a Keycloak realm).
      const discovery = await (await fetch(login.openIdConnectUrl)).json() as { issuer: string; token_endpoint: string };
      assert.equal(discovery.issuer, off.ctx.config.oidc.issuer);
    } finally {
      await off.close();
    }
    const keycloak = await buildTestApp('pglite', { OIDC_ISSUER: 'https://keycloak.example/realms/city' });
    try {
      const { login } = (await openApi(keycloak)).components.securitySchemes;
      assert.deepEqual([login.type, login.openIdConnectUrl], ['openIdConnect', 'https://keycloak.example/realms/city/.well-known/openid-configuration']);
    } finally {
      await keycloak.close();
    }
  });

  describe('CORS of the development identity provider for /docs (another port)', () => {
    const docs = 'http://localhost:8080';
    const path = `/realms/${REALM}/protocol/openid-connect/token`;

    it('the server allows the origin of BASE_URL', () => {
      assert.deepEqual(docsOrigins(loadConfig({ BASE_URL: 'http://localhost:8080/' })), [docs]);
      assert.deepEqual(docsOrigins(loadConfig({ BASE_URL: 'https://api.city.example/base' })), ['https://api.city.example']);
    });

    it('answers the preflight of Swagger UI\'s token request from that origin, and the request itself; no other origin', async () => {
      const idp = await buildIdpApp({ idpUrl: 'http://localhost:8090', password: DEV_PASSWORD, tokenTtlSeconds: 300, corsOrigins: [docs] });
      try {
        const preflight = await idp.inject({
          method: 'OPTIONS', url: path,
          headers: { origin: docs, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,x-requested-with' },
        });
        assert.equal(preflight.statusCode, 204, preflight.body);
        assert.equal(preflight.headers['access-control-allow-origin'], docs);
        assert.match(String(preflight.headers['access-control-allow-methods']), /POST/);
        const allowed = String(preflight.headers['access-control-allow-headers']).toLowerCase().split(',').map((h) => h.trim());
        for (const header of ['authorization', 'x-requested-with', 'content-type']) assert.ok(allowed.includes(header), `${header} not allowed: ${allowed.join()}`);

        const token = await idp.inject({
          method: 'POST', url: path,
          headers: {
            origin: docs, 'content-type': 'application/x-www-form-urlencoded', 'x-requested-with': 'XMLHttpRequest',
            authorization: `Basic ${Buffer.from('api-access:').toString('base64')}`,
          },
          payload: `grant_type=password&username=${encodeURIComponent(ADMIN_EMAIL)}&password=${DEV_PASSWORD}`,
        });
        assert.equal(token.statusCode, 200, token.body);
        assert.equal(token.headers['access-control-allow-origin'], docs);

        const elsewhere = await idp.inject({ method: 'OPTIONS', url: path, headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
        assert.equal(elsewhere.headers['access-control-allow-origin'], undefined);
      } finally {
        await idp.close();
      }
    });

    it('sends no CORS headers when given no origins', async () => {
      const idp = await buildIdpApp({ idpUrl: 'http://localhost:8090', password: DEV_PASSWORD, tokenTtlSeconds: 300 });
      try {
        const preflight = await idp.inject({ method: 'OPTIONS', url: path, headers: { origin: docs, 'access-control-request-method': 'POST' } });
        assert.equal(preflight.headers['access-control-allow-origin'], undefined);
      } finally {
        await idp.close();
      }
    });
  });

  it('the real program: /docs\'s origin gets the token through CORS, as a browser would, and it works on /v1/users/me', { timeout: 180_000 }, async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'docs-login-'));
    let server: ChildServer | undefined;
    try {
      await prefilledPgliteDirectory(dataDir);
      server = await startReadyServer({ DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
      const doc = (await request(`${server.apiUrl}/openapi.json`)).body;
      const { tokenUrl } = doc.components.securitySchemes.login.flows.password;
      assert.equal(tokenUrl, `${server.idpUrl}/realms/${REALM}/protocol/openid-connect/token`);
      const origin = new URL(server.apiUrl).origin;
      const preflight = await request(tokenUrl, {
        method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,x-requested-with' },
      });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers['access-control-allow-origin'], origin);
      const response = await fetch(tokenUrl, {
        method: 'POST',
        headers: {
          origin, Accept: 'application/json, text/plain, */*', 'Content-Type': 'application/x-www-form-urlencoded', 'X-Requested-With': 'XMLHttpRequest',
          Authorization: `Basic ${Buffer.from('api-access:').toString('base64')}`,
        },
        body: `grant_type=password&username=${encodeURIComponent(ADMIN_EMAIL)}&password=${DEV_PASSWORD}`,
      });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('access-control-allow-origin'), origin);
      const { access_token: token } = await response.json() as { access_token: string };
      const me = await request(`${server.apiUrl}/v1/users/me`, { token });
      assert.equal(me.status, 200, JSON.stringify(me.body));
      assert.equal(me.body.email, ADMIN_EMAIL);
      assert.equal(await server.kill('SIGTERM'), 0);
    } finally {
      await server?.kill();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
