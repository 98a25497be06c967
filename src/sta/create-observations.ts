import { sql } from 'kysely';
import { AppError, accessDenied } from '../errors.js';
import type { Database } from '../db/client.js';
import { ENTITIES } from './model.js';
import { AliasNames, tableOf, type SqlContext } from './sql-context.js';
import { selfLink } from './links.js';
import { announceChanges, type Change, type WriteContext } from './write-sql.js';
import { featureOfInterestFor } from './feature-of-interest.js';
import { parseDataArrays, rowError, rowField, type ObservationColumns, type ObservationGroup } from './create-observations-parse.js';
import { misfitMessage } from './multi-datastream.js';
import { lockStreams } from './derived.js';
import type { StaServerDeps } from './server-deps.js';
import type { StaRequest, StaResponse } from './types.js';

/**
 * `POST {base}/CreateObservations` (SensorThings 1.1, create observations via dataArray): the bulk
 * path for Observations. The answer is 201 with one entry per row, in the order of the rows: the
 * created Observation's selfLink, or for a row that was refused a text starting with `error` (as
 * the standard's example has it; FROST-Server adds the reason after it, and so do we: `error
 * [0].dataArray[17][0]: must be an ISO 8601 date-time`). The other rows are stored.
 *
 * A request whose shape is wrong (see create-observations-parse.ts) is a 400 and stores nothing.
 *
 * Speed: every value is checked in JS first, the links (Datastreams, MultiDatastreams, FeaturesOfInterest) with one
 * query per kind, and the accepted rows are inserted by a few multi-row statements over array
 * parameters. Only a chunk the database refuses as a whole (a value it takes for invalid although
 * our checks passed it) is retried row by row, each under its own savepoint, to find the culprits.
 */

// One statement carries this many rows: large enough to amortize the round trip, small enough to
// keep one statement's parameters (and the server's memory for them) moderate.
const CHUNK_ROWS = 10_000;

export async function createObservations(deps: StaServerDeps, request: StaRequest): Promise<StaResponse> {
  if (request.method !== 'POST') throw new AppError('MALFORMED_REQUEST', 'CreateObservations takes POST only', { status: 405 });
  if (!request.rights.write) throw accessDenied('DATASET_PAYLOAD_WRITE');
  const columns = parseDataArrays(request.body);
  const ctx: SqlContext = { schema: request.schema, postgis: deps.postgis ?? false, aliases: new AliasNames() };
  const changes: Change[] = [];
  const work = (trx: Database) => insertAll({ trx, ctx, changes }, columns);
  // Inside a $batch atomicity group the batch owns the transaction and holds the changes.
  const created = deps.db.isTransaction ? await work(deps.db) : await deps.db.transaction().execute((trx) => work(trx as Database));
  announceChanges(deps.onChange, changes);
  const observations = ENTITIES.Observations;
  const body = Array.from({ length: columns.total }, (_, source) => {
    const id = created.get(source);
    return id !== undefined ? selfLink(request.baseUrl, observations, id) : columns.refused.get(source) ?? 'error';
  });
  return { status: 201, body };
}

/** The rows created: the body's row number (`source`) to the new Observation's id. */
async function insertAll(w: WriteContext, columns: ObservationColumns): Promise<Map<number, number>> {
  const refusedNow = await resolveLinks(w, columns);
  const accepted = refusedNow.size > 0 ? withoutRows(columns, refusedNow) : columns;
  const created = new Map<number, number>();
  // Each insert locks its streams (derived.ts) until the commit. A request of more than one
  // statement locks them all first, in one order, so that two such requests cannot deadlock; one
  // of a single statement does not, so that requests to one stream overlap until its trigger.
  const lockAll = () => lockStreams(w.trx, w.ctx, accepted.datastream, accepted.multiDatastream);
  if (accepted.source.length > CHUNK_ROWS) await lockAll();
  for (let start = 0; start < accepted.source.length; start += CHUNK_ROWS) {
    const end = Math.min(start + CHUNK_ROWS, accepted.source.length);
    const ids = await underSavepoint(w, () => insertRows(w, accepted, start, end));
    if (ids) {
      ids.forEach((id, k) => created.set(accepted.source[start + k]!, id));
      continue;
    }
    // Row by row from here (the refused chunk's locks went with its savepoint).
    await lockAll();
    for (let row = start; row < end; row++) {
      const one = await underSavepoint(w, () => insertRows(w, accepted, row, row + 1));
      const source = accepted.source[row]!;
      if (one) created.set(source, one[0]!);
      else columns.refused.set(source, rowError(rowField(columns, source), 'the database refused this row'));
    }
  }
  for (const id of created.values()) w.changes.push({ schema: w.ctx.schema, entitySet: 'Observations', id, kind: 'create' });
  return created;
}

/** SQLSTATE classes 22 (data exception) and 23 (integrity constraint): the row's fault, not the server's. */
const isDataError = (error: unknown) => /^2[23]/.test(String((error as { code?: unknown }).code ?? ''));

/** The work's result, or null when the database refused its data (then undone to the savepoint, the transaction usable). */
async function underSavepoint<T>(w: WriteContext, work: () => Promise<T>): Promise<T | null> {
  await sql`savepoint create_observations`.execute(w.trx);
  try {
    const result = await work();
    await sql`release savepoint create_observations`.execute(w.trx);
    return result;
  } catch (error) {
    if (!isDataError(error)) throw error;
    await sql`rollback to savepoint create_observations`.execute(w.trx);
    await sql`release savepoint create_observations`.execute(w.trx);
    return null;
  }
}

/**
 * The stored columns, each with its type and values in the columns. `required` ones are always
 * sent; the others only when some row of the statement has a value (a column sent as an array of
 * nulls costs its serialization here and its parse in PostgreSQL, about a tenth of a bulk insert of
 * time and result only), else it takes its default, null, as it would from a null in the array.
 */
const STORED: { column: string; type: string; required?: boolean; values: (c: ObservationColumns) => unknown[] }[] = [
  { column: 'datastream_id', type: 'bigint', values: (c) => c.datastream },
  { column: 'multi_datastream_id', type: 'bigint', values: (c) => c.multiDatastream },
  { column: 'feature_of_interest_id', type: 'bigint', required: true, values: (c) => c.featureOfInterest },
  { column: 'phenomenon_time_start', type: 'timestamptz', required: true, values: (c) => c.phenomenonStart },
  { column: 'phenomenon_time_end', type: 'timestamptz', required: true, values: (c) => c.phenomenonEnd },
  { column: 'result_time', type: 'timestamptz', values: (c) => c.resultTime },
  { column: 'result', type: 'jsonb', required: true, values: (c) => c.result },
  { column: 'result_quality', type: 'jsonb', values: (c) => c.resultQuality },
  { column: 'valid_time_start', type: 'timestamptz', values: (c) => c.validStart },
  { column: 'valid_time_end', type: 'timestamptz', values: (c) => c.validEnd },
  { column: 'parameters', type: 'jsonb', values: (c) => c.parameters },
];

async function insertRows(w: WriteContext, c: ObservationColumns, start: number, end: number): Promise<number[]> {
  const sent = STORED.map((stored) => ({ ...stored, slice: stored.values(c).slice(start, end) }))
    .filter((stored) => stored.required || stored.slice.some((value) => value !== null));
  const { rows } = await sql<{ id: number | string }>`insert into ${tableOf(w.ctx, ENTITIES.Observations)}
    (${sql.join(sent.map((stored) => sql.id(stored.column)))})
    select * from unnest(${sql.join(sent.map((stored) => sql`${stored.slice}::${sql.raw(stored.type)}[]`))})
    returning id`.execute(w.trx);
  // RETURNING gives the rows in the order the select produced them, which is the order of the arrays.
  return rows.map((row) => Number(row.id));
}

/** The columns without the rows (indices into the columns) refused by `resolveLinks`. */
function withoutRows(c: ObservationColumns, refused: Set<number>): ObservationColumns {
  const keep = <T>(values: T[]) => values.filter((_, row) => !refused.has(row));
  return {
    ...c, source: keep(c.source), datastream: keep(c.datastream), multiDatastream: keep(c.multiDatastream), featureOfInterest: keep(c.featureOfInterest),
    phenomenonStart: keep(c.phenomenonStart), phenomenonEnd: keep(c.phenomenonEnd), resultTime: keep(c.resultTime),
    result: keep(c.result), resultQuality: keep(c.resultQuality), validStart: keep(c.validStart), validEnd: keep(c.validEnd),
    parameters: keep(c.parameters),
  };
}

/** Each group's rows in the columns, `[start, end)` (the columns keep the body's order). */
function groupRanges(c: ObservationColumns): [number, number][] {
  const ranges: [number, number][] = [];
  let row = 0;
  for (const group of c.groups) {
    const start = row;
    while (row < c.source.length && c.source[row]! < group.end) row++;
    ranges.push([start, row]);
  }
  return ranges;
}

async function existingIds(w: WriteContext, set: 'Datastreams' | 'FeaturesOfInterest', ids: number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const { rows } = await sql<{ id: number | string }>`select id from ${tableOf(w.ctx, ENTITIES[set])}
    where id = any(${ids}::bigint[])`.execute(w.trx);
  return new Set(rows.map((row) => Number(row.id)));
}

/** The MultiDatastreams that exist among `ids`, each with the length its Observations' result must have. */
async function resultLengths(w: WriteContext, ids: number[]): Promise<Map<number, number>> {
  if (ids.length === 0) return new Map();
  const { rows } = await sql<{ id: number | string; expected: number | string }>`
    select id, jsonb_array_length(unit_of_measurements) as expected from ${tableOf(w.ctx, ENTITIES.MultiDatastreams)}
     where id = any(${ids}::bigint[])`.execute(w.trx);
  return new Map(rows.map((row) => [Number(row.id), Number(row.expected)]));
}

/** A row's result (stored JSON text) as long as its MultiDatastream declares? */
function resultFits(result: string, expected: number): boolean {
  const value: unknown = JSON.parse(result);
  return Array.isArray(value) && value.length === expected;
}

/**
 * Checks every Datastream, MultiDatastream and explicit FeatureOfInterest exists, that a
 * MultiDatastream's rows have an array result of its declared length, and fills in the
 * FeatureOfInterest of rows that had none from the stream's Thing's Location, as a single create
 * does. A row that fails is refused (its message kept in `refused`); the rows refused here are
 * returned as indices into the columns.
 */
async function resolveLinks(w: WriteContext, c: ObservationColumns): Promise<Set<number>> {
  const refusedRows = new Set<number>();
  const refuse = (row: number, field: string, message: string) => {
    refusedRows.add(row);
    c.refused.set(c.source[row]!, rowError(field, message));
  };
  const ranges = groupRanges(c);
  const streamIds = (multi: boolean) => [...new Set(c.groups.filter((g) => g.multi === multi).map((g) => g.datastreamId))];
  const datastreams = await existingIds(w, 'Datastreams', streamIds(false));
  const multiDatastreams = await resultLengths(w, streamIds(true));
  const features = await existingIds(w, 'FeaturesOfInterest', [...new Set(c.featureOfInterest.filter((id): id is number => id !== null))]);
  /** Per stream (`Datastreams(1)`, `MultiDatastreams(1)`): the FeatureOfInterest derived for it, or why there is none. */
  const derived = new Map<string, number | { field: string; message: string }>();
  for (const [g, group] of c.groups.entries()) {
    const [start, end] = ranges[g]!;
    const streams = streamsOf(group);
    const singular = ENTITIES[streams].singular;
    const expected = group.multi ? multiDatastreams.get(group.datastreamId) : undefined;
    if (group.multi ? expected === undefined : !datastreams.has(group.datastreamId)) {
      for (let row = start; row < end; row++) refuse(row, `${group.field}.${singular}`, `${singular} with @iot.id ${group.datastreamId} does not exist`);
      continue;
    }
    const key = `${streams}(${group.datastreamId})`;
    for (let row = start; row < end; row++) {
      if (expected !== undefined && !resultFits(c.result[row]!, expected)) {
        refuse(row, `${rowField(c, c.source[row]!)}[${group.resultComponent}]`, misfitMessage(expected));
        continue;
      }
      const given = c.featureOfInterest[row];
      if (given != null) {
        if (!features.has(given)) refuse(row, `${rowField(c, c.source[row]!)}[${group.featureComponent}]`, `FeatureOfInterest with @iot.id ${given} does not exist`);
        continue;
      }
      if (!derived.has(key)) derived.set(key, await deriveFeature(w, group, `${group.field}.FeatureOfInterest/id`));
      const feature = derived.get(key)!;
      if (typeof feature === 'number') c.featureOfInterest[row] = feature;
      else refuse(row, feature.field, feature.message);
    }
  }
  return refusedRows;
}

const streamsOf = (group: ObservationGroup) => (group.multi ? 'MultiDatastreams' : 'Datastreams');

async function deriveFeature(w: WriteContext, group: ObservationGroup, field: string): Promise<number | { field: string; message: string }> {
  try {
    return await featureOfInterestFor(w, group.datastreamId, field, streamsOf(group));
  } catch (error) {
    const fault = error instanceof AppError ? error.options.fieldErrors?.[0] : undefined;
    if (!fault) throw error;
    return fault;
  }
}
