import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { ENTITIES, navigationOf, propertyOf, type EntityDef } from './model.js';
import { tableOf } from './sql-context.js';
import { createEntity } from './deep-insert.js';
import { featureOfInterestFor } from './feature-of-interest.js';
import type { ParsedEntity } from './validate.js';
import type { WriteContext } from './write-sql.js';
import { thingToCreate, type DatastreamDefinition, type ObservationRow } from './pipeline-records.js';

/**
 * What the Observations of one pipeline batch link to: their Datastreams (by id, or by name,
 * created on first sight with their Thing, Sensor and ObservedProperty) and their
 * FeaturesOfInterest (by id, given inline, or derived from the Thing's Location). A few statements
 * per batch, one per kind of look-up, whatever the number of records; creations run one by one,
 * but only on first sight.
 */

/** What the writer already knows of a schema: entity ids by cache key (see `KEYS`). */
export interface Known {
  get(key: string): number | undefined;
  /** Remembered for this batch, and for later ones once its transaction committed. */
  learn(key: string, id: number): void;
}

export const KEYS = {
  datastreamName: (name: string) => `n:${name}`,
  datastream: (id: number) => `d:${id}`,
  feature: (key: string) => `f:${key}`,
  featureId: (id: number) => `i:${id}`,
};

/** One record on its way to becoming an Observation. */
export interface PendingObservation {
  index: number;
  row: ObservationRow;
  datastreamId?: number;
  featureId?: number;
}

export type Reject = (item: PendingObservation, field: string | null, reason: string) => void;

/** A statement that failed for the values of one record (bad data), not for the database: the record is rejected. */
export function isRecordFault(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  // 22: data exceptions (a date out of range); 23502/23514: a null or a check the model let through.
  return typeof code === 'string' && (code.startsWith('22') || code === '23502' || code === '23514');
}

export const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Work whose failure undoes only itself, not the caller's transaction. */
export async function withSavepoint<T>(trx: Database, work: () => Promise<T>): Promise<T> {
  await sql`savepoint sta_pipeline_write`.execute(trx);
  let result: T;
  try {
    result = await work();
  } catch (error) {
    await sql`rollback to savepoint sta_pipeline_write`.execute(trx);
    await sql`release savepoint sta_pipeline_write`.execute(trx);
    throw error;
  }
  await sql`release savepoint sta_pipeline_write`.execute(trx);
  return result;
}

/**
 * All items in one statement; when that fails for some item's values, each on its own so that only
 * the faulty ones fail (their error in their place). Any other error fails the batch.
 */
export async function storeAll<T, R>(trx: Database, items: readonly T[], all: (items: readonly T[]) => Promise<R[]>, one: (item: T) => Promise<R>): Promise<(R | Error)[]> {
  if (items.length === 0) return [];
  try {
    return await withSavepoint(trx, () => all(items));
  } catch (error) {
    if (!isRecordFault(error)) throw error;
  }
  const results: (R | Error)[] = [];
  for (const item of items) {
    try {
      results.push(await withSavepoint(trx, () => one(item)));
    } catch (error) {
      if (!isRecordFault(error)) throw error;
      results.push(error instanceof Error ? error : new Error(String(error)));
    }
  }
  return results;
}

const distinct = <T>(values: T[]) => [...new Set(values)];
const nameOf = (parsed: ParsedEntity) => parsed.values.get(propertyOf(parsed.entity, 'name')!) as string;

/** The oldest entity of each name: when several share a name, the same one every time. */
async function idsByName(w: WriteContext, entity: EntityDef, names: string[]): Promise<Map<string, number>> {
  if (names.length === 0) return new Map();
  const { rows } = await sql<{ name: string; id: number | string }>`select name, min(id) as id from ${tableOf(w.ctx, entity)}
    where name = any(${names}::text[]) group by name`.execute(w.trx);
  return new Map(rows.map((row) => [row.name, Number(row.id)]));
}

async function learnDatastreamsByName(w: WriteContext, known: Known, names: string[]) {
  for (const [name, id] of await idsByName(w, ENTITIES.Datastreams, names)) {
    known.learn(KEYS.datastreamName(name), id);
    known.learn(KEYS.datastream(id), id);
  }
}

/** Each linked entity: its navigation, its set, what names it, and what to create when its name is new. */
const LINKED = [
  ['Thing', ENTITIES.Things, (d: DatastreamDefinition) => d.thing, thingToCreate],
  ['Sensor', ENTITIES.Sensors, (d: DatastreamDefinition) => d.sensor, (d: DatastreamDefinition) => d.sensor],
  ['ObservedProperty', ENTITIES.ObservedProperties, (d: DatastreamDefinition) => d.observedProperty, (d: DatastreamDefinition) => d.observedProperty],
] as const;

/**
 * Creates the Datastreams no one has yet, each with its Thing, Sensor and ObservedProperty reused by
 * name or created, each Datastream in a savepoint so that one that cannot be stored fails alone.
 * A Thing created here gets the record's `Datastream.Thing.Location`, if any; one reused keeps its
 * own Locations. This runs before the FeaturesOfInterest are resolved, so the Observations of the
 * same batch already derive theirs from the new Location. Answers why a name could not be created.
 */
async function createDatastreams(w: WriteContext, known: Known, definitions: DatastreamDefinition[], created: Set<number>): Promise<Map<string, string>> {
  const failures = new Map<string, string>();
  // One transaction is one connection: the look-ups run one after the other.
  const linkedIds: Map<string, number>[] = [];
  for (const [, entity, part] of LINKED) linkedIds.push(await idsByName(w, entity, distinct(definitions.map((d) => nameOf(part(d))))));
  for (const definition of definitions) {
    const changesBefore = w.changes.length;
    const fresh: [Map<string, number>, string, number][] = [];
    try {
      const id = await withSavepoint(w.trx, async () => {
        for (const [i, [navName, , part, toCreate]] of LINKED.entries()) {
          const parsed = part(definition);
          let linkedId = linkedIds[i]!.get(nameOf(parsed));
          if (linkedId === undefined) {
            linkedId = await createEntity(w, toCreate(definition));
            fresh.push([linkedIds[i]!, nameOf(parsed), linkedId]);
          }
          const nav = navigationOf(ENTITIES.Datastreams, navName)!;
          definition.datastream.toOne.set(nav, { kind: 'ref', id: linkedId, field: `Datastream.${navName}` });
        }
        return createEntity(w, definition.datastream);
      });
      // Only now: a creation undone by its savepoint must not be reused by the next Datastream.
      for (const [map, name, linkedId] of fresh) map.set(name, linkedId);
      known.learn(KEYS.datastreamName(definition.name), id);
      known.learn(KEYS.datastream(id), id);
      created.add(id);
    } catch (error) {
      if (!isRecordFault(error)) throw error;
      w.changes.length = changesBefore;
      failures.set(definition.name, `Datastream: ${definition.name} could not be created: ${errorText(error)}`);
    }
  }
  return failures;
}

/**
 * Sets `datastreamId` of every item, or rejects it. Answers the ids of the Datastreams created
 * here (they hold no Observation yet).
 */
export async function resolveDatastreams(w: WriteContext, known: Known, items: PendingObservation[], reject: Reject): Promise<Set<number>> {
  const byId = distinct(items.flatMap((item) => (item.row.datastream.kind === 'id' ? [item.row.datastream.id] : [])));
  const unknownIds = byId.filter((id) => known.get(KEYS.datastream(id)) === undefined);
  if (unknownIds.length > 0) {
    const { rows } = await sql<{ id: number | string }>`select id from ${tableOf(w.ctx, ENTITIES.Datastreams)}
      where id = any(${unknownIds}::bigint[])`.execute(w.trx);
    for (const row of rows) known.learn(KEYS.datastream(Number(row.id)), Number(row.id));
  }
  // The first record naming a Datastream defines it; later ones of the batch reuse it.
  const definitions = new Map<string, DatastreamDefinition>();
  for (const item of items) {
    const choice = item.row.datastream;
    if (choice.kind === 'name' && !definitions.has(choice.definition.name)) definitions.set(choice.definition.name, choice.definition);
  }
  const unknownNames = () => [...definitions.keys()].filter((name) => known.get(KEYS.datastreamName(name)) === undefined);
  await learnDatastreamsByName(w, known, unknownNames());
  const created = new Set<number>();
  let failures = new Map<string, string>();
  if (unknownNames().length > 0) {
    // Two pipelines of one dataset meeting a new name at once would each create it: the second
    // waits here for the first to commit, then finds it.
    await sql`select pg_advisory_xact_lock(hashtext(${`sta-pipeline-names:${w.ctx.schema}`}))`.execute(w.trx);
    await learnDatastreamsByName(w, known, unknownNames());
    failures = await createDatastreams(w, known, unknownNames().map((name) => definitions.get(name)!), created);
  }
  for (const item of items) {
    const choice = item.row.datastream;
    if (choice.kind === 'id') {
      if (known.get(KEYS.datastream(choice.id)) === undefined) {
        reject(item, 'Datastream.@iot.id', `Datastream.@iot.id: Datastream with @iot.id ${choice.id} does not exist`);
      } else item.datastreamId = choice.id;
      continue;
    }
    const id = known.get(KEYS.datastreamName(choice.definition.name));
    if (id === undefined) reject(item, 'Datastream', failures.get(choice.definition.name) ?? `Datastream: ${choice.definition.name} could not be created`);
    else item.datastreamId = id;
  }
  return created;
}

const FEATURE = ENTITIES.FeaturesOfInterest;
const featureValue = (parsed: ParsedEntity, name: string) => (parsed.values.get(propertyOf(FEATURE, name)!) ?? null) as string | null;
const featureColumns = (features: readonly ParsedEntity[]) => {
  const column = (name: string) => features.map((parsed) => featureValue(parsed, name));
  return sql`${column('name')}::text[], ${column('description')}::text[], ${column('encodingType')}::text[],
    ${column('feature')}::jsonb[], ${column('properties')}::jsonb[]`;
};

/** Inline features equal to a stored one (every property the same) take its id: one per place, not one per Observation. */
async function learnEqualFeatures(w: WriteContext, known: Known, keys: string[], parsed: ParsedEntity[]) {
  if (keys.length === 0) return;
  // A join, not a probe per key: one pass over the features whatever the batch's size.
  const { rows } = await sql<{ i: number | string; id: number | string }>`select k.i, min(f.id) as id
    from unnest(${featureColumns(parsed)}) with ordinality as k(name, description, encoding_type, feature, properties, i)
    join ${tableOf(w.ctx, FEATURE)} as f on f.name = k.name and f.description = k.description
      and f.encoding_type = k.encoding_type and f.feature = k.feature and f.properties is not distinct from k.properties
    group by k.i`.execute(w.trx);
  for (const row of rows) known.learn(KEYS.feature(keys[Number(row.i) - 1]!), Number(row.id));
}

async function createFeatures(w: WriteContext, known: Known, keys: string[], parsed: ParsedEntity[]): Promise<Map<string, string>> {
  const failures = new Map<string, string>();
  const indexes = keys.map((_, i) => i);
  const results = await storeAll(w.trx, indexes, async () => {
    const { rows } = await sql<{ id: number | string }>`insert into ${tableOf(w.ctx, FEATURE)} (name, description, encoding_type, feature, properties)
      select * from unnest(${featureColumns(parsed)}) returning id`.execute(w.trx);
    // RETURNING gives the rows in the order the select produced them, the order of the arrays.
    return rows.map((row) => Number(row.id));
  }, (i) => createEntity({ ...w, changes: [] }, parsed[i]!));
  results.forEach((result, i) => {
    if (result instanceof Error) failures.set(keys[i]!, `FeatureOfInterest: could not be created: ${result.message}`);
    else {
      known.learn(KEYS.feature(keys[i]!), result);
      w.changes.push({ schema: w.ctx.schema, entitySet: FEATURE.set, id: result, kind: 'create' });
    }
  });
  return failures;
}

/** Sets `featureId` of every item (their Datastream resolved), or rejects it. */
export async function resolveFeatures(w: WriteContext, known: Known, items: PendingObservation[], reject: Reject): Promise<void> {
  const ids = distinct(items.flatMap((item) => (item.row.feature.kind === 'id' ? [item.row.feature.id] : [])))
    .filter((id) => known.get(KEYS.featureId(id)) === undefined);
  if (ids.length > 0) {
    const { rows } = await sql<{ id: number | string }>`select id from ${tableOf(w.ctx, FEATURE)} where id = any(${ids}::bigint[])`.execute(w.trx);
    for (const row of rows) known.learn(KEYS.featureId(Number(row.id)), Number(row.id));
  }

  const inline = new Map<string, ParsedEntity>();
  for (const item of items) if (item.row.feature.kind === 'inline') inline.set(item.row.feature.key, item.row.feature.parsed);
  const unknownKeys = () => [...inline.keys()].filter((key) => known.get(KEYS.feature(key)) === undefined);
  let keys = unknownKeys();
  await learnEqualFeatures(w, known, keys, keys.map((key) => inline.get(key)!));
  keys = unknownKeys();
  const failures = await createFeatures(w, known, keys, keys.map((key) => inline.get(key)!));

  const derived = await derivedFeatures(w, distinct(items.flatMap((item) => (item.row.feature.kind === 'derived' ? [item.datastreamId!] : []))));
  for (const item of items) {
    const feature = item.row.feature;
    let id: number | string | undefined;
    if (feature.kind === 'id') id = known.get(KEYS.featureId(feature.id)) ?? `FeatureOfInterest: FeatureOfInterest with @iot.id ${feature.id} does not exist`;
    else if (feature.kind === 'inline') id = known.get(KEYS.feature(feature.key)) ?? failures.get(feature.key);
    else id = derived.get(item.datastreamId!);
    if (typeof id === 'number') item.featureId = id;
    else reject(item, 'FeatureOfInterest', id ?? 'FeatureOfInterest: could not be created');
  }
}

/**
 * The FeatureOfInterest of each Datastream's Observations that name none: the one generated from
 * its Thing's current Location (found for every Datastream in one statement; created by
 * `featureOfInterestFor` on a Location's first use), or why there is none. Not cached: the Thing may
 * move between two batches. The column is NOT NULL, as the standard makes the link mandatory: a
 * Thing without a Location (as one a pipeline created) leaves the record rejected.
 */
async function derivedFeatures(w: WriteContext, datastreamIds: number[]): Promise<Map<number, number | string>> {
  const found = new Map<number, number | string>();
  if (datastreamIds.length === 0) return found;
  const { rows } = await sql<{ datastream_id: number | string; location_id: number | string | null; feature_id: number | string | null }>`
    select d.id as datastream_id, l.location_id, f.id as feature_id
      from unnest(${datastreamIds}::bigint[]) as d(id)
      left join lateral (select tl.location_id from ${tableOf(w.ctx, ENTITIES.Datastreams)} as ds
        join ${sql.id(w.ctx.schema, 'thing_locations')} as tl on tl.thing_id = ds.thing_id
        where ds.id = d.id order by tl.location_id desc limit 1) as l on true
      left join ${tableOf(w.ctx, FEATURE)} as f on f.generated_from_location_id = l.location_id`.execute(w.trx);
  for (const row of rows) {
    const datastreamId = Number(row.datastream_id);
    if (row.feature_id !== null) found.set(datastreamId, Number(row.feature_id));
    else if (row.location_id === null) {
      found.set(datastreamId, `FeatureOfInterest: is required: the Thing of Datastream ${datastreamId} has no Location to derive it from (map FeatureOfInterest, or give the Thing a Location)`);
    } else {
      try {
        found.set(datastreamId, await featureOfInterestFor(w, datastreamId, 'FeatureOfInterest'));
      } catch (error) {
        // The Location went away since the statement above.
        if (!(error instanceof AppError)) throw error;
        found.set(datastreamId, error.message);
      }
    }
  }
  return found;
}
