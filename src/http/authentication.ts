import fp from 'fastify-plugin';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../access/caller.js';
import type { CallerCache } from '../access/caller-cache.js';
import { digestOfPresented, identityOf, isPersonalAccessToken } from '../access/credentials.js';
import { TokenRejectedError, type TokenVerifier } from './token-verifier.js';
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
  /**
   * Requests that may come without a token (the data API's payload routes, readable anonymously
   * when open data): they pass with `caller` null and the route decides. A token that is sent is
   * checked all the same.
   */
  mayBeAnonymous?: (request: FastifyRequest) => boolean;
  /** Where callers are looked up: their grants are loaded again only after an access change. */
  callers: CallerCache;
  /**
   * Personal access tokens are accepted, as `Bearer pat_…` or as the password of HTTP Basic (any
   * user name): the data API. Without it (the management API) a personal access token answers 401.
   */
  acceptPersonalAccessTokens?: boolean;
}

/** What an Authorization header presents, as far as its syntax goes. */
type Presented = { scheme: 'bearer' | 'basic'; secret: string } | { malformed: true };

/** Basic credentials are `user:password` in base64; the header is bounded by the HTTP parser. */
function presentedBy(header: string, acceptBasic: boolean): Presented {
  const bearer = /^Bearer +([A-Za-z0-9._~+/=-]+)$/i.exec(header);
  if (bearer) return { scheme: 'bearer', secret: bearer[1]! };
  const basic = acceptBasic ? /^Basic +([A-Za-z0-9+/]+={0,2})$/i.exec(header) : null;
  if (!basic) return { malformed: true };
  const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? { malformed: true } : { scheme: 'basic', secret: decoded.slice(colon + 1) };
}

const PAT_REFUSED = 'invalid or expired personal access token';

/** Checks the bearer token of every /v1 request and loads the caller it names. */
export const authentication = fp<AuthenticationOptions>(async (app, { verifier, callers, mayBeAnonymous, acceptPersonalAccessTokens = false }) => {
  app.decorateRequest('caller', null);
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (!isApiPath(request.url)) return;
    const header = request.headers.authorization;
    if (header === undefined || header === '') {
      if (mayBeAnonymous?.(request)) return;
      return rejectToken(reply, {});
    }
    const presented = presentedBy(header, acceptPersonalAccessTokens);
    if ('malformed' in presented) return rejectToken(reply, { error: 'invalid_request', description: 'malformed Authorization header' });
    const allowed = parseAllowedScopeIds(request.headers['x-allowed-scope-ids']);
    if (presented.scheme === 'basic' || isPersonalAccessToken(presented.secret)) {
      if (!acceptPersonalAccessTokens) return rejectToken(reply, { error: 'invalid_token', description: 'personal access tokens are accepted on the data API only' });
      const digest = digestOfPresented(presented.secret);
      const caller = digest === null ? null : await callers.personalAccessToken(digest);
      if (!caller) return rejectToken(reply, { error: 'invalid_token', description: PAT_REFUSED });
      request.caller = allowed ? { ...caller, grants: caller.grants.filter((grant) => allowed.has(grant.scopeId)) } : caller;
      return;
    }
    let token;
    try {
      token = await verifier.verify(presented.secret);
    } catch (error) {
      if (error instanceof TokenRejectedError) {
        if (error.failedUrl) logUnavailableProvider(request, error);
        return rejectToken(reply, { error: 'invalid_token', description: error.reason });
      }
      throw error;
    }
    request.caller = await callers.load(identityOf(token), allowed);
    // Authenticated but no user of the service: every answer would look like an empty tenant. Say why.
    if (request.caller.profile === null) reply.header(CALLER_UNKNOWN_HEADER, CALLER_UNKNOWN_HINT);
  });
}, { name: 'authentication' });

/** The caller of a route under /v1; the authentication hook guarantees it is there. */
export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw new AppError('UNAUTHORIZED', 'Authentication required');
  return request.caller;
}
