import { sql } from 'kysely';
import { AppError } from '../errors.js';
import type { Database } from '../db/client.js';
import type { MappedRecord, PayloadWriter, WriteOutcome, WriteResult } from '../ingest/types.js';
import { NAME_PATTERN, isObject } from './collection-definition.js';
import { parseSingleFeature, type FeatureRow } from './geojson.js';
import { advanceFidSequence, hasCatalogue, insertUnlessStored, lockCollections, upsertByFid, type PendingFeature } from './pipeline-writes.repo.js';
import type { CollectionDef } from './types.js';
import type { MatchCounts } from './ogc-api/match-counts.js';

/**
 * The pipelines' writer for OWS named APIs: each mapped record `{collection, id?, geometry,
 * properties}` becomes one feature of an existing collection, checked by the features API's own
 * parser. A record with an `id` (the fid) is upserted; one without is keyed by its content, so a
 * record delivered again is stored once either way. Features land in the collection's table like
 * those posted through the API (which keeps no other bookkeeping: counts and bboxes are computed
 * when read), so WFS and WMS serve them at once.
 */

/** Members a mapped record may have; `type` only so that a GeoJSON Feature can be mapped through whole. */
const MEMBERS = new Set(['collection', 'id', 'geometry', 'properties', 'type']);
/** A feature with many faults names the first few in its reason. */
const LISTED_PROBLEMS = 5;

const rejected = (field: string | null, reason: string): WriteOutcome => ({ outcome: 'rejected', reason, field });

export function createFeatureWriter(deps: { postgis: boolean; matchCounts?: MatchCounts }): PayloadWriter {
  // Schemas known to have their catalogue: once made (RELEASE, or the store's first request) it stays
  // for the dataset's life, so this cache cannot go stale. Collections themselves are looked up per batch.
  const catalogued = new Set<string>();
  return {
    async write(trx, schema, records): Promise<WriteResult> {
      const outcomes = deps.postgis
        ? await writeBatch(trx, schema, records, catalogued)
        : records.map(() => rejected(null, 'OWS named APIs need PostgreSQL with PostGIS'));
      // WFS/WMS read the tables directly; the items pages' counts are told once the batch committed.
      return { outcomes, committed: () => deps.matchCounts?.changed(schema) };
    },
  };
}

/** A record whose shape is right, waiting for its collection. */
interface Addressed { ord: number; collection: string; fid: number | null; feature: Record<string, unknown> }

async function writeBatch(trx: Database, schema: string, records: readonly MappedRecord[], catalogued: Set<string>): Promise<WriteOutcome[]> {
  const outcomes: WriteOutcome[] = new Array(records.length);
  const byCollection = new Map<string, Addressed[]>();
  records.forEach((record, ord) => {
    const addressed = addressOf(record.value, ord);
    if ('outcome' in addressed) outcomes[ord] = addressed;
    else {
      const group = byCollection.get(addressed.collection);
      if (group) group.push(addressed);
      else byCollection.set(addressed.collection, [addressed]);
    }
  });

  // Sorted, so that two writers take their per-collection locks in the same order.
  const names = [...byCollection.keys()].sort();
  if (names.length > 0 && !catalogued.has(schema) && (await hasCatalogue(trx, schema))) catalogued.add(schema);
  const collections = catalogued.has(schema) ? await lockCollections(trx, schema, names) : new Map<string, CollectionDef>();
  for (const name of names) {
    const addressed = byCollection.get(name)!;
    const def = collections.get(name);
    if (!def) {
      for (const record of addressed) outcomes[record.ord] = rejected('collection', `collection: there is no collection named ${name} in this API`);
      continue;
    }
    const pending: PendingFeature[] = [];
    for (const record of addressed) {
      const checked = featureRowOf(record.feature, def);
      if ('outcome' in checked) outcomes[record.ord] = checked;
      else pending.push({ ord: record.ord, fid: record.fid, row: checked });
    }
    await writeCollection(trx, schema, def, pending, outcomes);
  }
  return outcomes;
}

/** The record's collection and fid, or why it cannot be a feature at all. */
function addressOf(value: unknown, ord: number): Addressed | WriteOutcome {
  if (!isObject(value)) return rejected(null, 'the mapped record must be an object {collection, id, geometry, properties}');
  const stray = Object.keys(value).find((member) => !MEMBERS.has(member));
  if (stray !== undefined) return rejected(stray.slice(0, 100), `${stray.slice(0, 100)}: not a member of a feature (collection, id, geometry, properties)`);
  if (value['type'] !== undefined && value['type'] !== 'Feature') return rejected('type', 'type: must be Feature when given');
  const collection = value['collection'];
  if (typeof collection !== 'string' || !NAME_PATTERN.test(collection)) {
    return rejected('collection', 'collection: must be the name of a collection of this API');
  }
  const fid = fidOf(value['id']);
  if (fid === undefined) return rejected('id', 'id: must be the feature id, a positive integer or a string of its digits');
  return { ord, collection, fid, feature: value };
}

/** The fid a record's `id` names (null: none given), or undefined when it cannot be one: ids are kept as the features API keeps them. */
function fidOf(id: unknown): number | null | undefined {
  if (id === undefined || id === null) return null;
  if (typeof id === 'number') return Number.isSafeInteger(id) && id >= 1 ? id : undefined;
  if (typeof id === 'string' && /^[1-9]\d{0,15}$/.test(id)) {
    const fid = Number(id);
    return Number.isSafeInteger(fid) ? fid : undefined;
  }
  return undefined;
}

/**
 * The feature checked by the features API's parser. Its field names (`geometry`, `properties`,
 * `properties.speed`) are already the record's target paths; the first fault is the field.
 */
function featureRowOf(feature: Record<string, unknown>, def: CollectionDef): FeatureRow | WriteOutcome {
  try {
    return parseSingleFeature({ type: 'Feature', geometry: feature['geometry'], properties: feature['properties'] }, def);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    const problems = error.options.fieldErrors ?? [];
    if (problems.length === 0) return rejected(null, error.message);
    const listed = problems.slice(0, LISTED_PROBLEMS).map((problem) => `${problem.field}: ${problem.message}`);
    if (problems.length > LISTED_PROBLEMS) listed.push(`and ${problems.length - LISTED_PROBLEMS} more`);
    return rejected(problems[0]!.field, listed.join('; '));
  }
}

/**
 * Stores one collection's features: the ones with a fid first (then the fid sequence is moved past
 * them), then the ones keyed by content. Each step runs as one statement; should the database
 * refuse it for one feature's sake (a value the parser let through but PostgreSQL does not take),
 * the step is done again feature by feature, so that only that feature is rejected.
 */
async function writeCollection(trx: Database, schema: string, def: CollectionDef, pending: PendingFeature[], outcomes: WriteOutcome[]): Promise<void> {
  const keyed = pending.filter((feature) => feature.fid !== null);
  const unkeyed = pending.filter((feature) => feature.fid === null);

  if (keyed.length > 0) {
    // One row per fid: the last record of a fid is the one that stays. An earlier one it replaces
    // counts as written, or as a duplicate when the last one is the same feature.
    const last = new Map(keyed.map((feature) => [feature.fid!, feature]));
    for (const feature of keyed) {
      const final = last.get(feature.fid!)!;
      if (final !== feature) outcomes[feature.ord] = sameFeature(feature.row, final.row) ? { outcome: 'duplicate' } : { outcome: 'written' };
    }
    await stepWithFallback(trx, def, [...last.values()], outcomes, async (features) => {
      const changed = await upsertByFid(trx, schema, def, features);
      return new Set(features.filter((feature) => changed.has(feature.fid!)).map((feature) => feature.ord));
    });
    const stored = [...last.values()].filter((feature) => outcomes[feature.ord]!.outcome !== 'rejected');
    if (stored.length > 0) await advanceFidSequence(trx, schema, def, Math.max(...stored.map((feature) => feature.fid!)));
  }
  if (unkeyed.length > 0) await stepWithFallback(trx, def, unkeyed, outcomes, (features) => insertUnlessStored(trx, schema, def, features));
}

const sameFeature = (a: FeatureRow, b: FeatureRow) => a.geometry === b.geometry && JSON.stringify(a.values) === JSON.stringify(b.values);

/**
 * Runs `step` (which answers the `ord`s it wrote; the others were duplicates) on all the features
 * inside a savepoint; when the database refuses a value, rolls back to it and runs the step on each
 * feature alone, rejecting those it refuses. Any other error (the connection lost) fails the batch.
 */
async function stepWithFallback(
  trx: Database, def: CollectionDef, features: PendingFeature[], outcomes: WriteOutcome[],
  step: (features: PendingFeature[]) => Promise<Set<number>>,
): Promise<void> {
  const settle = (done: PendingFeature[], written: Set<number>) => {
    for (const feature of done) outcomes[feature.ord] = written.has(feature.ord) ? { outcome: 'written' } : { outcome: 'duplicate' };
  };
  try {
    settle(features, await inSavepoint(trx, () => step(features)));
    return;
  } catch (error) {
    if (!refusesAValue(error)) throw error;
    if (features.length === 1) {
      outcomes[features[0]!.ord] = refusal(error, features[0]!.row, def);
      return;
    }
  }
  for (const feature of features) {
    try {
      settle([feature], await inSavepoint(trx, () => step([feature])));
    } catch (error) {
      if (!refusesAValue(error)) throw error;
      outcomes[feature.ord] = refusal(error, feature.row, def);
    }
  }
}

async function inSavepoint<T>(trx: Database, work: () => Promise<T>): Promise<T> {
  await sql`savepoint ows_feature_write`.execute(trx);
  try {
    const result = await work();
    await sql`release savepoint ows_feature_write`.execute(trx);
    return result;
  } catch (error) {
    await sql`rollback to savepoint ows_feature_write`.execute(trx);
    await sql`release savepoint ows_feature_write`.execute(trx);
    throw error;
  }
}

const sqlStateOf = (error: unknown): string =>
  typeof error === 'object' && error !== null && typeof (error as { code?: unknown }).code === 'string' ? (error as { code: string }).code : '';

/**
 * Errors that one feature's values cause: data exceptions (class 22: a date PostgreSQL does not
 * have, a NUL character), integrity (23), limits (54), and PostGIS's own errors (XX000).
 */
function refusesAValue(error: unknown): boolean {
  const state = sqlStateOf(error);
  return state.startsWith('22') || state.startsWith('23') || state.startsWith('54') || state === 'XX000';
}

/** The rejection of a feature the database refused, naming the value it most likely refused. */
function refusal(error: unknown, row: FeatureRow, def: CollectionDef): WriteOutcome {
  // The message of a data error quotes the value, never a credential; the storage schema's name is internal.
  const message = String((error as Error).message ?? error).replace(/ds_[0-9a-f]{32}/g, 'the dataset').slice(0, 300);
  return rejected(suspectField(row, def, sqlStateOf(error), message), `the database refused the feature: ${message}`);
}

function suspectField(row: FeatureRow, def: CollectionDef, state: string, message: string): string | null {
  const attributes = Object.entries(def.properties).filter(([name]) => row.values[name] !== null && row.values[name] !== undefined);
  const ofType = (type: string) => attributes.filter(([, t]) => t === type).map(([name]) => name);
  if (state === '22007' || state === '22008') {
    const dates = ofType('date-time');
    const named = dates.find((name) => !isCalendarDate(String(row.values[name]))) ?? dates[0];
    return named === undefined ? null : `properties.${named}`;
  }
  if (state === '22021' || state === '22P05') {
    const named = ofType('string').find((name) => String(row.values[name]).includes('\u0000'));
    return named === undefined ? null : `properties.${named}`;
  }
  return /geometr|geojson|coordinate|srid/i.test(message) ? 'geometry' : null;
}

/** Whether an RFC 3339 date names a day of the calendar (the parser lets 2020-02-30 through; PostgreSQL does not). */
function isCalendarDate(text: string): boolean {
  const [, year, month, day] = /^(\d{4})-(\d{2})-(\d{2})/.exec(text)?.map(Number) ?? [];
  if (!year || !month || !day || month > 12) return false;
  const lastOfMonth = new Date(0);
  lastOfMonth.setUTCFullYear(year, month, 0);
  return day <= lastOfMonth.getUTCDate();
}
