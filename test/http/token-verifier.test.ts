import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { base64url, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import {
  createTokenVerifier,
  TokenRejectedError,
  type TokenVerifierOptions,
} from '../../src/http/token-verifier.js';

const CLIENT = 'api-access';
const realmKey = await generateKeyPair('RS256');
const rotatedKey = await generateKeyPair('RS256');
const strangerKey = await generateKeyPair('RS256');

const now = () => Math.floor(Date.now() / 1000);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A fresh identity provider per test: discovery document + JWKS on a real socket, with counters. */
async function startIdp(t: TestContext) {
  const keys: JWK[] = [{ ...(await exportJWK(realmKey.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }];
  const state = { keys, jwksFetches: 0, discoveryFetches: 0, discoveryStatus: 200 };
  const server = createServer((req, res) => {
    if (req.url === '/realms/platform/.well-known/openid-configuration') {
      state.discoveryFetches++;
      res.writeHead(state.discoveryStatus, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/protocol/openid-connect/certs` }));
    } else if (req.url === '/realms/platform/protocol/openid-connect/certs') {
      state.jwksFetches++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: state.keys }));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const issuer = `${base}/realms/platform`;
  t.after(() => {
    server.closeAllConnections(); // fetch keeps connections alive
    server.close();
  });

  /** A token as the development IdP issues it; `claims` overrides (undefined removes a claim). */
  async function sign(
    claims: Record<string, unknown> = {},
    { key = realmKey.privateKey, kid = 'k1' }: { key?: CryptoKey; kid?: string } = {},
  ): Promise<string> {
    const payload: JWTPayload = {
      iss: issuer,
      sub: '5f0c7d4e-1111-4a2b-8c3d-000000000001',
      azp: CLIENT,
      aud: 'account',
      email: 'alice@example.com',
      iat: now(),
      exp: now() + 300,
      ...claims,
    };
    for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
    return new SignJWT(payload).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid }).sign(key);
  }

  const verifier = (opts: Partial<TokenVerifierOptions> = {}) => createTokenVerifier({ issuer, clientId: CLIENT, ...opts });
  return { state, issuer, base, sign, verifier };
}

async function assertRejected(promise: Promise<unknown>, reason?: RegExp): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof TokenRejectedError, `expected TokenRejectedError, got ${String(err)}`);
    if (reason) assert.match(err.reason, reason);
    assert.ok(err.reason.length < 60, 'reasons stay short');
    return true;
  });
}

test('a valid token is accepted', async (t) => {
  const idp = await startIdp(t);
  const exp = now() + 300;
  const result = await idp.verifier().verify(await idp.sign({ exp }));
  assert.equal(result.subject, '5f0c7d4e-1111-4a2b-8c3d-000000000001');
  assert.equal(result.email, 'alice@example.com');
  assert.equal(result.expiresAt, exp);
  assert.equal(result.claims.azp, CLIENT);
  assert.equal(idp.state.discoveryFetches, 1);
  assert.equal(idp.state.jwksFetches, 1);
});

test('with OIDC_JWKS_URL the keys come from there, without a discovery; a failure there names that URL', async (t) => {
  const idp = await startIdp(t);
  // The issuer (the exact `iss`) is a public address the process cannot reach; the keys are served in-cluster.
  const issuer = 'https://login.city.example/realms/platform';
  const verifier = idp.verifier({ issuer, jwksUrl: `${idp.base}/realms/platform/protocol/openid-connect/certs` });
  const result = await verifier.verify(await idp.sign({ iss: issuer }));
  assert.equal(result.subject, '5f0c7d4e-1111-4a2b-8c3d-000000000001');
  assert.deepEqual([idp.state.discoveryFetches, idp.state.jwksFetches], [0, 1]);

  const nowhere = `${idp.base}/no-keys-here`;
  await assert.rejects(idp.verifier({ issuer, jwksUrl: nowhere }).verify(await idp.sign({ iss: issuer })), (err: unknown) => {
    assert.ok(err instanceof TokenRejectedError);
    assert.equal(err.reason, 'identity provider unavailable');
    assert.equal(err.failedUrl, nowhere);
    return true;
  });
});

test('a token without email has email null', async (t) => {
  const idp = await startIdp(t);
  const result = await idp.verifier().verify(await idp.sign({ email: undefined }));
  assert.equal(result.email, null);
});

test('a repeated token is answered from the cache', async (t) => {
  const idp = await startIdp(t);
  const verifier = idp.verifier();
  const token = await idp.sign();
  const first = await verifier.verify(token);
  const second = await verifier.verify(token);
  assert.equal(second, first, 'the very same cached object');
  assert.equal(verifier.verifyCached(token), first);
  assert.equal(idp.state.jwksFetches, 1);
  assert.equal(idp.state.discoveryFetches, 1);
  assert.ok(Object.isFrozen(first) && Object.isFrozen(first.claims), 'shared results cannot be altered');
});

test('a cached token is not returned once it has expired', async (t) => {
  const idp = await startIdp(t);
  const verifier = idp.verifier();
  const token = await idp.sign({ exp: now() + 60 });
  await verifier.verify(token);
  // Move the wall clock past exp + leeway; lru-cache's own (monotonic) clock does not see
  // that, so only the re-check on a hit can notice the expiry.
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() + 91_000 });
  assert.equal(verifier.verifyCached(token), undefined);
  await assertRejected(verifier.verify(token), /expired/);
});

test('rejections are not cached', async (t) => {
  const idp = await startIdp(t);
  const verifier = idp.verifier();
  const token = await idp.sign({ azp: 'other-client' });
  await assertRejected(verifier.verify(token));
  assert.equal(verifier.verifyCached(token), undefined);
});

test('a token of another realm (issuer) is rejected', async (t) => {
  const idp = await startIdp(t);
  await assertRejected(idp.verifier().verify(await idp.sign({ iss: `${idp.base}/realms/other` })), /iss/);
  // Exact comparison: not even a trailing slash is tolerated.
  await assertRejected(idp.verifier().verify(await idp.sign({ iss: `${idp.issuer}/` })), /iss/);
});

test('a token issued to another client (azp) is rejected', async (t) => {
  const idp = await startIdp(t);
  await assertRejected(idp.verifier().verify(await idp.sign({ azp: 'other-client', aud: CLIENT })), /client/);
});

test('without azp, aud must contain the client', async (t) => {
  const idp = await startIdp(t);
  const verifier = idp.verifier();
  const accepted = await verifier.verify(await idp.sign({ azp: undefined, aud: ['account', CLIENT] }));
  assert.equal(accepted.subject, '5f0c7d4e-1111-4a2b-8c3d-000000000001');
  await verifier.verify(await idp.sign({ azp: undefined, aud: CLIENT }));
  await assertRejected(verifier.verify(await idp.sign({ azp: undefined, aud: ['account'] })), /client/);
  await assertRejected(verifier.verify(await idp.sign({ azp: undefined, aud: undefined })), /client/);
});

test('expiry honours a 30 s leeway', async (t) => {
  const idp = await startIdp(t);
  const verifier = idp.verifier();
  await assertRejected(verifier.verify(await idp.sign({ iat: now() - 400, exp: now() - 40 })), /expired/);
  const late = await verifier.verify(await idp.sign({ iat: now() - 400, exp: now() - 10 }));
  assert.ok(late.expiresAt < now());
});

test('a token without exp is rejected', async (t) => {
  const idp = await startIdp(t);
  await assertRejected(idp.verifier().verify(await idp.sign({ exp: undefined })), /exp/);
});

test('iat in the future beyond the leeway is rejected', async (t) => {
  const idp = await startIdp(t);
  const verifier = idp.verifier();
  await assertRejected(verifier.verify(await idp.sign({ iat: now() + 300, exp: now() + 600 })), /future/);
  await verifier.verify(await idp.sign({ iat: now() + 10 })); // within the leeway
});

test('nbf in the future is rejected', async (t) => {
  const idp = await startIdp(t);
  await assertRejected(idp.verifier().verify(await idp.sign({ nbf: now() + 300, exp: now() + 600 })), /not yet valid/);
});

test('an unsigned (alg none) token is rejected without a network call', async (t) => {
  const idp = await startIdp(t);
  const encode = (value: object) => base64url.encode(JSON.stringify(value));
  const header = encode({ alg: 'none', typ: 'JWT' });
  const payload = encode({ iss: idp.issuer, sub: 'x', azp: CLIENT, iat: now(), exp: now() + 300 });
  const verifier = idp.verifier();
  await assertRejected(verifier.verify(`${header}.${payload}.`));
  await assertRejected(verifier.verify(`${header}.${payload}.c2lnbmF0dXJl`), /algorithm/);
  assert.equal(idp.state.discoveryFetches + idp.state.jwksFetches, 0);
});

test('an HMAC (HS256) token is rejected', async (t) => {
  const idp = await startIdp(t);
  const token = await new SignJWT({ iss: idp.issuer, sub: 'x', azp: CLIENT, iat: now(), exp: now() + 300 })
    .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
    .sign(new TextEncoder().encode('a-shared-secret-of-at-least-32-bytes!'));
  await assertRejected(idp.verifier().verify(token), /algorithm/);
  assert.equal(idp.state.discoveryFetches + idp.state.jwksFetches, 0);
});

test('a token signed by an unknown key is rejected', async (t) => {
  const idp = await startIdp(t);
  const verifier = idp.verifier();
  await assertRejected(verifier.verify(await idp.sign({}, { key: strangerKey.privateKey, kid: 'stranger' })), /key/);
  // A known kid does not help a foreign key.
  await assertRejected(verifier.verify(await idp.sign({}, { key: strangerKey.privateKey, kid: 'k1' })), /signature/);
  // A tampered payload fails the signature check.
  const [h, , s] = (await idp.sign()).split('.');
  const forged = base64url.encode(JSON.stringify({ iss: idp.issuer, sub: 'admin', azp: CLIENT, exp: now() + 300 }));
  await assertRejected(verifier.verify(`${h}.${forged}.${s}`), /signature/);
});

test('key rotation: a new kid is accepted once the JWKS has it, after a refetch', async (t) => {
  const idp = await startIdp(t);
  const verifier = idp.verifier({ jwksCooldownMs: 200 });
  await verifier.verify(await idp.sign());
  assert.equal(idp.state.jwksFetches, 1);

  idp.state.keys.push({ ...(await exportJWK(rotatedKey.publicKey)), kid: 'k2', alg: 'RS256', use: 'sig' });
  const rotated = await idp.sign({}, { key: rotatedKey.privateKey, kid: 'k2' });
  await sleep(250); // past the cooldown
  const result = await verifier.verify(rotated);
  assert.equal(result.subject, '5f0c7d4e-1111-4a2b-8c3d-000000000001');
  assert.equal(idp.state.jwksFetches, 2);
  // The old key still works without another fetch.
  await verifier.verify(await idp.sign({ email: 'bob@example.com' }));
  assert.equal(idp.state.jwksFetches, 2);
});

test('unknown kids within the cooldown cause one refetch only', async (t) => {
  const idp = await startIdp(t);
  const verifier = idp.verifier({ jwksCooldownMs: 500 });
  await verifier.verify(await idp.sign());
  assert.equal(idp.state.jwksFetches, 1);
  const a = await idp.sign({}, { key: strangerKey.privateKey, kid: 'unknown-a' });
  const b = await idp.sign({}, { key: strangerKey.privateKey, kid: 'unknown-b' });

  await sleep(550);
  await assertRejected(verifier.verify(a), /key/);
  assert.equal(idp.state.jwksFetches, 2);
  await assertRejected(verifier.verify(b), /key/);
  await assertRejected(verifier.verify(a), /key/);
  assert.equal(idp.state.jwksFetches, 2);
});

test('a failed discovery rejects the token and is retried on a later call', async (t) => {
  const idp = await startIdp(t);
  const verifier = idp.verifier();
  const token = await idp.sign();
  idp.state.discoveryStatus = 503;
  await assertRejected(verifier.verify(token), /unavailable/);
  idp.state.discoveryStatus = 200;
  assert.equal((await verifier.verify(token)).email, 'alice@example.com');
  assert.equal(idp.state.discoveryFetches, 2);
});

test('garbage is rejected without a network call', async (t) => {
  const idp = await startIdp(t);
  const verifier = idp.verifier();
  const garbage = [
    '',
    'abc',
    'a.b',
    'a.b.c.d',
    '..',
    'a..c',
    'Bearer a.b.c',
    'a b.c.d',
    'eyJ!.eyJ.sig',
    'bm90IGpzb24.e30.c2ln', // header is not JSON
    `${base64url.encode('"RS256"')}.e30.c2ln`, // header is not an object
    `${base64url.encode('{"alg":"RS256"}')}.e30.${'A'.repeat(20_000)}`, // too long
  ];
  for (const token of garbage) await assertRejected(verifier.verify(token), /malformed/);
  await assertRejected(verifier.verify(undefined as unknown as string), /malformed/);
  assert.equal(idp.state.discoveryFetches + idp.state.jwksFetches, 0);
});

test('bad options fail at construction', () => {
  assert.throws(() => createTokenVerifier({ issuer: 'not a url', clientId: CLIENT }), TypeError);
  assert.throws(() => createTokenVerifier({ issuer: 'http://idp/realms/x', clientId: '' }), TypeError);
  assert.throws(() => createTokenVerifier({ issuer: 'http://idp/realms/x', clientId: CLIENT, leewaySeconds: -1 }), TypeError);
  assert.throws(() => createTokenVerifier({ issuer: 'http://idp/realms/x', clientId: CLIENT, cacheMaxEntries: 0 }), TypeError);
});
