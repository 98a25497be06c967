import type { Database } from '../../db/client.js';
import type { AuditEventType } from '../../db/schema.js';
import { pageOf, parseSort } from '../../http/page.js';
import type { Actor } from './actor.js';
import { AUDIT_SORT_COLUMNS, findEventPage, insertEvents, loadEvents } from './audit.repo.js';
import type { AuditEvent, AuditEventListQuery } from './audit.schemas.js';

/** One change, as the service that makes it describes it. `before`/`after`: null where the object did not exist. */
export interface AuditChange {
  type: AuditEventType;
  objectType: AuditEvent['objectType'];
  objectId: string;
  before: unknown;
  after: unknown;
}

/** JSON with object keys sorted: two states are the same change-wise whatever order their keys were built in. */
function canonical(value: unknown): string {
  return JSON.stringify(value ?? null, (_key, inner) => (inner && typeof inner === 'object' && !Array.isArray(inner)
    ? Object.fromEntries(Object.entries(inner as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    : inner));
}

/**
 * Writes the events of changes inside the transaction `trx` that makes them, so that the change and
 * its event commit or roll back together. A "change" whose before and after are equal changed
 * nothing and is not recorded.
 */
export async function recordEvents(trx: Database, actor: Actor, changes: readonly AuditChange[]): Promise<void> {
  const real = changes.filter((change) => canonical(change.before) !== canonical(change.after));
  await insertEvents(trx, real.map((change) => ({ ...change, actorId: actor.actorId, requestId: actor.requestId })));
}

export const recordEvent = (trx: Database, actor: Actor, change: AuditChange) => recordEvents(trx, actor, [change]);

export async function listAuditEvents(db: Database, query: AuditEventListQuery) {
  const request = {
    page: query.page, size: query.size,
    sort: parseSort(query.sort, Object.keys(AUDIT_SORT_COLUMNS), { property: 'occurredAt', direction: 'desc' }),
  };
  const { ids, total } = await findEventPage(db, query, request);
  return pageOf(await loadEvents(db, ids), total, request);
}
