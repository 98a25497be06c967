import {
  createRemoteJWKSet,
  decodeProtectedHeader,
  errors,
  jwtVerify,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import { LRUCache } from 'lru-cache';

/**
 * Bearer-token verification by the contract's "Token rules": signature against the
 * issuer's JWKS (RS256/ES256/PS256 only), exact `iss`, `azp` (or `aud`) naming our client,
 * `exp` in the future and `nbf`/`iat` not in the future, all with a leeway.
 */

export interface VerifiedToken {
  subject: string;
  email: string | null;
  /** `exp`, epoch seconds. */
  expiresAt: number;
  /** The whole verified payload; frozen, because cached results are shared between requests. */
  claims: JWTPayload;
}

/**
 * Any reason a token is not accepted. `reason` is short and safe to log and to tell the client (the
 * 401's error_description): it never holds key material, key ids or anything read from the token.
 */
export class TokenRejectedError extends Error {
  readonly reason: string;
  /** When the identity provider could not be asked: the URL that failed, for the operator's log (never the client's answer). */
  readonly failedUrl: string | undefined;
  constructor(reason: string, options?: ErrorOptions & { failedUrl?: string }) {
    super(`token rejected: ${reason}`, options);
    this.name = 'TokenRejectedError';
    this.reason = reason;
    this.failedUrl = options?.failedUrl;
  }
}

const IDP_UNAVAILABLE = 'identity provider unavailable';

export interface TokenVerifierOptions {
  /** OIDC_ISSUER, compared exactly with `iss`. */
  issuer: string;
  /** OIDC_CLIENT_ID, one client or several: `azp` must equal one; when `azp` is absent, `aud` must contain one. */
  clientId: string | readonly string[];
  /** Clock skew allowed on exp, nbf and iat. Default 30. */
  leewaySeconds?: number;
  /** Default 10_000. */
  cacheMaxEntries?: number;
  /** At most one JWKS refetch per this period on an unknown kid. Default 30_000. */
  jwksCooldownMs?: number;
  /** Timeout of the discovery and JWKS requests. Default 5_000. */
  fetchTimeoutMs?: number;
  /**
   * OIDC_JWKS_URL: where the signing keys are fetched, instead of the `jwks_uri` of the issuer's
   * discovery document (Keycloak's in-cluster address, when pods cannot reach its public one).
   */
  jwksUrl?: string | null;
}

export interface TokenVerifier {
  verify(token: string): Promise<VerifiedToken>;
}

/** What createTokenVerifier actually returns: adds the synchronous cache probe benchmarks use. */
export interface CachingTokenVerifier extends TokenVerifier {
  /** The cached result for this exact token if it is there and not expired; never verifies. */
  verifyCached(token: string): VerifiedToken | undefined;
}

// Asymmetric only: `none` and HS* are refused, so a public JWKS can never act as an HMAC secret.
const ALGORITHMS = ['RS256', 'ES256', 'PS256'];
// Keys are refetched at least this often even without an unknown kid, so a withdrawn key
// stops verifying; cached tokens are not trusted longer than that either.
const JWKS_MAX_AGE_MS = 10 * 60_000;
// Node's default limit on all request headers together is 16 KiB, so no real bearer token
// is longer; refusing early bounds the work (and cache key size) an attacker can cause.
const MAX_TOKEN_LENGTH = 16 * 1024;
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

export function createTokenVerifier(opts: TokenVerifierOptions): CachingTokenVerifier {
  const { issuer } = opts;
  const clientIds = new Set<unknown>(typeof opts.clientId === 'string' ? [opts.clientId] : opts.clientId);
  if (!issuer || !URL.canParse(issuer)) throw new TypeError('token verifier: issuer must be an absolute URL');
  if (clientIds.size === 0 || clientIds.has('')) throw new TypeError('token verifier: clientId is required');
  const leeway = option('leewaySeconds', opts.leewaySeconds, 30);
  const cooldownMs = option('jwksCooldownMs', opts.jwksCooldownMs, 30_000);
  const timeoutMs = option('fetchTimeoutMs', opts.fetchTimeoutMs, 5_000);
  const cache = new LRUCache<string, VerifiedToken>({ max: option('cacheMaxEntries', opts.cacheMaxEntries, 10_000, 1) });

  // OIDC Discovery appends the well-known path to the issuer without its trailing slash.
  const discoveryUrl = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  let jwks: JWTVerifyGetKey | undefined;
  let jwksUrl: string | undefined;
  let discovering: Promise<JWTVerifyGetKey> | undefined;

  /** The remote key set, discovering its location on first use. Concurrent callers share one
   * discovery; a failure is forgotten so that the next call tries again (the IdP may just be
   * starting). */
  function keySet(): JWTVerifyGetKey | Promise<JWTVerifyGetKey> {
    if (jwks) return jwks;
    discovering ??= discoverJwks().then(
      (set) => (jwks = set),
      (cause: unknown) => {
        discovering = undefined;
        throw new TokenRejectedError(IDP_UNAVAILABLE, { cause, failedUrl: discoveryUrl });
      },
    );
    return discovering;
  }

  async function discoverJwks(): Promise<JWTVerifyGetKey> {
    if (opts.jwksUrl) return remoteKeySet(new URL(opts.jwksUrl));
    const res = await fetch(discoveryUrl, {
      headers: { accept: 'application/json' },
      redirect: 'manual', // as jose does for the JWKS: the key location must come from the issuer itself
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (res.status !== 200) {
      await res.body?.cancel(); // release the connection
      throw new Error(`discovery document answered HTTP ${res.status}`);
    }
    const doc: unknown = await res.json();
    const uri = typeof doc === 'object' && doc !== null ? (doc as { jwks_uri?: unknown }).jwks_uri : undefined;
    if (typeof uri !== 'string' || !URL.canParse(uri)) throw new Error('discovery document has no valid jwks_uri');
    const url = new URL(uri);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('jwks_uri is not an http(s) URL');
    return remoteKeySet(url);
  }

  function remoteKeySet(url: URL): JWTVerifyGetKey {
    jwksUrl = url.href;
    // jose caches the keys, refetches on an unknown kid at most once per cooldown, and
    // shares one in-flight fetch between concurrent verifications.
    return createRemoteJWKSet(url, { cooldownDuration: cooldownMs, cacheMaxAge: JWKS_MAX_AGE_MS, timeoutDuration: timeoutMs });
  }

  function verifyCached(token: string): VerifiedToken | undefined {
    const hit = cache.get(token);
    if (hit === undefined) return undefined;
    // The entry's TTL already ends at expiry, but lru-cache's clock is coarse and monotonic
    // while `exp` is wall-clock; this comparison is cheap and makes expiry exact.
    if (hit.expiresAt + leeway <= nowSeconds()) {
      cache.delete(token);
      return undefined;
    }
    return hit;
  }

  async function verifyUncached(token: string): Promise<VerifiedToken> {
    // Cheap checks first, so garbage, `none` and HMAC tokens never cause a network call.
    if (typeof token !== 'string' || token.length > MAX_TOKEN_LENGTH || !COMPACT_JWS.test(token)) {
      throw new TokenRejectedError('malformed token');
    }
    let alg: unknown;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch {
      throw new TokenRejectedError('malformed token');
    }
    if (typeof alg !== 'string' || !ALGORITHMS.includes(alg)) throw new TokenRejectedError('algorithm not allowed');

    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, await keySet(), {
        algorithms: ALGORITHMS,
        issuer,
        clockTolerance: leeway,
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (err) {
      throw rejection(err, jwksUrl);
    }

    // jose has checked the signature, iss, nbf and exp (and that exp, iat and nbf are numbers).
    const now = nowSeconds();
    const { exp, iat, sub, azp, aud } = payload;
    if (typeof exp !== 'number' || !Number.isFinite(exp)) throw new TokenRejectedError('invalid exp claim');
    if (typeof iat === 'number' && iat > now + leeway) throw new TokenRejectedError('token issued in the future');
    if (typeof sub !== 'string' || sub === '') throw new TokenRejectedError('invalid sub claim');
    if (azp !== undefined) {
      if (!clientIds.has(azp)) throw new TokenRejectedError('token issued to another client');
    } else if (!(Array.isArray(aud) ? aud : [aud]).some((audience) => clientIds.has(audience))) {
      throw new TokenRejectedError('token not meant for this client');
    }

    const verified: VerifiedToken = deepFreeze({
      subject: sub,
      email: typeof payload.email === 'string' ? payload.email : null,
      expiresAt: exp,
      claims: payload,
    });
    const ttl = Math.min(Math.floor((exp + leeway) * 1000 - Date.now()), JWKS_MAX_AGE_MS);
    if (ttl >= 1) cache.set(token, verified, { ttl }); // ttl 0 would mean "forever" to lru-cache
    return verified;
  }

  return {
    verifyCached,
    // No await before the lookup: a repeated token costs one map lookup and no crypto.
    async verify(token) {
      return verifyCached(token) ?? verifyUncached(token);
    },
  };
}

/** Maps jose's errors onto short reasons; infrastructure failures keep their cause and the key set's URL for the log. */
function rejection(err: unknown, jwksUrl: string | undefined): TokenRejectedError {
  if (err instanceof TokenRejectedError) return err;
  // The key set could not be fetched: a timeout, a refused connection (fetch's TypeError), an answer other than 200 OK.
  if (err instanceof errors.JWKSTimeout || !(err instanceof errors.JOSEError) || /^Expected 200 OK|^Failed to parse the JSON Web Key Set/.test(err.message)) {
    return new TokenRejectedError(IDP_UNAVAILABLE, { cause: err, failedUrl: jwksUrl });
  }
  if (err instanceof errors.JWTExpired) return new TokenRejectedError('token expired');
  if (err instanceof errors.JWTClaimValidationFailed) return new TokenRejectedError(claimReason(err));
  if (err instanceof errors.JWSSignatureVerificationFailed) return new TokenRejectedError('invalid signature');
  if (err instanceof errors.JWKSNoMatchingKey) return new TokenRejectedError('unknown signing key');
  if (err instanceof errors.JWKSMultipleMatchingKeys) return new TokenRejectedError('ambiguous signing key');
  if (err instanceof errors.JOSEAlgNotAllowed) return new TokenRejectedError('algorithm not allowed');
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid) return new TokenRejectedError('malformed token');
  // A failed JWKS fetch, an unusable key in the set, ...
  return new TokenRejectedError('token could not be verified', { cause: err });
}

/** The claim at fault, by name only: the reason reaches the client, and claim values never do. */
function claimReason(err: errors.JWTClaimValidationFailed): string {
  if (err.claim === 'iss' && err.reason === 'check_failed') return 'wrong issuer';
  if (err.claim === 'nbf' && err.reason === 'check_failed') return 'token not yet valid';
  if (err.reason === 'missing') return `missing ${err.claim} claim`;
  return `invalid ${err.claim} claim`;
}

// Bad settings fail at start-up, not on the first request (jose would throw lazily).
function option(name: string, value: number | undefined, fallback: number, min = 0): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < min) throw new TypeError(`token verifier: ${name} must be an integer >= ${min}`);
  return value;
}

// Same rounding as jose, so the cache and jose agree on the second a token expires.
function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}
