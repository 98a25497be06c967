import { sql } from 'kysely';
import { AppError, accessDenied, validationFailed } from '../errors.js';
import type { Database } from '../db/client.js';
import { ENTITIES } from './model.js';
import { tableOf, type SqlContext } from './resolver.js';
import { selfLink } from './links.js';
import { announceChanges, checkLinked, type Change, type WriteContext } from './write-sql.js';
import { featureOfInterestFor } from './feature-of-interest.js';
import { parseDataArrays, type ObservationColumns, type ObservationGroup } from './create-observations-parse.js';
import { misfitMessage, misfitResult } from './multi-datastream.js';
import type { StaServerDeps } from './server.js';
import type { StaRequest, StaResponse } from './types.js';

/**
 * `POST {base}/CreateObservations` (SensorThings 1.1, create observations via dataArray): the bulk
 * path for Observations. All or nothing: every value is checked in JS before any SQL runs, and the
 * first bad one answers 400 naming its position (`[0].dataArray[17][1]`); the rows are then
 * inserted in one transaction by a few multi-row statements over array parameters. The answer is
 * 201 with the created Observations' selfLinks in the order of the rows.
 *
 * The standard's alternative, an `"error"` entry for each row that failed while the others are
 * created, would leave the client to find and resend the holes; one answer for the whole request
 * is simpler to act on and to reason about.
 */

// One statement carries this many rows: large enough to amortize the round trip, small enough to
// keep one statement's parameters (and the server's memory for them) moderate.
const CHUNK_ROWS = 10_000;

export async function createObservations(deps: StaServerDeps, request: StaRequest): Promise<StaResponse> {
  if (request.method !== 'POST') throw new AppError('MALFORMED_REQUEST', 'CreateObservations takes POST only', { status: 405 });
  if (!request.rights.write) throw accessDenied('DATASET_PAYLOAD_WRITE');
  const columns = parseDataArrays(request.body);
  const ctx: SqlContext = { schema: request.schema, postgis: deps.postgis ?? false };
  const changes: Change[] = [];
  const work = (trx: Database) => insertAll({ trx, ctx, changes }, columns);
  // Inside a $batch atomicity group the batch owns the transaction and holds the changes.
  const ids = deps.db.isTransaction ? await work(deps.db) : await deps.db.transaction().execute((trx) => work(trx as Database));
  announceChanges(deps.onChange, changes);
  return { status: 201, body: ids.map((id) => selfLink(request.baseUrl, ENTITIES.Observations, id)) };
}

async function insertAll(w: WriteContext, columns: ObservationColumns): Promise<number[]> {
  await resolveLinks(w, columns);
  const observations = ENTITIES.Observations;
  const table = tableOf(w.ctx, observations);
  const ids: number[] = [];
  for (let start = 0; start < columns.datastream.length; start += CHUNK_ROWS) {
    const slice = <T>(values: T[]) => values.slice(start, start + CHUNK_ROWS);
    const { rows } = await sql<{ id: number | string }>`insert into ${table}
      (datastream_id, multi_datastream_id, feature_of_interest_id, phenomenon_time_start, phenomenon_time_end, result_time,
       result, result_quality, valid_time_start, valid_time_end, parameters)
      select * from unnest(${slice(columns.datastream)}::bigint[], ${slice(columns.multiDatastream)}::bigint[], ${slice(columns.featureOfInterest)}::bigint[],
        ${slice(columns.phenomenonStart)}::timestamptz[], ${slice(columns.phenomenonEnd)}::timestamptz[],
        ${slice(columns.resultTime)}::timestamptz[], ${slice(columns.result)}::jsonb[], ${slice(columns.resultQuality)}::jsonb[],
        ${slice(columns.validStart)}::timestamptz[], ${slice(columns.validEnd)}::timestamptz[], ${slice(columns.parameters)}::jsonb[])
      returning id`.execute(w.trx);
    // RETURNING gives the rows in the order the select produced them, which is the order of the arrays.
    for (const row of rows) ids.push(Number(row.id));
  }
  await checkMultiResults(w, columns, ids);
  for (const id of ids) w.changes.push({ schema: w.ctx.schema, entitySet: 'Observations', id, kind: 'create' });
  return ids;
}

/** The result of each row of a MultiDatastream has one value per ObservedProperty: else 400 naming the first that has not. */
async function checkMultiResults(w: WriteContext, columns: ObservationColumns, ids: number[]) {
  const misfit = await misfitResult(w, ids.filter((_, row) => columns.multiDatastream[row] !== null));
  if (!misfit) return;
  const row = ids.indexOf(misfit.id);
  const group = columns.groups.find((g) => row >= g.start && row < g.end)!;
  throw validationFailed(`${group.field}.dataArray[${row - group.start}][${group.resultComponent}]`, misfitMessage(misfit.expected));
}

/**
 * Checks every Datastream and explicit FeatureOfInterest exists (400 naming where it was given) and
 * fills in the FeatureOfInterest of rows that had none from the Datastream's Thing's Location, as a
 * single create does.
 */
async function resolveLinks(w: WriteContext, columns: ObservationColumns) {
  // Many groups may name the same Datastream (a client batching by time); each is looked up once.
  const streamOf = (group: ObservationGroup) => (group.multi ? 'MultiDatastreams' : 'Datastreams');
  const checked = new Set<string>();
  for (const group of columns.groups) {
    const key = `${streamOf(group)}(${group.datastreamId})`;
    if (checked.has(key)) continue;
    await checkLinked(w, streamOf(group), group.datastreamId, `${group.field}.${ENTITIES[streamOf(group)].singular}`);
    checked.add(key);
  }
  const explicit = [...new Set(columns.featureOfInterest.filter((id): id is number => id !== null))];
  if (explicit.length > 0) {
    const { rows } = await sql<{ id: number | string }>`select id from ${tableOf(w.ctx, ENTITIES.FeaturesOfInterest)}
      where id = any(${explicit}::bigint[])`.execute(w.trx);
    const found = new Set(rows.map((row) => Number(row.id)));
    const missing = columns.featureOfInterest.findIndex((id) => id !== null && !found.has(id));
    if (missing >= 0) {
      throw validationFailed(columns.featureOfInterestField(missing), `FeatureOfInterest with @iot.id ${columns.featureOfInterest[missing]} does not exist`);
    }
  }
  const derived = new Map<string, number>();
  for (const group of columns.groups) {
    const key = `${streamOf(group)}(${group.datastreamId})`;
    for (let row = group.start; row < group.end; row++) {
      if (columns.featureOfInterest[row] !== null) continue;
      let id = derived.get(key);
      if (id === undefined) {
        id = await featureOfInterestFor(w, group.datastreamId, `${group.field}.FeatureOfInterest/id`, streamOf(group));
        derived.set(key, id);
      }
      columns.featureOfInterest[row] = id;
    }
  }
}
