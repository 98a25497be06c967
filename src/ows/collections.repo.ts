import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import { watchPayloadTable } from '../db/data-versions.js';
import type { AttributeType, CollectionDef, GeometryType } from './types.js';

/**
 * The feature collections of one dataset, in its storage schema: the catalogue table
 * `feature_collections` and one table per collection, named after it. Names come from the
 * validated definition and are still always quoted with `sql.id`.
 */

const CATALOGUE = 'feature_collections';

/** Column types of the attribute types; a fixed map, so `sql.raw` only ever sees these words. */
export const COLUMN_TYPES: Record<AttributeType, string> = {
  string: 'text', integer: 'bigint', number: 'double precision', boolean: 'boolean', 'date-time': 'timestamptz',
};

export async function provisionCatalogue(db: Database, schema: string): Promise<void> {
  await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
  await sql`
    create table if not exists ${sql.id(schema, CATALOGUE)} (
      name text primary key,
      title text,
      geometry_type text not null,
      srid integer not null,
      properties jsonb not null default '{}',
      created_at timestamptz not null default now()
    )`.execute(db);
  // A collection created or dropped moves the schema's data version (the downloads' validators), as its features' writes do.
  await watchPayloadTable(db, schema, CATALOGUE);
}

interface CatalogueRow { name: string; title: string | null; geometry_type: string; srid: number; properties: Record<string, AttributeType> }

const toDef = (row: CatalogueRow): CollectionDef => ({
  name: row.name, title: row.title, geometryType: row.geometry_type as GeometryType, srid: row.srid, properties: row.properties,
});

export async function listCollections(db: Database, schema: string): Promise<CollectionDef[]> {
  const { rows } = await sql<CatalogueRow>`
    select name, title, geometry_type, srid, properties from ${sql.id(schema, CATALOGUE)} order by name`.execute(db);
  return rows.map(toDef);
}

export async function findCollection(db: Database, schema: string, name: string): Promise<CollectionDef | undefined> {
  const { rows } = await sql<CatalogueRow>`
    select name, title, geometry_type, srid, properties from ${sql.id(schema, CATALOGUE)} where name = ${name}`.execute(db);
  return rows[0] ? toDef(rows[0]) : undefined;
}

export async function isKnownSrid(db: Database, srid: number): Promise<boolean> {
  const { rows } = await sql`select 1 from spatial_ref_sys where srid = ${srid}`.execute(db);
  return rows.length > 0;
}

/** Registers the collection; false when the name is taken. */
export async function insertCollection(trx: Database, schema: string, def: CollectionDef): Promise<boolean> {
  const { rows } = await sql`
    insert into ${sql.id(schema, CATALOGUE)} (name, title, geometry_type, srid, properties)
    values (${def.name}, ${def.title}, ${def.geometryType}, ${def.srid}, ${JSON.stringify(def.properties)}::jsonb)
    on conflict (name) do nothing
    returning name`.execute(trx);
  return rows.length > 0;
}

export async function createCollectionTable(trx: Database, schema: string, def: CollectionDef): Promise<void> {
  const attributes = Object.entries(def.properties).map(([name, type]) => sql`, ${sql.id(name)} ${sql.raw(COLUMN_TYPES[type])}`);
  // A typmod cannot be a parameter; the geometry type comes from a fixed list and the srid is an integer.
  const geometry = sql.raw(`geometry(${def.geometryType}, ${Math.trunc(def.srid)})`);
  await sql`
    create table ${sql.id(schema, def.name)} (
      fid bigint generated always as identity primary key,
      geom ${geometry} not null
      ${sql.join(attributes, sql``)}
    )`.execute(trx);
  // Unnamed: PostgreSQL picks a free name, which a 63-character collection name would not leave room for.
  await sql`create index on ${sql.id(schema, def.name)} using gist (geom)`.execute(trx);
  await watchPayloadTable(trx, schema, def.name);
}

/** Unregisters the collection and drops its table; false when there was none. */
export async function dropCollection(trx: Database, schema: string, name: string): Promise<boolean> {
  const { rows } = await sql`delete from ${sql.id(schema, CATALOGUE)} where name = ${name} returning name`.execute(trx);
  if (rows.length === 0) return false;
  await sql`drop table if exists ${sql.id(schema, name)}`.execute(trx);
  return true;
}

export interface CollectionStats { featureCount: number; bbox: [number, number, number, number] | null }

/** A collection's extent as a map layer needs it: in its own SRID, and as WGS 84 longitude/latitude. */
export interface LayerExtent { native: [number, number, number, number]; wgs84: [number, number, number, number] }

/**
 * The extent of each collection's features (null while empty): one `st_extent` per table, its box
 * transformed to WGS 84 (only the box's corners are transformed, not every feature).
 */
export async function collectionExtents(db: Database, schema: string, collections: readonly CollectionDef[]): Promise<Map<string, LayerExtent | null>> {
  const extents = new Map<string, LayerExtent | null>();
  for (const collection of collections) {
    const { rows } = await sql<{ minx: number | null; miny: number; maxx: number; maxy: number; wminx: number; wminy: number; wmaxx: number; wmaxy: number }>`
      select st_xmin(e) as minx, st_ymin(e) as miny, st_xmax(e) as maxx, st_ymax(e) as maxy,
             st_xmin(w) as wminx, st_ymin(w) as wminy, st_xmax(w) as wmaxx, st_ymax(w) as wmaxy
      from (select e, st_transform(st_setsrid(e::geometry, ${Math.trunc(collection.srid)}), 4326) as w
            from (select st_extent(geom)::box3d as e from ${sql.id(schema, collection.name)}) s) t`.execute(db);
    const row = rows[0];
    extents.set(collection.name, !row || row.minx === null ? null : {
      native: [row.minx, row.miny, row.maxx, row.maxy], wgs84: [row.wminx, row.wminy, row.wmaxx, row.wmaxy],
    });
  }
  return extents;
}

/** A collection's feature count and extent (in its own SRID and in WGS 84) in one scan: what OGC API's collection documents show. */
export async function collectionSummary(db: Database, schema: string, def: CollectionDef): Promise<CollectionStats & { wgs84: LayerExtent['wgs84'] | null }> {
  const { rows } = await sql<{ n: number; minx: number | null; miny: number; maxx: number; maxy: number; wminx: number; wminy: number; wmaxx: number; wmaxy: number }>`
    select n, st_xmin(e) as minx, st_ymin(e) as miny, st_xmax(e) as maxx, st_ymax(e) as maxy,
           st_xmin(w) as wminx, st_ymin(w) as wminy, st_xmax(w) as wmaxx, st_ymax(w) as wmaxy
    from (select n, e, st_transform(st_setsrid(e::geometry, ${Math.trunc(def.srid)}), 4326) as w
          from (select count(*)::int as n, st_extent(geom)::box3d as e from ${sql.id(schema, def.name)}) s) t`.execute(db);
  const row = rows[0]!;
  if (row.minx === null) return { featureCount: row.n, bbox: null, wgs84: null };
  return { featureCount: row.n, bbox: [row.minx, row.miny, row.maxx, row.maxy], wgs84: [row.wminx, row.wminy, row.wmaxx, row.wmaxy] };
}

/** The earliest and latest value of a date-time attribute (null while it has none). */
export async function dateTimeSpan(db: Database, schema: string, collection: string, attribute: string): Promise<{ start: Date | null; end: Date | null }> {
  const { rows } = await sql<{ first: Date | string | null; last: Date | string | null }>`
    select min(${sql.id(attribute)}) as first, max(${sql.id(attribute)}) as last from ${sql.id(schema, collection)}`.execute(db);
  const at = (value: Date | string | null | undefined) => (value ? new Date(value) : null);
  return { start: at(rows[0]?.first), end: at(rows[0]?.last) };
}
