import { sql, type RawBuilder } from 'kysely';
import { validationFailed } from '../errors.js';
import { ENTITIES, MULTI_DATASTREAM_PROPERTIES, navigationOf, type EntityDef } from './model.js';
import type { ParsedEntity } from './validate.js';
import { tableOf } from './sql-context.js';
import type { WriteContext } from './write-sql.js';

/**
 * The rules of the MultiDatastream extension (SensorThings 1.1 §9) that no column type can hold,
 * checked inside the write's transaction as FROST-Server checks them:
 * - a MultiDatastream's observationType is the complex-observation URI, and it has as many
 *   ObservedProperties as `multiObservationDataTypes` and `unitOfMeasurements` have members;
 * - an Observation belongs to exactly one of a Datastream or a MultiDatastream, and the result of
 *   one of a MultiDatastream is an array with one value per ObservedProperty;
 * - its ObservedProperties are linked from the MultiDatastream only;
 * - deleting an ObservedProperty deletes the MultiDatastreams it is part of (their arrays would no
 *   longer match what they declare).
 * Every fault is a 400 naming the field, and rolls the whole request back.
 */

export const OM_COMPLEX_OBSERVATION = 'http://www.opengis.net/def/observationType/OGC-OM/2.0/OM_ComplexObservation';

const fieldOf = (prefix: string, name: string) => (prefix ? `${prefix}.${name}` : name);

/** A created or updated MultiDatastream, once its ObservedProperties are linked. */
export async function checkMultiDatastream(w: WriteContext, id: number, prefix: string): Promise<void> {
  const { rows } = await sql<{ observation_type: string; units: number; types: number; properties: number | string }>`
    select m.observation_type, jsonb_array_length(m.unit_of_measurements) as units,
           jsonb_array_length(m.multi_observation_data_types) as types,
           (select count(*) from ${sql.id(w.ctx.schema, MULTI_DATASTREAM_PROPERTIES)} l where l.multi_datastream_id = m.id) as properties
      from ${tableOf(w.ctx, ENTITIES.MultiDatastreams)} m where m.id = ${id}`.execute(w.trx);
  const row = rows[0];
  if (!row) return;
  if (row.observation_type !== OM_COMPLEX_OBSERVATION) {
    throw validationFailed(fieldOf(prefix, 'observationType'), `must be ${OM_COMPLEX_OBSERVATION}`);
  }
  if (Number(row.types) !== Number(row.units)) {
    throw validationFailed(fieldOf(prefix, 'multiObservationDataTypes'),
      `has ${row.types} members but unitOfMeasurements has ${row.units}; they go by pairs`);
  }
  if (Number(row.properties) !== Number(row.units)) {
    throw validationFailed(fieldOf(prefix, 'ObservedProperties'),
      `links ${row.properties} ObservedProperties but unitOfMeasurements has ${row.units} members; give one per member`);
  }
}

/**
 * An Observation about to be inserted links exactly one stream; `linked` holds its to-one links
 * by navigation name. Checked before the insert so that the client hears which field is at fault.
 */
export function checkOneStream(linked: ReadonlyMap<string, number>, prefix: string): void {
  const datastream = linked.has('Datastream');
  if (datastream === linked.has('MultiDatastream')) {
    throw validationFailed(fieldOf(prefix, 'Datastream'), datastream
      ? 'an Observation belongs to a Datastream or to a MultiDatastream, not both'
      : 'is required (or a MultiDatastream)');
  }
}

/**
 * An update that links an Observation to a stream takes it out of the other one: the stored row
 * then still belongs to exactly one. Both in one request is the client's contradiction.
 */
export function oneStreamAssignments(entity: EntityDef, assignments: [string, RawBuilder<unknown>][]): void {
  if (entity !== ENTITIES.Observations) return;
  const setsDatastream = assignments.some(([name]) => name === 'datastream_id');
  const setsMulti = assignments.some(([name]) => name === 'multi_datastream_id');
  if (setsDatastream && setsMulti) throw validationFailed('Datastream', 'an Observation belongs to a Datastream or to a MultiDatastream, not both');
  if (setsDatastream) assignments.push(['multi_datastream_id', sql`null`]);
  if (setsMulti) assignments.push(['datastream_id', sql`null`]);
}

/**
 * The first of the stored Observations `ids` whose result does not fit its MultiDatastream (not
 * an array, or not one value per ObservedProperty), with the length expected; undefined when all
 * fit. One statement however many ids (CreateObservations checks its whole body at once).
 */
export async function misfitResult(w: WriteContext, ids: readonly number[]): Promise<{ id: number; expected: number } | undefined> {
  if (ids.length === 0) return undefined;
  const { rows } = await sql<{ id: number | string; expected: number | string }>`
    select o.id, jsonb_array_length(m.unit_of_measurements) as expected
      from ${tableOf(w.ctx, ENTITIES.Observations)} o
      join ${tableOf(w.ctx, ENTITIES.MultiDatastreams)} m on m.id = o.multi_datastream_id
     where o.id = any(${ids}::bigint[])
       and (case when jsonb_typeof(o.result) = 'array' then jsonb_array_length(o.result) end)
           is distinct from jsonb_array_length(m.unit_of_measurements)
     order by o.id limit 1`.execute(w.trx);
  const row = rows[0];
  return row && { id: Number(row.id), expected: Number(row.expected) };
}

export const misfitMessage = (expected: number) =>
  `must be an array of ${expected} values, one per ObservedProperty of the MultiDatastream`;

/** A created or updated Observation whose result must fit its MultiDatastream. */
export async function checkObservationResult(w: WriteContext, id: number, prefix: string): Promise<void> {
  const misfit = await misfitResult(w, [id]);
  if (misfit) throw validationFailed(fieldOf(prefix, 'result'), misfitMessage(misfit.expected));
}

/**
 * A MultiDatastream's ObservedProperties are given on the MultiDatastream, in order; linking one
 * from the ObservedProperty's side (its `MultiDatastreams`) would add a member the arrays do not
 * have, so it is refused, as FROST-Server refuses it.
 */
export function refuseLinkFromObservedProperty(parsed: ParsedEntity): void {
  if (parsed.entity !== ENTITIES.ObservedProperties) return;
  const nav = navigationOf(parsed.entity, 'MultiDatastreams')!;
  if (parsed.toMany.get(nav)?.length) {
    throw validationFailed(fieldOf(parsed.field, 'MultiDatastreams'), 'cannot be linked from an ObservedProperty; list the ObservedProperties on the MultiDatastream');
  }
}

/** Before an ObservedProperty is deleted: the MultiDatastreams it is part of go with it (FROST does the same). */
export async function beforeDelete(w: WriteContext, entity: EntityDef, id: number): Promise<void> {
  if (entity !== ENTITIES.ObservedProperties) return;
  const { rows } = await sql<{ id: number | string }>`delete from ${tableOf(w.ctx, ENTITIES.MultiDatastreams)}
    where id in (select multi_datastream_id from ${sql.id(w.ctx.schema, MULTI_DATASTREAM_PROPERTIES)} where observed_property_id = ${id})
    returning id`.execute(w.trx);
  for (const row of rows) w.changes.push({ schema: w.ctx.schema, entitySet: 'MultiDatastreams', id: Number(row.id), kind: 'delete' });
}

const OTHER_STREAM: Record<string, string> = { datastream_id: 'multi_datastream_id', multi_datastream_id: 'datastream_id' };

/**
 * A `$ref` write that sets an Observation's `datastream_id` or `multi_datastream_id` (`column`)
 * takes it out of the other stream in the same statement (the table's check wants exactly one):
 * the assignment to add after `column = …`, empty for any other link.
 */
export function otherStreamCleared(entity: EntityDef, column: string): RawBuilder<unknown> {
  const other = entity === ENTITIES.Observations ? OTHER_STREAM[column] : undefined;
  return other ? sql`, ${sql.id(other)} = null` : sql``;
}

/** After such a write: the result of an Observation that joined a MultiDatastream must fit it (else 400, undone). */
export async function afterStreamLinked(w: WriteContext, entity: EntityDef, id: number, column: string): Promise<void> {
  if (entity === ENTITIES.Observations && column === 'multi_datastream_id') await checkObservationResult(w, id, '');
}

/** A MultiDatastream's ObservedProperties are ranked and fixed in number: no `$ref` adds or removes one. */
export function refuseRankedLinkRef(table: string): void {
  if (table !== MULTI_DATASTREAM_PROPERTIES) return;
  throw validationFailed('$ref', 'the ObservedProperties of a MultiDatastream are given, in order, when it is created or updated; they are not linked one by one');
}
