import { sql, type RawBuilder } from 'kysely';
import { AppError, validationFailed } from '../errors.js';
import type { Database } from '../db/client.js';
import { ENTITIES, type EntityDef } from './model.js';
import { beforeDelete, checkMultiDatastream, checkObservationResult, oneStreamAssignments } from './multi-datastream.js';
import { parseEntity, type ParsedEntity, type WriteMode } from './validate.js';
import { createEntity, linkToMany } from './deep-insert.js';
import { deleteEmptiedHistoricalLocations, historicalLocationsOf } from './thing-locations.js';
import { announceChanges, changedProperties, checkLinked, columnValues, recordChange, storedRow, updateRow, type Change, type WriteContext } from './write-sql.js';
import { tableOf, type SqlContext } from './sql-context.js';
import { retriedOnConflict } from '../db/constraint-errors.js';
import { getEntityJson } from './get.js';
import type { ReadContext } from './read.js';
import { selfLink } from './links.js';
import type { Target } from './target.js';
import type { StaResponse } from './types.js';

/**
 * Create, update and delete: each request in one transaction, its changes reported to
 * `onChange` only after the commit (a rolled-back write announces nothing).
 */

export interface WriteDeps {
  read: ReadContext;
  onChange?: (change: Change) => void;
}

export interface WriteRequest {
  body: unknown;
  baseUrl: string;
  preferMinimal: boolean;
  /**
   * Whether the caller may read this dataset's payload. An update's answer is the stored entity,
   * which holds more than the caller sent: a caller who may only write gets 204 without a body.
   */
  callerMayRead: boolean;
}

export async function inTransaction<T>(deps: WriteDeps, work: (w: WriteContext) => Promise<T>): Promise<T> {
  const changes: Change[] = [];
  const ctx: SqlContext = { schema: deps.read.schema, postgis: deps.read.postgis, aliases: deps.read.aliases };
  const db = deps.read.db;
  // Inside a $batch atomicity group the batch owns the transaction, and its onChange holds what
  // it is told until that transaction commits.
  // A write of several statements can deadlock with another on the streams its Observations lock
  // (derived.ts): aborted by PostgreSQL with nothing committed, it runs again.
  const result = db.isTransaction
    ? await work({ trx: db, ctx, changes })
    : await retriedOnConflict(() => db.transaction().execute((trx) => {
      changes.length = 0;
      return work({ trx: trx as Database, ctx, changes });
    }));
  announceChanges(deps.onChange, changes);
  return result;
}

/**
 * The entity as it now reads, with the create/update status, or 204 when the client asked for
 * minimal. A create reads back what the caller sent with the id and links assigned (for a caller
 * without the read right, without the properties computed from other entities); an update may
 * read back properties the caller never sent, so a caller without the read right gets 204.
 */
async function answer(deps: WriteDeps, request: WriteRequest, entity: EntityDef, id: number, status: number): Promise<StaResponse> {
  const location = selfLink(request.baseUrl, entity, id);
  if (status !== 201 && !request.callerMayRead) return { status: 204 };
  if (request.preferMinimal) return { status: 204, headers: { location } };
  const body = await getEntityJson(deps.read, request.baseUrl, entity, id, {});
  // Computed from other stored entities (a Datastream's phenomenonTime from Observations it was linked to).
  if (!request.callerMayRead) for (const property of entity.properties) if (property.derived) delete (body as Record<string, unknown>)[property.name];
  return status === 201 ? { status, headers: { location }, body } : { status, body };
}

export async function createAt(deps: WriteDeps, request: WriteRequest, target: Target): Promise<StaResponse> {
  if (target.kind !== 'collection' || target.ref) throw new AppError('MALFORMED_REQUEST', 'POST creates entities in an entity set or a navigation collection', { status: 405 });
  const parsed = parseEntity(target.entity, request.body, '', 'create');
  if (target.parent) {
    // `Things(1)/Datastreams`: the new Datastream's Thing is Thing 1, whatever the body says.
    const inverse = target.entity.navigations.find((n) => n.name === target.parent!.nav.inverse)!;
    const link = { kind: 'ref' as const, id: target.parent.id, field: inverse.name };
    if (inverse.toMany) parsed.toMany.set(inverse, [...(parsed.toMany.get(inverse) ?? []), link]);
    else parsed.toOne.set(inverse, link);
  }
  const id = await inTransaction(deps, (w) => createEntity(w, parsed));
  return answer(deps, request, target.entity, id, 201);
}

function updateAssignments(parsed: ParsedEntity, mode: WriteMode): [string, RawBuilder<unknown>][] {
  const assignments: [string, RawBuilder<unknown>][] = [];
  for (const property of parsed.entity.properties) {
    if (property.derived) continue;
    if (parsed.values.has(property)) assignments.push(...columnValues(property, parsed.values.get(property)!));
    // PUT replaces the whole entity: what it omits is cleared (required ones were checked present).
    else if (mode === 'put' && property.defaultsToNow) assignments.push([`${property.column}_start`, sql`now()`], [`${property.column}_end`, sql`now()`]);
    else if (mode === 'put') assignments.push(...columnValues(property, null));
  }
  return assignments;
}

/**
 * An update links existing entities only: a navigation holding an object without `@iot.id` (a new
 * entity inline) is refused, as the OGC test suite asks of PATCH; the client creates it first.
 */
function refuseNewRelated(parsed: ParsedEntity, mode: 'patch' | 'put') {
  const inputs = [...parsed.toOne.values(), ...[...parsed.toMany.values()].flat()];
  const created = inputs.find((input) => input.kind === 'new');
  if (created?.kind === 'new') {
    throw validationFailed(created.parsed.field, `a ${mode.toUpperCase()} links existing entities only ({"@iot.id": …}); create the new ${created.parsed.entity.singular} first`);
  }
}

export async function updateAt(deps: WriteDeps, request: WriteRequest, target: Target, mode: 'patch' | 'put'): Promise<StaResponse> {
  if (target.kind !== 'entity' || target.ref) throw new AppError('MALFORMED_REQUEST', `${mode.toUpperCase()} updates one entity`, { status: 405 });
  const { entity, id } = target;
  const parsed = parseEntity(entity, request.body, '', mode);
  refuseNewRelated(parsed, mode);
  if (parsed.id !== undefined && Number(parsed.id) !== id) throw validationFailed('@iot.id', `is ${id} in the path; an entity's id cannot change`);
  await inTransaction(deps, async (w) => {
    const assignments = updateAssignments(parsed, mode);
    for (const [nav, input] of parsed.toOne) {
      if (nav.join.kind !== 'fkHere') continue;
      if (input.kind !== 'ref') continue; // refused above
      await checkLinked(w, nav.target, input.id, input.field);
      assignments.push([nav.join.column, sql`${input.id}`]);
    }
    oneStreamAssignments(entity, assignments);
    const before = await storedRow(w, entity, id);
    await updateRow(w, entity, id, assignments);
    recordChange(w, entity, id, 'update', changedProperties(entity, before, await storedRow(w, entity, id)));
    await linkToMany(w, entity, id, parsed, true);
    if (entity === ENTITIES.Observations) await checkObservationResult(w, id, '');
    if (entity === ENTITIES.MultiDatastreams) await checkMultiDatastream(w, id, '');
  });
  return answer(deps, request, entity, id, 200);
}

export async function deleteAt(deps: WriteDeps, target: Target): Promise<StaResponse> {
  if (target.kind !== 'entity' || target.ref) throw new AppError('MALFORMED_REQUEST', 'DELETE removes one entity', { status: 405 });
  const { entity, id } = target;
  await inTransaction(deps, async (w) => {
    const history = entity === ENTITIES.Locations ? await historicalLocationsOf(w, id) : [];
    // The foreign keys cascade as the standard says (a Thing takes its Datastreams along, ...).
    await beforeDelete(w, entity, id);
    const { rows } = await sql`delete from ${tableOf(w.ctx, entity)} where id = ${id} returning id`.execute(w.trx);
    if (rows.length === 0) throw new AppError('NOT_FOUND', `${entity.singular} ${id} does not exist`);
    recordChange(w, entity, id, 'delete');
    await deleteEmptiedHistoricalLocations(w, history);
  });
  return { status: 204 };
}

