import { createHash } from 'node:crypto';
import fp from 'fastify-plugin';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Database } from '../db/client.js';
import { loadCaller, type Caller } from '../access/caller.js';
import type { CallerCache } from '../access/caller-cache.js';
import { TokenRejectedError, type TokenVerifier, type VerifiedToken } from './token-verifier.js';
import { AppError } from '../errors.js';
import { UUID_PATTERN } from './page.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on every /v1 request that passed the token check. */
    caller: Caller | null;
  }
}

const UUID = new RegExp(`^${UUID_PATTERN}$`);

/** Whether a request URL is under /v1, judged on the decoded path as the router sees it (`/%761/x` is `/v1/x`). */
export function isApiPath(url: string): boolean {
  const rawPath = url.split('?')[0] ?? '';
  let path = rawPath;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    // Not decodable: the router will not match it either; judge the raw text.
  }
  return path === '/v1' || path.startsWith('/v1/');
}

/**
 * Why a request carries no usable token, as RFC 6750 §3 puts it in WWW-Authenticate: no error
 * for a request without credentials, invalid_request for a malformed header, invalid_token with
 * the verifier's short reason otherwise. Reasons name what failed, never anything from the token.
 */
type Rejection = { error?: 'invalid_request' | 'invalid_token'; description?: string };

function challengeOf({ error, description }: Rejection): string {
  // error_description admits printable ASCII but `"` and `\` (RFC 6750 §3).
  const safe = description?.replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, '').slice(0, 100);
  return ['Bearer realm="api"', error && `error="${error}"`, safe && `error_description="${safe}"`].filter(Boolean).join(', ');
}

/** The gateway's answer to a rejected token: an HTML page, not a problem object. */
export function rejectToken(reply: FastifyReply, rejection: Rejection) {
  reply.log.info({ reason: rejection.description ?? 'no token' }, 'token rejected');
  return reply
    .code(401)
    .header('www-authenticate', challengeOf(rejection))
    .type('text/html; charset=utf-8')
    .send('<!DOCTYPE html>\n<html><head><title>401 Unauthorized</title></head>' +
      '<body><h1>401 Unauthorized</h1><p>A valid bearer token is required.</p></body></html>\n');
}

/** The operator's clue: which of the identity provider's URLs failed, and how (the client only hears "unavailable"). */
function logUnavailableProvider(request: FastifyRequest, error: TokenRejectedError) {
  const cause = error.cause as { message?: string; cause?: { code?: string; message?: string } } | undefined;
  const how = cause?.cause?.code ?? cause?.cause?.message ?? cause?.message ?? 'failed';
  request.log.warn({ url: error.failedUrl }, `identity provider unavailable: ${error.failedUrl} (${how})`);
}

/** X-Allowed-Scope-Ids: absent or `*` means no restriction; otherwise a comma-separated list of UUIDs. */
export function parseAllowedScopeIds(header: string | string[] | undefined): Set<string> | null {
  const value = (Array.isArray(header) ? header.join(',') : header ?? '').trim();
  if (value === '' || value === '*') return null;
  const ids = value.split(',').map((id) => id.trim().toLowerCase()).filter(Boolean);
  const bad = ids.find((id) => !UUID.test(id) && id !== '*');
  if (bad !== undefined) {
    throw new AppError('VALIDATION_FAILED', `X-Allowed-Scope-Ids: "${bad}" is not a UUID`, {
      fieldErrors: [{ field: 'X-Allowed-Scope-Ids', message: 'must be * or a comma-separated list of UUIDs' }],
    });
  }
  return ids.includes('*') ? null : new Set(ids);
}

/**
 * Set on every /v1 answer to a valid token that names no user of the service (neither by `sub` nor
 * by email): such a caller holds no permission, so lists come back empty and reads 404. A header,
 * not a body member, so that no client parsing the contract's shapes trips on it.
 */
export const CALLER_UNKNOWN_HEADER = 'x-caller-unknown';
export const CALLER_UNKNOWN_HINT = 'no user of this service matches the token (by sub or email); it holds no permission until an administrator creates one (POST /v1/users)';

export interface AuthenticationOptions {
  verifier: TokenVerifier;
  db: Database;
  /**
   * Requests that may come without a token (the data API's payload routes, readable anonymously
   * when open data): they pass with `caller` null and the route decides. A token that is sent is
   * checked all the same.
   */
  mayBeAnonymous?: (request: FastifyRequest) => boolean;
  /** Where callers are looked up instead of loading their grants on every request (the data API). */
  callers?: CallerCache;
}

/** Checks the bearer token of every /v1 request and loads the caller it names. */
export const authentication = fp<AuthenticationOptions>(async (app, { verifier, db, mayBeAnonymous, callers }) => {
  app.decorateRequest('caller', null);
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (!isApiPath(request.url)) return;
    const header = request.headers.authorization;
    if (header === undefined || header === '') {
      if (mayBeAnonymous?.(request)) return;
      return rejectToken(reply, {});
    }
    const match = /^Bearer +([A-Za-z0-9._~+/=-]+)$/i.exec(header);
    if (!match) return rejectToken(reply, { error: 'invalid_request', description: 'malformed Authorization header' });
    let token;
    try {
      token = await verifier.verify(match[1]!);
    } catch (error) {
      if (error instanceof TokenRejectedError) {
        if (error.failedUrl) logUnavailableProvider(request, error);
        return rejectToken(reply, { error: 'invalid_token', description: error.reason });
      }
      throw error;
    }
    const allowed = parseAllowedScopeIds(request.headers['x-allowed-scope-ids']);
    request.caller = callers ? await callers.load(identityOf(token), allowed) : await loadCaller(db, identityOf(token), allowed);
    // Authenticated but no user of the service: every answer would look like an empty tenant. Say why.
    if (request.caller.profile === null) reply.header(CALLER_UNKNOWN_HEADER, CALLER_UNKNOWN_HINT);
  });
}, { name: 'authentication' });

/**
 * The identity a verified token claims, as far as the database can hold it. PostgreSQL text
 * cannot hold U+0000: a claim carrying it is treated as absent, so the caller is authenticated
 * without permissions rather than every request failing with a 500.
 */
export function identityOf(token: VerifiedToken) {
  const usableSubject = storable(token.subject);
  return {
    // The subject scopes idempotency keys, so it must stay distinct per token subject: an unusable
    // one is replaced by its digest. The contract matches a caller by `sub` before `email`, so a
    // token whose `sub` is unusable names nobody reliably and its email is not used either.
    subject: usableSubject ?? `unusable-sub:${createHash('sha256').update(token.subject).digest('hex')}`,
    email: usableSubject === null ? null : storable(token.email),
    username: storable(claim(token.claims, 'preferred_username')),
    givenName: storable(claim(token.claims, 'given_name')),
    familyName: storable(claim(token.claims, 'family_name')),
  };
}

const storable = (text: string | null) => (text === null || text.includes('\u0000') ? null : text);

const claim = (claims: Record<string, unknown>, name: string) => (typeof claims[name] === 'string' ? (claims[name] as string) : null);

/** The caller of a route under /v1; the authentication hook guarantees it is there. */
export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw new AppError('UNAUTHORIZED', 'Authentication required');
  return request.caller;
}
