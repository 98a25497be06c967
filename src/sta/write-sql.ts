import { sql, type RawBuilder } from 'kysely';
import type { Database } from '../db/client.js';
import { validationFailed } from '../errors.js';
import { ENTITIES, type EntityDef, type EntitySetName, type PropertyDef } from './model.js';
import { tableOf, type SqlContext } from './sql-context.js';
import { exists } from './target.js';
import type { BoundValue } from './validate.js';

/** The SQL pieces every write shares: the transaction's context, column values, existence checks. */

export interface Change {
  schema: string;
  entitySet: EntitySetName;
  id: number;
  kind: 'create' | 'update' | 'delete';
  /**
   * An update's properties whose stored value changed (names, as in the model): property topics
   * (`…/Things(1)/name`) are notified of these only. Absent: not known (every property followed).
   */
  properties?: string[];
}

/**
 * Tells the listener (the MQTT change feed) what a committed transaction changed. A listener's
 * fault must not turn a committed write into an error answer.
 */
export function announceChanges(onChange: ((change: Change) => void) | undefined, changes: readonly Change[]): void {
  for (const change of changes) {
    try {
      onChange?.(change);
    } catch {
      // ignored: see above
    }
  }
}

/** One write request's transaction and what it changed, reported once the transaction commits. */
export interface WriteContext {
  trx: Database;
  ctx: SqlContext;
  changes: Change[];
}

export const recordChange = (w: WriteContext, entity: EntityDef, id: number, kind: Change['kind'], properties?: string[]) =>
  w.changes.push({ schema: w.ctx.schema, entitySet: entity.set, id, kind, ...(properties ? { properties } : {}) });

/** An entity's stored row as JSON (column → value), to tell which properties an update changed. */
export async function storedRow(w: WriteContext, entity: EntityDef, id: number): Promise<Record<string, unknown> | undefined> {
  const { rows } = await sql<{ row: Record<string, unknown> }>`select to_jsonb(t) as row from ${tableOf(w.ctx, entity)} as t where t.id = ${id}`.execute(w.trx);
  return rows[0]?.row;
}

/** The names of the properties whose columns differ between two stored rows of an entity. */
export function changedProperties(entity: EntityDef, before: Record<string, unknown> | undefined, after: Record<string, unknown> | undefined): string[] {
  const columnsOf = (property: PropertyDef) => (property.kind === 'interval' ? [`${property.column}_start`, `${property.column}_end`] : [property.column]);
  // jsonb keeps no key order and one spelling per value: equal values serialize equally.
  const differs = (column: string) => JSON.stringify(before?.[column] ?? null) !== JSON.stringify(after?.[column] ?? null);
  return entity.properties.filter((property) => columnsOf(property).some(differs)).map((property) => property.name);
}

/** The column assignments of one property value (an interval sets two columns). */
export function columnValues(property: PropertyDef, value: BoundValue): [string, RawBuilder<unknown>][] {
  if (property.kind === 'interval') {
    const bounds = value as Exclude<BoundValue, string>;
    const { start, end } = bounds ?? { start: null, end: null };
    return [[`${property.column}_start`, sql`${start}::timestamptz`], [`${property.column}_end`, sql`${end}::timestamptz`]];
  }
  const text = value as string | null;
  if (property.kind === 'datetime') return [[property.column, sql`${text}::timestamptz`]];
  if (property.kind === 'string') return [[property.column, sql`${text}`]];
  return [[property.column, sql`${text}::jsonb`]];
}

export async function insertRow(w: WriteContext, entity: EntityDef, assignments: [string, RawBuilder<unknown>][]): Promise<number> {
  const columns = sql.join(assignments.map(([name]) => sql.id(name)));
  const values = sql.join(assignments.map(([, value]) => value));
  const { rows } = await sql<{ id: number }>`insert into ${tableOf(w.ctx, entity)} (${columns}) values (${values}) returning id`.execute(w.trx);
  return Number(rows[0]!.id);
}

export async function updateRow(w: WriteContext, entity: EntityDef, id: number, assignments: [string, RawBuilder<unknown>][]) {
  if (assignments.length === 0) return;
  const set = sql.join(assignments.map(([name, value]) => sql`${sql.id(name)} = ${value}`));
  await sql`update ${tableOf(w.ctx, entity)} set ${set} where id = ${id}`.execute(w.trx);
}

/** A link to an entity that does not exist is the client's mistake: 400 naming the field. */
export async function checkLinked(w: WriteContext, set: EntitySetName, id: number, field: string) {
  const entity = ENTITIES[set];
  if (!(await exists(w.trx, w.ctx, entity, id))) throw validationFailed(field, `${entity.singular} with @iot.id ${id} does not exist`);
}

