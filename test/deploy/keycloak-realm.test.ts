// deploy/keycloak/realm-export.json, without a Keycloak (none can be installed here): the realm's
// client and mappers are read by a small interpreter of the three mapper types it uses, which
// derives the access token Keycloak would issue; that token must carry the claims the service
// reads, of the kinds the development identity provider gives them, and a token of that shape,
// signed as the realm signs (RS256, key from a JWKS found through discovery), must pass the
// service's token checks.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { decodeJwt, exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import { ADMIN_EMAIL, buildTestApp, testIdp, type TestApp } from '../helpers/test-app.js';
import { REPOSITORY } from './kubernetes-render.js';

interface Mapper { name: string; protocol: string; protocolMapper: string; config: Record<string, string> }
interface Client {
  clientId: string; publicClient: boolean; standardFlowEnabled: boolean; directAccessGrantsEnabled: boolean;
  implicitFlowEnabled: boolean; defaultClientScopes?: string[]; optionalClientScopes?: string[];
  attributes: Record<string, string>; protocolMappers: Mapper[];
}
interface Realm {
  realm: string; enabled: boolean; accessTokenLifespan: number; defaultSignatureAlgorithm: string;
  components: Record<string, { providerId: string; config: Record<string, string[]> }[]>;
  clients: Client[]; users?: { credentials?: unknown[] }[];
}
interface User { id: string; username: string; email: string; firstName: string; lastName: string }

const realm = JSON.parse(fs.readFileSync(path.join(REPOSITORY, 'deploy/keycloak/realm-export.json'), 'utf8')) as Realm;
const client = realm.clients.find((candidate) => candidate.clientId === 'api-access')!;

/** The claims the service reads from an access token (src/http/token-verifier.ts, authentication.ts). */
const SERVICE_CLAIMS = ['iss', 'sub', 'azp', 'aud', 'exp', 'iat', 'email', 'preferred_username', 'given_name', 'family_name'];

/**
 * The access token Keycloak issues to `user` through `client` when the client has no client scopes
 * (defaultClientScopes []): the claims Keycloak always sets, then the client's own mappers, in
 * order. Only the mapper types the realm uses are known; another one fails here, to be taught.
 */
function keycloakAccessToken(user: User, issuedAt: number, keycloakUrl: string): JWTPayload {
  const claims: JWTPayload = {
    exp: issuedAt + realm.accessTokenLifespan, iat: issuedAt, jti: randomUUID(),
    iss: `${keycloakUrl}/realms/${realm.realm}`, typ: 'Bearer', azp: client.clientId, sid: randomUUID(), scope: 'openid',
  };
  const audiences: string[] = [];
  for (const mapper of client.protocolMappers) {
    if (mapper.config['access.token.claim'] !== 'true') continue;
    switch (mapper.protocolMapper) {
      case 'oidc-sub-mapper':
        claims.sub = user.id;
        break;
      case 'oidc-audience-mapper':
        audiences.push(mapper.config['included.client.audience'] ?? mapper.config['included.custom.audience']!);
        break;
      case 'oidc-usermodel-property-mapper': {
        assert.equal(mapper.config['jsonType.label'], 'String', `${mapper.name}: only String claims are interpreted`);
        const value = user[mapper.config['user.attribute'] as keyof User];
        assert.ok(value !== undefined, `${mapper.name}: no user property ${mapper.config['user.attribute']}`);
        claims[mapper.config['claim.name']!] = value;
        break;
      }
      default:
        assert.fail(`${mapper.name}: mapper type ${mapper.protocolMapper} is not interpreted here`);
    }
  }
  // Keycloak writes a single audience as a string, several as an array.
  if (audiences.length > 0) claims.aud = audiences.length === 1 ? audiences[0] : audiences;
  return claims;
}

/** A claim's JSON kind; `aud` is a string or an array of strings, which the verifier takes alike. */
function kindOf(name: string, value: unknown): string {
  if (name === 'aud' && (typeof value === 'string' || (Array.isArray(value) && value.every((v) => typeof v === 'string')))) return 'audience';
  return Array.isArray(value) ? 'array' : typeof value;
}
const kinds = (claims: JWTPayload) => Object.fromEntries(SERVICE_CLAIMS.map((name) => [name, kindOf(name, claims[name])]));

const ada: User = { id: randomUUID(), username: 'ada', email: ADMIN_EMAIL, firstName: 'Ada', lastName: 'Lovelace' };

describe('the Keycloak realm deploy/keycloak/realm-export.json', () => {
  test('realm platform, RS256, a public client api-access for the portal (PKCE) and for scripts, no users', () => {
    assert.equal(realm.realm, 'platform');
    assert.equal(realm.enabled, true);
    assert.equal(realm.defaultSignatureAlgorithm, 'RS256');
    const rsa = realm.components['org.keycloak.keys.KeyProvider']!.find((key) => key.providerId === 'rsa-generated');
    assert.deepEqual(rsa?.config['algorithm'], ['RS256']);
    assert.equal(client.attributes['access.token.signed.response.alg'], 'RS256');
    assert.equal(client.publicClient, true);
    assert.equal(client.standardFlowEnabled, true);
    assert.equal(client.directAccessGrantsEnabled, true);
    assert.equal(client.implicitFlowEnabled, false);
    assert.equal(client.attributes['pkce.code.challenge.method'], 'S256');
    // Empty, not absent: absent would attach the realm's default scopes, whose mappers this test does not see.
    assert.deepEqual(client.defaultClientScopes, []);
    assert.deepEqual(client.optionalClientScopes, []);
    assert.equal((realm.users ?? []).filter((user) => (user.credentials ?? []).length > 0).length, 0);
  });

  test('its mappers give every claim the service reads, of the kinds the development identity provider gives', async () => {
    const now = Math.floor(Date.now() / 1000);
    const derived = keycloakAccessToken(ada, now, 'https://login.city.example');
    assert.deepEqual(
      { sub: derived.sub, aud: derived.aud, azp: derived.azp, email: derived.email, preferred_username: derived['preferred_username'], given_name: derived['given_name'], family_name: derived['family_name'] },
      { sub: ada.id, aud: 'api-access', azp: 'api-access', email: ada.email, preferred_username: 'ada', given_name: 'Ada', family_name: 'Lovelace' },
    );
    assert.equal(derived.exp! - derived.iat!, 300);

    const { url } = await testIdp();
    const response = await fetch(`${url}/realms/platform/protocol/openid-connect/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'password', client_id: 'api-access', username: 'ada.lovelace@example.com', password: 'dev' }),
    });
    assert.equal(response.status, 200);
    const development = decodeJwt(((await response.json()) as { access_token: string }).access_token);
    const expected = Object.fromEntries(SERVICE_CLAIMS.map((name) => [name, name === 'aud' ? 'audience' : ['exp', 'iat'].includes(name) ? 'number' : 'string']));
    assert.deepEqual(kinds(derived), expected);
    assert.deepEqual(kinds(development), expected);
  });

  describe('a token shaped as the realm issues it, against the service', () => {
    let keycloak: http.Server;
    let keycloakUrl: string;
    let t: TestApp;
    let sign: (claims: JWTPayload) => Promise<string>;

    before(async () => {
      // The realm's endpoints the service uses: discovery and the JWKS it names, on a loopback port.
      const { publicKey, privateKey } = await generateKeyPair('RS256');
      const kid = randomUUID();
      const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }] };
      keycloak = http.createServer((request, response) => {
        const issuer = `${keycloakUrl}/realms/platform`;
        const documents: Record<string, unknown> = {
          '/realms/platform/.well-known/openid-configuration': { issuer, jwks_uri: `${issuer}/protocol/openid-connect/certs` },
          '/realms/platform/protocol/openid-connect/certs': jwks,
        };
        const document = documents[request.url ?? ''];
        response.writeHead(document ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(document ?? {}));
      });
      await new Promise<void>((resolve) => keycloak.listen(0, '127.0.0.1', resolve));
      keycloakUrl = `http://127.0.0.1:${(keycloak.address() as AddressInfo).port}`;
      sign = (claims) => new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' }).sign(privateKey);
      t = await buildTestApp('pglite', { OIDC_ISSUER: `${keycloakUrl}/realms/platform`, OIDC_CLIENT_ID: 'api-access' });
    });
    after(async () => {
      await t?.close();
      keycloak?.closeAllConnections();
      await new Promise((resolve) => keycloak?.close(resolve));
    });

    const me = (token: string) => t.app.inject({ method: 'GET', url: '/v1/users/me', headers: { authorization: `Bearer ${token}` } });

    test('is accepted: the bootstrap administrator, found by email, with the names from the token', async () => {
      const response = await me(await sign(keycloakAccessToken(ada, Math.floor(Date.now() / 1000), keycloakUrl)));
      assert.equal(response.statusCode, 200, response.body);
      const body = response.json() as { email: string; assignments: { scopeType: string }[] };
      assert.equal(body.email, ADMIN_EMAIL);
      assert.ok(body.assignments.some((assignment) => assignment.scopeType === 'TENANT'));
    });

    test('is refused when issued to another client or by another realm', async () => {
      const claims = keycloakAccessToken(ada, Math.floor(Date.now() / 1000), keycloakUrl);
      const otherClient = await me(await sign({ ...claims, azp: 'portal', aud: 'portal' }));
      assert.equal(otherClient.statusCode, 401);
      assert.match(String(otherClient.headers['www-authenticate']), /token issued to another client/);
      const otherRealm = await me(await sign({ ...claims, iss: `${keycloakUrl}/realms/master` }));
      assert.equal(otherRealm.statusCode, 401);
      assert.match(String(otherRealm.headers['www-authenticate']), /wrong issuer/);
    });
  });
});
