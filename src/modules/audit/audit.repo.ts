import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import type { AuditEventType } from '../../db/schema.js';
import { fetchPageIds, inIdOrder, splitIds, type ListRequest } from '../../db/list-query.js';
import { iso } from '../../http/resource.js';
import type { AuditEvent, AuditEventListQuery } from './audit.schemas.js';

export const AUDIT_SORT_COLUMNS: Record<string, string> = { occurredAt: 'e.occurred_at', type: 'e.type' };

export interface EventRow {
  type: AuditEventType;
  actorId: string | null;
  requestId: string | null;
  objectType: AuditEvent['objectType'];
  objectId: string;
  before: unknown;
  after: unknown;
}

const json = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));

export async function insertEvents(db: Database, events: readonly EventRow[]): Promise<void> {
  if (events.length === 0) return;
  await db.insertInto('audit_events').values(events.map((event) => ({
    id: randomUUID(),
    type: event.type,
    actor_id: event.actorId,
    object_type: event.objectType,
    object_id: event.objectId,
    before: json(event.before),
    after: json(event.after),
    request_id: event.requestId,
  }))).execute();
}

// The pg driver parses jsonb; a driver handing back text is parsed here.
const parsed = (value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value ?? null);

export async function loadEvents(db: Database, ids: readonly string[]): Promise<AuditEvent[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('audit_events').selectAll().where('id', 'in', [...ids]).execute();
  return inIdOrder(ids, rows.map((row) => ({
    id: row.id,
    occurredAt: iso(row.occurred_at),
    type: row.type,
    actorId: row.actor_id,
    objectType: row.object_type as AuditEvent['objectType'],
    objectId: row.object_id,
    before: parsed(row.before),
    after: parsed(row.after),
    requestId: row.request_id,
  })));
}

export async function findEventPage(db: Database, query: AuditEventListQuery, request: ListRequest) {
  let qb = db.selectFrom('audit_events as e');
  const ids = splitIds(query.id);
  if (ids) qb = qb.where('e.id', 'in', ids);
  if (query.objectId) qb = qb.where('e.object_id', '=', query.objectId);
  if (query.actorId) qb = qb.where('e.actor_id', '=', query.actorId);
  if (query.type && query.type.length > 0) qb = qb.where('e.type', 'in', query.type as AuditEventType[]);
  if (query.from) qb = qb.where('e.occurred_at', '>=', sql<Date>`${query.from}::timestamptz`);
  // Answers show milliseconds while PostgreSQL keeps microseconds: an inclusive upper bound covers its whole millisecond.
  if (query.to) qb = qb.where('e.occurred_at', '<', sql<Date>`${query.to}::timestamptz + interval '1 millisecond'`);
  return fetchPageIds(qb, 'e', request, AUDIT_SORT_COLUMNS);
}
