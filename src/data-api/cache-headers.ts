import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { PayloadOperation } from './payload-access.js';

/**
 * Caching of payload answers, both standards alike (the contract's "OWS on the data API",
 * Caching): a read of an open-data dataset is the same for everyone and may be kept a minute by
 * any cache; every other answer (a dataset that is not open data, a write, an error) carries
 * `private, no-store`, so that no browser or proxy cache serves it to a later request without the
 * token. A public answer gets a weak validator (`ETag`, from its bytes) unless its server gave one,
 * and a GET whose `If-None-Match` names it answers 304 without a body.
 */
export const PUBLIC_CACHE = 'public, max-age=60';
export const PRIVATE_CACHE = 'private, no-store';

const decided = new WeakMap<FastifyRequest, string>();

/** The policy of an allowed payload request, decided once authorization knows the route. */
export function decideCaching(request: FastifyRequest, route: { openDataAccess: boolean }, operation: PayloadOperation): void {
  const read = operation === 'read' && (request.method === 'GET' || request.method === 'HEAD');
  decided.set(request, route.openDataAccess && read ? PUBLIC_CACHE : PRIVATE_CACHE);
}

/** Bodies larger than this are not hashed for a validator (the hash would hold the event loop too long). */
const MAX_HASHED_BYTES = 8 * 1024 * 1024;

export function installCacheHeaders(app: FastifyInstance): void {
  app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const policy = decided.get(request);
    if (!policy) return payload;
    // A 304 stands for the 200 the client holds: the same policy.
    const ok = (reply.statusCode >= 200 && reply.statusCode < 300) || reply.statusCode === 304;
    if (policy !== PUBLIC_CACHE || !ok) {
      reply.header('cache-control', PRIVATE_CACHE);
      return payload;
    }
    reply.header('cache-control', PUBLIC_CACHE);
    const bytes = typeof payload === 'string' ? Buffer.from(payload) : Buffer.isBuffer(payload) ? payload : null;
    if (reply.statusCode !== 200 || (!reply.hasHeader('etag') && (!bytes || bytes.length > MAX_HASHED_BYTES))) return payload;
    if (!reply.hasHeader('etag')) reply.header('etag', `W/"${createHash('sha256').update(bytes!).digest('base64url').slice(0, 32)}"`);
    const etag = String(reply.getHeader('etag'));
    if (matches(request.headers['if-none-match'], etag)) {
      reply.code(304);
      reply.removeHeader('content-length');
      return '';
    }
    return payload;
  });
}

/** Whether `If-None-Match` names the answer's validator (weak comparison, or `*`). */
function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  const bare = (tag: string) => tag.trim().replace(/^W\//, '');
  return header.split(',').some((tag) => tag.trim() === '*' || bare(tag) === bare(etag));
}
