import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { buildIdpApp } from '../../src/idp/idp.app.js';
import { getRealmKey } from '../../src/idp/realm-keys.js';
import { subjectForEmail } from '../../src/idp/subject.js';

const IDP_URL = 'http://idp.test:8090';
const PASSWORD = 'dev';
const TTL = 300;
const TOKEN_PATH = '/realms/platform/protocol/openid-connect/token';

let app: FastifyInstance;

before(async () => {
  app = await buildIdpApp({ idpUrl: IDP_URL, password: PASSWORD, tokenTtlSeconds: TTL });
});
after(() => app.close());

function requestToken(form: Record<string, string>, path = TOKEN_PATH) {
  return app.inject({
    method: 'POST',
    url: path,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(form).toString(),
  });
}

async function certs(realm: string): Promise<JSONWebKeySet> {
  const response = await app.inject({ method: 'GET', url: `/realms/${realm}/protocol/openid-connect/certs` });
  assert.equal(response.statusCode, 200);
  return response.json();
}

async function verify(accessToken: string, realm = 'platform') {
  return jwtVerify(accessToken, createLocalJWKSet(await certs(realm)), {
    issuer: `${IDP_URL}/realms/${realm}`,
    algorithms: ['RS256'],
  });
}

describe('discovery', () => {
  it('builds every URL from the configured IdP URL, whatever the Host header', async () => {
    const response = await app.inject({
      method: 'GET',
      url: '/realms/platform/.well-known/openid-configuration',
      headers: { host: 'elsewhere.example:1234' },
    });
    assert.equal(response.statusCode, 200);
    const document = response.json();
    assert.equal(document.issuer, `${IDP_URL}/realms/platform`);
    assert.equal(document.token_endpoint, `${IDP_URL}/realms/platform/protocol/openid-connect/token`);
    assert.equal(document.jwks_uri, `${IDP_URL}/realms/platform/protocol/openid-connect/certs`);
    assert.deepEqual(document.grant_types_supported, ['password', 'client_credentials']);
    assert.deepEqual(document.id_token_signing_alg_values_supported, ['RS256']);
  });
});

describe('certs', () => {
  it('publishes one RS256 signing key per realm, a different one for each realm', async () => {
    const platform = await certs('platform');
    const other = await certs('other-realm');
    assert.equal(platform.keys.length, 1);
    assert.equal(other.keys.length, 1);
    const [platformKey] = platform.keys;
    assert.equal(platformKey?.kty, 'RSA');
    assert.equal(platformKey?.alg, 'RS256');
    assert.equal(platformKey?.use, 'sig');
    assert.equal(platformKey?.d, undefined, 'no private material in the JWKS');
    assert.notEqual(platformKey?.kid, other.keys[0]?.kid);
    assert.deepEqual(await certs('platform'), platform, 'the key is stable across requests');
  });

  it('generates a single key when a realm is first asked for concurrently', async () => {
    const [first, second] = await Promise.all([getRealmKey('concurrent'), getRealmKey('concurrent')]);
    assert.equal(first.kid, second.kid);
  });
});

describe('password grant', () => {
  it('issues a verifiable token with the expected claims', async () => {
    const response = await requestToken({
      grant_type: 'password',
      client_id: 'api-access',
      username: 'Jane.Doe@Example.com',
      password: PASSWORD,
    });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['cache-control'], 'no-store');
    const body = response.json();
    assert.equal(body.token_type, 'Bearer');
    assert.equal(body.expires_in, TTL);

    const { payload, protectedHeader } = await verify(body.access_token);
    assert.equal(protectedHeader.typ, 'JWT');
    assert.equal(protectedHeader.kid, (await certs('platform')).keys[0]?.kid);
    assert.equal(payload.azp, 'api-access');
    assert.deepEqual(payload.aud, ['api-access', 'account']);
    assert.equal(payload.email, 'jane.doe@example.com');
    assert.equal(payload.email_verified, true);
    assert.equal(payload.preferred_username, 'jane.doe@example.com');
    assert.equal(payload.given_name, 'Jane');
    assert.equal(payload.family_name, 'Doe');
    assert.equal(payload.sub, subjectForEmail('jane.doe@example.com'));
    assert.match(payload.sub ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal((payload.exp ?? 0) - (payload.iat ?? 0), TTL);
    assert.equal(typeof payload.jti, 'string');
  });

  it('gives the same email the same subject every time', async () => {
    const form = { grant_type: 'password', client_id: 'api-access', username: 'admin@example.com', password: PASSWORD };
    const first = await verify((await requestToken(form)).json().access_token);
    const second = await verify((await requestToken(form)).json().access_token);
    assert.equal(first.payload.sub, second.payload.sub);
    assert.notEqual(first.payload.jti, second.payload.jti);
    assert.equal(first.payload.given_name, 'Admin');
  });

  it('signs with the key of the realm asked for', async () => {
    const response = await requestToken(
      { grant_type: 'password', client_id: 'web', username: 'a@b.c', password: PASSWORD },
      '/realms/other-realm/protocol/openid-connect/token',
    );
    assert.equal(response.statusCode, 200);
    const { access_token } = response.json();
    assert.equal(decodeProtectedHeader(access_token).kid, (await certs('other-realm')).keys[0]?.kid);
    await verify(access_token, 'other-realm');
    // Its key is not among the platform realm's: no key of that JWKS matches it.
    await assert.rejects(verify(access_token, 'platform'), { code: 'ERR_JWKS_NO_MATCHING_KEY' });
  });

  it('refuses a wrong password with 401 invalid_grant', async () => {
    const response = await requestToken({
      grant_type: 'password',
      client_id: 'api-access',
      username: 'jane.doe@example.com',
      password: 'wrong',
    });
    assert.equal(response.statusCode, 401);
    assert.deepEqual(response.json(), { error: 'invalid_grant', error_description: 'Invalid user credentials' });
  });

  it('refuses a missing username with 400 invalid_request', async () => {
    const response = await requestToken({ grant_type: 'password', client_id: 'api-access', password: PASSWORD });
    assert.equal(response.statusCode, 400);
    assert.equal(response.json().error, 'invalid_request');
  });

  it('refuses a username that is not an email with 400 invalid_request', async () => {
    const response = await requestToken({
      grant_type: 'password',
      client_id: 'api-access',
      username: 'jane',
      password: PASSWORD,
    });
    assert.equal(response.statusCode, 400);
    assert.equal(response.json().error, 'invalid_request');
  });
});

describe('client_credentials grant', () => {
  it('issues a service-account token', async () => {
    const response = await requestToken({
      grant_type: 'client_credentials',
      client_id: 'api-access',
      client_secret: PASSWORD,
    });
    assert.equal(response.statusCode, 200);
    const { payload } = await verify(response.json().access_token);
    assert.equal(payload.azp, 'api-access');
    assert.equal(payload.preferred_username, 'service-account-api-access');
    assert.equal(payload.email, undefined);
    assert.match(payload.sub ?? '', /^[0-9a-f-]{36}$/);
  });

  it('accepts the client credentials in an Authorization: Basic header', async () => {
    const response = await app.inject({
      method: 'POST',
      url: TOKEN_PATH,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`api-access:${PASSWORD}`).toString('base64')}`,
      },
      payload: 'grant_type=client_credentials',
    });
    assert.equal(response.statusCode, 200);
  });

  it('refuses a wrong secret with 401', async () => {
    const response = await requestToken({
      grant_type: 'client_credentials',
      client_id: 'api-access',
      client_secret: 'wrong',
    });
    assert.equal(response.statusCode, 401);
    assert.ok(['invalid_grant', 'unauthorized_client'].includes(response.json().error));
  });
});

describe('malformed requests', () => {
  it('refuses an unknown grant_type with 400 unsupported_grant_type', async () => {
    const response = await requestToken({ grant_type: 'authorization_code', client_id: 'api-access' });
    assert.equal(response.statusCode, 400);
    assert.equal(response.json().error, 'unsupported_grant_type');
  });

  it('refuses a request without grant_type or body with 400', async () => {
    const response = await app.inject({ method: 'POST', url: TOKEN_PATH });
    assert.equal(response.statusCode, 400);
    assert.deepEqual(response.json(), {
      error: 'invalid_request',
      error_description: 'Missing form parameter: grant_type',
    });
  });

  it('refuses a JSON body instead of guessing at it', async () => {
    const response = await app.inject({
      method: 'POST',
      url: TOKEN_PATH,
      payload: { grant_type: 'password', client_id: 'api-access', username: 'a@b.c', password: PASSWORD },
    });
    assert.equal(response.statusCode, 415, response.body);
    assert.equal(response.json().error, 'invalid_request');
  });

  it('answers 404 JSON on unknown paths and invalid realm names', async () => {
    for (const url of ['/', '/realms/platform/unknown', '/realms/bad%20name/protocol/openid-connect/certs']) {
      const response = await app.inject({ method: 'GET', url });
      assert.equal(response.statusCode, 404, url);
      assert.deepEqual(response.json(), { error: 'not_found' });
    }
  });
});

describe('realm bound', () => {
  it('invented realm names stop getting keys once 64 realms exist; known realms keep working', async () => {
    let refused: string | null = null;
    for (let i = 0; i < 70 && refused === null; i++) {
      const realm = `invented-${i}`;
      const response = await app.inject({ method: 'GET', url: `/realms/${realm}/protocol/openid-connect/certs` });
      if (response.statusCode === 404) refused = realm;
      else assert.equal(response.statusCode, 200);
    }
    assert.ok(refused !== null, 'a new realm is refused once the bound is reached');
    const known = await app.inject({ method: 'GET', url: '/realms/invented-0/protocol/openid-connect/certs' });
    assert.equal(known.statusCode, 200);
  });
});
