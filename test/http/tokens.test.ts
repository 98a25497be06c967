import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { base64url, SignJWT } from 'jose';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp, databaseKinds, ADMIN_EMAIL, type TestApp } from '../helpers/test-app.js';

/**
 * The contract's token rules at the HTTP level: every /v1 request needs a bearer token that the
 * configured issuer signed (RS256/ES256/PS256) for the configured client, not expired (30 s
 * leeway); anything else answers 401 with an HTML body.
 */

const now = () => Math.floor(Date.now() / 1000);
const unique = () => randomUUID().slice(0, 8);

function assertHtml401(response: LightMyRequestResponse) {
  assert.equal(response.statusCode, 401, response.body);
  assert.match(String(response.headers['content-type']), /^text\/html/);
  assert.match(response.body, /<html/i);
  // The gateway's page, not a problem object and no token material.
  assert.doesNotMatch(response.body, /urn:platform:error/);
}

function assertProblem(response: LightMyRequestResponse, status: number, code: string) {
  assert.equal(response.statusCode, status, response.body);
  assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
  const body = response.json();
  assert.equal(body.type, `urn:platform:error:${code}`);
  assert.equal(body.status, status);
  return body;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

for (const kind of databaseKinds(import.meta.url)) {
  describe(`tokens (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());

    const getGroups = (headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url: '/v1/groups', headers });

    /** A token signed with the realm's real key: the helper adds iss, azp, iat and exp; these override. */
    const signed = (claims: Record<string, unknown>) =>
      t.signToken({ sub: randomUUID(), email: ADMIN_EMAIL, preferred_username: ADMIN_EMAIL, ...claims });

    it('accepts a valid token from the development identity provider', async () => {
      const response = await getGroups(bearer(t.adminToken));
      assert.equal(response.statusCode, 200, response.body);
      assert.match(String(response.headers['content-type']), /^application\/json/);
      assert.ok(Array.isArray(response.json().content));
    });

    it('accepts the same token on /v1/permissions (a second route, a repeated token)', async () => {
      const first = await t.app.inject({ method: 'GET', url: '/v1/permissions', headers: bearer(t.adminToken) });
      const second = await t.app.inject({ method: 'GET', url: '/v1/permissions', headers: bearer(t.adminToken) });
      assert.equal(first.statusCode, 200, first.body);
      assert.equal(second.statusCode, 200, second.body);
      assert.deepEqual(second.json(), first.json());
    });

    it('answers 401 with an HTML body when the Authorization header is missing', async () => {
      assertHtml401(await getGroups());
      assertHtml401(await t.app.inject({ method: 'GET', url: '/v1/permissions' }));
    });

    it('answers 401 to a POST without a token before looking at the body', async () => {
      const response = await t.app.inject({ method: 'POST', url: '/v1/groups', payload: { name: `no-token-${unique()}` } });
      assertHtml401(response);
      const listed = await t.app.inject({ method: 'GET', url: '/v1/groups?size=1000', headers: bearer(t.adminToken) });
      assert.equal(listed.json().content.some((g: { name: string }) => g.name.startsWith('no-token-')), false);
    });

    it('answers 401 to a Bearer token that is garbage', async () => {
      assertHtml401(await getGroups({ authorization: 'Bearer garbage' }));
      assertHtml401(await getGroups({ authorization: 'Bearer a.b.c' }));
      assertHtml401(await getGroups({ authorization: 'Bearer ' }));
      assertHtml401(await getGroups({ authorization: 'Bearer' }));
    });

    it('answers 401 to the Basic scheme, even with the right password', async () => {
      const basic = Buffer.from(`${ADMIN_EMAIL}:dev`).toString('base64');
      assertHtml401(await getGroups({ authorization: `Basic ${basic}` }));
    });

    it('answers 401 to the admin token sent under another scheme', async () => {
      assertHtml401(await getGroups({ authorization: `Token ${t.adminToken}` }));
      assertHtml401(await getGroups({ authorization: t.adminToken }));
    });

    it('answers 401 when one character of the signature is changed', async () => {
      const [header, payload, signature] = t.adminToken.split('.') as [string, string, string];
      const middle = Math.floor(signature.length / 2);
      const flipped = signature[middle] === 'A' ? 'B' : 'A';
      const tampered = `${header}.${payload}.${signature.slice(0, middle)}${flipped}${signature.slice(middle + 1)}`;
      assert.notEqual(tampered, t.adminToken);
      assertHtml401(await getGroups(bearer(tampered)));
    });

    it('answers 401 when the payload is changed under the original signature', async () => {
      const [header, , signature] = t.adminToken.split('.') as [string, string, string];
      const forged = base64url.encode(JSON.stringify({
        iss: `${t.idpUrl}/realms/platform`, azp: 'api-access', sub: randomUUID(), email: ADMIN_EMAIL, iat: now(), exp: now() + 3600,
      }));
      assertHtml401(await getGroups(bearer(`${header}.${forged}.${signature}`)));
    });

    it('answers 401 to a token of another realm (another issuer and key)', async () => {
      const other = await t.tokenFor(ADMIN_EMAIL, 'api-access', 'other-realm');
      assertHtml401(await getGroups(bearer(other)));
    });

    it('answers 401 to a token signed with another realm key but claiming our issuer', async () => {
      const token = await t.signToken({ sub: randomUUID(), email: ADMIN_EMAIL }, { realm: 'another-realm' });
      // The helper names the realm of the key as issuer; put ours back under that key.
      const ours = await t.signToken({ sub: randomUUID(), email: ADMIN_EMAIL, iss: `${t.idpUrl}/realms/platform` }, { realm: 'another-realm' });
      assertHtml401(await getGroups(bearer(token)));
      assertHtml401(await getGroups(bearer(ours)));
    });

    it('answers 401 to a token issued to another client', async () => {
      const other = await t.tokenFor(ADMIN_EMAIL, 'other-client');
      assertHtml401(await getGroups(bearer(other)));
    });

    it('accepts a token without azp whose aud contains the client', async () => {
      const token = await signed({ azp: undefined, aud: ['account', 'api-access'] });
      const response = await getGroups(bearer(token));
      assert.equal(response.statusCode, 200, response.body);
    });

    it('accepts a token without azp whose aud is the client as a single string', async () => {
      const response = await getGroups(bearer(await signed({ azp: undefined, aud: 'api-access' })));
      assert.equal(response.statusCode, 200, response.body);
    });

    it('answers 401 to a token without azp whose aud does not contain the client', async () => {
      assertHtml401(await getGroups(bearer(await signed({ azp: undefined, aud: ['account'] }))));
      assertHtml401(await getGroups(bearer(await signed({ azp: undefined, aud: undefined }))));
    });

    it('answers 401 when azp names another client even if aud contains ours', async () => {
      assertHtml401(await getGroups(bearer(await signed({ azp: 'other-client', aud: ['api-access'] }))));
    });

    it('answers 401 to a token that expired 60 s ago', async () => {
      assertHtml401(await getGroups(bearer(await signed({ iat: now() - 400, exp: now() - 60 }))));
    });

    it('accepts a token that expired 10 s ago (30 s leeway)', async () => {
      const response = await getGroups(bearer(await signed({ iat: now() - 310, exp: now() - 10 })));
      assert.equal(response.statusCode, 200, response.body);
    });

    it('answers 401 to a token issued 5 minutes in the future', async () => {
      assertHtml401(await getGroups(bearer(await signed({ iat: now() + 300, exp: now() + 600 }))));
    });

    it('answers 401 to a token not valid before 5 minutes from now', async () => {
      assertHtml401(await getGroups(bearer(await signed({ nbf: now() + 300 }))));
    });

    it('answers 401 to a token of another issuer signed with our key', async () => {
      assertHtml401(await getGroups(bearer(await signed({ iss: `${t.idpUrl}/realms/platform/` }))));
      assertHtml401(await getGroups(bearer(await signed({ iss: 'https://evil.example/realms/platform' }))));
    });

    it('answers 401 to an unsigned token (alg: none) with otherwise right claims', async () => {
      const header = base64url.encode(JSON.stringify({ alg: 'none', typ: 'JWT' }));
      const payload = base64url.encode(JSON.stringify({
        iss: `${t.idpUrl}/realms/platform`, azp: 'api-access', sub: randomUUID(), email: ADMIN_EMAIL, iat: now(), exp: now() + 300,
      }));
      assertHtml401(await getGroups(bearer(`${header}.${payload}.`)));
      // The same with a non-empty third part, so that only the algorithm is wrong.
      assertHtml401(await getGroups(bearer(`${header}.${payload}.${base64url.encode('x')}`)));
    });

    it('answers 401 to an HS256 token signed with a guessable secret', async () => {
      for (const secret of ['secret', 'api-access', 'dev']) {
        const token = await new SignJWT({ azp: 'api-access', email: ADMIN_EMAIL })
          .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
          .setIssuer(`${t.idpUrl}/realms/platform`)
          .setSubject(randomUUID())
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(new TextEncoder().encode(secret));
        assertHtml401(await getGroups(bearer(token)));
      }
    });

    it('authenticates a valid token of an unknown email but grants nothing (403)', async () => {
      const token = await t.tokenFor(`stranger-${unique()}@example.com`);
      const body = assertProblem(await getGroups(bearer(token)), 403, 'ACCESS_DENIED');
      assert.equal(body.instance, '/v1/groups');
      assertProblem(await t.app.inject({ method: 'GET', url: '/v1/permissions', headers: bearer(token) }), 403, 'ACCESS_DENIED');
    });

    it('lets an unknown email read /v1/users/me', async () => {
      const token = await t.tokenFor(`stranger-${unique()}@example.com`);
      const response = await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: bearer(token) });
      assert.equal(response.statusCode, 200, response.body);
    });

    it('matches the caller by email case-insensitively', async () => {
      const token = await t.tokenFor(ADMIN_EMAIL.toUpperCase());
      const response = await getGroups(bearer(token));
      assert.equal(response.statusCode, 200, response.body);
    });

    it('answers 401 (HTML) on an unknown /v1 path without a token, 403 ACCESS_DENIED with one', async () => {
      assertHtml401(await t.app.inject({ method: 'GET', url: '/v1/no-such-thing' }));
      const body = assertProblem(await t.app.inject({ method: 'GET', url: '/v1/no-such-thing', headers: bearer(t.adminToken) }), 403, 'ACCESS_DENIED');
      assert.equal(body.instance, '/v1/no-such-thing');
      // An unknown method on a known path is an unknown operation too.
      assertProblem(await t.app.inject({ method: 'PATCH', url: '/v1/permissions', headers: bearer(t.adminToken), payload: {} }), 403, 'ACCESS_DENIED');
    });

    it('answers 404 (problem) outside /v1 without asking for a token', async () => {
      for (const url of ['/nothing-here', '/v2/groups', '/v1x/groups', '/']) {
        const body = assertProblem(await t.app.inject({ method: 'GET', url }), 404, 'NOT_FOUND');
        assert.equal(body.instance, url);
      }
    });

    it('serves /health/live, /health/ready and /openapi.json without a token', async () => {
      const live = await t.app.inject({ method: 'GET', url: '/health/live' });
      assert.equal(live.statusCode, 200, live.body);
      const ready = await t.app.inject({ method: 'GET', url: '/health/ready' });
      assert.equal(ready.statusCode, 200, ready.body);
      const openapi = await t.app.inject({ method: 'GET', url: '/openapi.json' });
      assert.equal(openapi.statusCode, 200);
      assert.match(String(openapi.headers['content-type']), /^application\/json/);
      // A bad token on those paths is not looked at either.
      const withGarbage = await t.app.inject({ method: 'GET', url: '/health/live', headers: { authorization: 'Bearer garbage' } });
      assert.equal(withGarbage.statusCode, 200);
    });
  });
}
