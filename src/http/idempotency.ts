import { createHash } from 'node:crypto';
import fp from 'fastify-plugin';
import type { FastifyBaseLogger } from 'fastify';
import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';

const KEY_LIFETIME = '24 hours';
const REPLAYED_HEADERS = ['content-type', 'location', 'etag'];
// Status 0 marks a key whose first request is still running.
const IN_PROGRESS = 0;
// The placeholder's lease: renewed while the request runs, so that only a placeholder whose process
// died (kill -9, a crash) runs out, and a retry then takes the key over within seconds.
const LEASE_SECONDS = 5;
const LEASE_RENEWAL_MS = 2_000;

declare module 'fastify' {
  interface FastifyRequest { idempotencyKey?: string; idempotencyLease?: NodeJS.Timeout }
}

const leaseEnd = sql<Date>`now() + ${`${LEASE_SECONDS} seconds`}::interval`;

/**
 * On PGlite one process owns the database, so at start every placeholder belongs to a process that
 * is gone: they are cleared at once rather than waiting for their leases.
 */
export async function clearIdempotencyPlaceholders(db: Database): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('status', '=', IN_PROGRESS).execute();
}

/**
 * Idempotency-Key on POST: the first answer (2xx) is kept for a day per caller and key; a retry
 * with the same key and body replays it, the same key with another body answers 409. A placeholder
 * row taken before the handler runs makes a concurrent duplicate answer 409 (retry later) instead
 * of creating twice; a placeholder whose lease ran out (its process died) no longer blocks the key.
 */
export const idempotency = fp<{ db: Database }>(async (app, { db }) => {
  app.addHook('preHandler', async (request, reply) => {
    const key = request.headers['idempotency-key'];
    if (request.method !== 'POST' || typeof key !== 'string' || !request.caller) return;
    if (key.length === 0 || key.length > 255) {
      throw new AppError('VALIDATION_FAILED', 'Idempotency-Key must be 1 to 255 characters', { fieldErrors: [{ field: 'Idempotency-Key', message: 'must be 1 to 255 characters' }] });
    }
    const caller = request.caller.subject;
    const requestHash = createHash('sha256').update(`${request.method} ${request.url}\n${JSON.stringify(request.body ?? null)}`).digest('hex');

    // Expired records go (everyone's, so the table stays bounded), and so does this key's
    // placeholder when the request that took it never finished.
    await db.deleteFrom('idempotency_keys')
      .where((eb) => eb.or([
        eb('created_at', '<', sql<Date>`now() - ${KEY_LIFETIME}::interval`),
        eb.and([eb('caller', '=', caller), eb('key', '=', key), eb('status', '=', IN_PROGRESS), eb('lease_expires_at', '<', sql<Date>`now()`)]),
      ]))
      .execute();
    const claimed = await db
      .insertInto('idempotency_keys')
      .values({ caller, key, request_hash: requestHash, status: IN_PROGRESS, headers: '{}', body: '', lease_expires_at: leaseEnd })
      .onConflict((oc) => oc.columns(['caller', 'key']).doNothing())
      .returning('key')
      .executeTakeFirst();
    if (claimed) {
      request.idempotencyKey = key;
      request.idempotencyLease = renewLease(db, caller, key, request.log);
      // The answer sent, or the connection gone without one: either way this request is over.
      reply.raw.once('close', () => clearInterval(request.idempotencyLease));
      return;
    }
    const first = await db.selectFrom('idempotency_keys').selectAll().where('caller', '=', caller).where('key', '=', key).executeTakeFirst();
    if (!first) return; // expired and purged between the two statements: run as a new request
    if (first.request_hash !== requestHash) {
      throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used for a different request');
    }
    if (first.status === IN_PROGRESS) {
      const leaseLeftMs = first.lease_expires_at ? new Date(first.lease_expires_at).getTime() - Date.now() : 0;
      reply.header('retry-after', String(Math.max(1, Math.ceil(leaseLeftMs / 1000))));
      throw new AppError('IDEMPOTENCY_KEY_REUSED', 'A request with this Idempotency-Key is still being processed; retry later');
    }
    const headers = typeof first.headers === 'string' ? JSON.parse(first.headers) : first.headers;
    return reply.code(first.status).headers({ ...headers, 'idempotent-replayed': 'true' }).send(first.body);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const key = request.idempotencyKey;
    if (!key || !request.caller) return payload;
    request.idempotencyKey = undefined;
    clearInterval(request.idempotencyLease);
    const where = db.deleteFrom('idempotency_keys').where('caller', '=', request.caller.subject).where('key', '=', key);
    if (reply.statusCode < 200 || reply.statusCode >= 300 || typeof payload !== 'string') {
      await where.execute(); // a failed attempt may be retried with the same key
      return payload;
    }
    const headers: Record<string, string> = {};
    for (const name of REPLAYED_HEADERS) {
      const value = reply.getHeader(name);
      if (value !== undefined) headers[name] = String(value);
    }
    await db.updateTable('idempotency_keys')
      .set({ status: reply.statusCode, headers: JSON.stringify(headers), body: payload, lease_expires_at: null })
      .where('caller', '=', request.caller.subject).where('key', '=', key)
      .execute();
    return payload;
  });
}, { name: 'idempotency', dependencies: ['authentication'] });

/** Keeps the placeholder's lease alive while its request runs; a renewal that fails is retried at the next tick. */
function renewLease(db: Database, caller: string, key: string, log: FastifyBaseLogger): NodeJS.Timeout {
  const timer = setInterval(() => {
    db.updateTable('idempotency_keys').set({ lease_expires_at: leaseEnd })
      .where('caller', '=', caller).where('key', '=', key).where('status', '=', IN_PROGRESS)
      .execute()
      .catch((err: unknown) => log.warn({ err }, 'idempotency lease not renewed'));
  }, LEASE_RENEWAL_MS);
  timer.unref();
  return timer;
}
