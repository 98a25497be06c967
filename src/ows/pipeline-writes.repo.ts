import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import { COLUMN_TYPES } from './collections.repo.js';
import { geometryOfColumn } from './features.repo.js';
import type { FeatureRow } from './geojson.js';
import type { AttributeType, CollectionDef, GeometryType } from './types.js';

/**
 * The statements of the pipeline writer: each takes many features of one collection at once (one
 * array parameter per column, unnested), so that a batch costs a few statements per collection,
 * not a few per record.
 */

/** A feature to store, with its place in the batch (`ord`) and, when the record named one, its fid. */
export interface PendingFeature { ord: number; fid: number | null; row: FeatureRow }

const CATALOGUE = 'feature_collections';

/** Whether the schema has its collection catalogue (a dataset released before the feature store existed has none yet). */
export async function hasCatalogue(trx: Database, schema: string): Promise<boolean> {
  const { rows } = await sql<{ present: boolean }>`
    select to_regclass(format('%I.%I', ${schema}::text, ${CATALOGUE}::text)) is not null as present`.execute(trx);
  return rows[0]?.present === true;
}

/**
 * The definitions of the named collections that exist, each catalogue row held with a KEY SHARE
 * lock until the transaction ends: a concurrent drop (which deletes the row before dropping the
 * table) then waits for this batch, or, if it deleted first, the row is not found here, so a table
 * never vanishes between this lookup and the writes.
 */
export async function lockCollections(trx: Database, schema: string, names: string[]): Promise<Map<string, CollectionDef>> {
  if (names.length === 0) return new Map();
  const { rows } = await sql<{ name: string; title: string | null; geometry_type: string; srid: number; properties: Record<string, AttributeType> }>`
    select name, title, geometry_type, srid, properties from ${sql.id(schema, CATALOGUE)}
    where name = any(${names}::text[]) for key share`.execute(trx);
  return new Map(rows.map((row) => [row.name, {
    name: row.name, title: row.title, geometryType: row.geometry_type as GeometryType, srid: row.srid, properties: row.properties,
  }]));
}

/** One array parameter per attribute, in definition order, and their aliases a0, a1, … */
function attributeArrays(def: CollectionDef, features: PendingFeature[]) {
  const names = Object.keys(def.properties);
  return {
    names,
    arrays: names.map((name) => sql`${features.map((f) => f.row.values[name] ?? null)}::${sql.raw(COLUMN_TYPES[def.properties[name]!])}[]`),
    aliases: names.map((_, i) => `a${i}`),
  };
}

/**
 * Inserts or replaces the features by fid (each fid once: the caller keeps the last record of a
 * fid). A feature whose geometry and attributes are already exactly as given is left alone and not
 * returned, so a redelivered record changes nothing and reads as a duplicate. Rows are written in
 * fid order, so two writers of overlapping fids lock them in the same order and cannot deadlock.
 * Returns the fids inserted or changed.
 */
export async function upsertByFid(trx: Database, schema: string, def: CollectionDef, features: PendingFeature[]): Promise<Set<number>> {
  const { names, arrays, aliases } = attributeArrays(def, features);
  const columns = [sql`fid`, sql`geom`, ...names.map((name) => sql.id(name))];
  const excluded = [sql`geom`, ...names.map((name) => sql.id(name))];
  const { rows } = await sql<{ fid: string | number }>`
    insert into ${sql.id(schema, def.name)} as cur (${sql.join(columns)}) overriding system value
    select u.f, ${geometryOfColumn(sql.ref('u.g'), def.srid)}${sql.join(aliases.map((alias) => sql`, ${sql.ref(`u.${alias}`)}`), sql``)}
    from unnest(${sql.join([
      sql`${features.map((f) => f.fid)}::bigint[]`, sql`${features.map((f) => f.row.geometry)}::text[]`, ...arrays,
    ])}) as u(${sql.join(['f', 'g', ...aliases].map((alias) => sql.id(alias)))})
    order by u.f
    on conflict (fid) do update set ${sql.join(excluded.map((column) => sql`${column} = excluded.${column}`))}
    where (${sql.join(excluded.map((column) => sql`cur.${column}`))}) is distinct from (${sql.join(excluded.map((column) => sql`excluded.${column}`))})
    returning fid`.execute(trx);
  return new Set(rows.map((row) => Number(row.fid)));
}

/**
 * Moves the fid sequence past `highest` when it has not got there yet, so that a feature stored
 * later without an id (by a pipeline or `POST …/items`) never draws a fid a record gave explicitly.
 * (Sequences are outside transactions: this holds after a rollback too, leaving only a gap.)
 */
export async function advanceFidSequence(trx: Database, schema: string, def: CollectionDef, highest: number): Promise<void> {
  await sql`
    select setval(s.seq, ${highest}::bigint)
    from (select pg_get_serial_sequence(format('%I.%I', ${schema}::text, ${def.name}::text), 'fid')::regclass as seq) s
    where coalesce(pg_sequence_last_value(s.seq), 0) < ${highest}::bigint`.execute(trx);
}

/**
 * Inserts the features that are not stored yet, keyed by their content: a feature whose geometry
 * is exactly equal (found through the geometry index: `&&`, then `=`) and whose every attribute
 * is the same (`is not distinct from`, so nulls match) is already there; of identical features
 * within the features given, only the first is inserted. Writers of one collection take a
 * transaction-scoped advisory lock first, so that two batches carrying the same feature at the
 * same moment cannot both find it missing. Returns the `ord` of each feature inserted.
 */
export async function insertUnlessStored(trx: Database, schema: string, def: CollectionDef, features: PendingFeature[]): Promise<Set<number>> {
  const { names, arrays, aliases } = attributeArrays(def, features);
  const table = sql.id(schema, def.name);
  await sql`select pg_advisory_xact_lock(hashtextextended(${`ows-feature-write:${schema}.${def.name}`}, 0))`.execute(trx);
  const inputColumns = aliases.map((alias) => sql.ref(`i.${alias}`));
  const sameAttributes = names.map((name, i) => sql` and t.${sql.id(name)} is not distinct from ${sql.ref(`f.${aliases[i]!}`)}`);
  const { rows } = await sql<{ o: number }>`
    with input as (
      select u.o, ${geometryOfColumn(sql.ref('u.g'), def.srid)} as geom${sql.join(aliases.map((alias) => sql`, ${sql.ref(`u.${alias}`)}`), sql``)}
      from unnest(${sql.join([sql`${features.map((f) => f.ord)}::int[]`, sql`${features.map((f) => f.row.geometry)}::text[]`, ...arrays])})
        as u(${sql.join(['o', 'g', ...aliases].map((alias) => sql.id(alias)))})
    ),
    fresh as materialized (
      select f.* from (
        select i.*, row_number() over (partition by ${sql.join([sql`i.geom`, ...inputColumns])} order by i.o) as n from input i
      ) f
      where f.n = 1 and not exists (
        select 1 from ${table} t where t.geom && f.geom and t.geom = f.geom${sql.join(sameAttributes, sql``)}
      )
    ),
    added as (
      insert into ${table} (geom${sql.join(names.map((name) => sql`, ${sql.id(name)}`), sql``)})
      select geom${sql.join(aliases.map((alias) => sql`, ${sql.id(alias)}`), sql``)} from fresh order by o
    )
    select o from fresh`.execute(trx);
  return new Set(rows.map((row) => Number(row.o)));
}
