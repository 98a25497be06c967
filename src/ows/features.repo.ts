import { sql, type RawBuilder } from 'kysely';
import type { Database } from '../db/client.js';
import { COLUMN_TYPES } from './collections.repo.js';
import type { AttributeValue, FeatureRow } from './geojson.js';
import type { CollectionDef } from './types.js';

/** The rows of one collection's table; the collection definition names its columns. */

/** A stored feature as GeoJSON. */
export interface StoredFeature {
  type: 'Feature';
  id: number;
  geometry: unknown;
  properties: Record<string, AttributeValue>;
}

export type Bbox = [number, number, number, number];

/** GeoJSON text → the column's geometry: a third coordinate is dropped (the column is 2D). */
const geometryOf = (text: unknown, srid: number) => sql`st_setsrid(st_force2d(st_geomfromgeojson(${text})), ${srid})`;
export const geometryOfColumn = (column: RawBuilder<unknown>, srid: number) => sql`st_setsrid(st_force2d(st_geomfromgeojson(${column})), ${srid})`;

/**
 * Adds the features in one statement: one array parameter per column, unnested in input order.
 * Identities are drawn in that order, so ascending fids are the input order.
 */
export async function insertFeatures(trx: Database, schema: string, def: CollectionDef, rows: FeatureRow[]): Promise<number[]> {
  const attributes = Object.keys(def.properties);
  const arrays = [
    sql`${rows.map((row) => row.geometry)}::text[]`,
    ...attributes.map((name) => sql`${rows.map((row) => row.values[name] ?? null)}::${sql.raw(COLUMN_TYPES[def.properties[name]!])}[]`),
  ];
  const aliases = ['g', ...attributes.map((_, i) => `a${i}`)];
  const { rows: inserted } = await sql<{ fid: string }>`
    insert into ${sql.id(schema, def.name)} (geom${sql.join(attributes.map((name) => sql`, ${sql.id(name)}`), sql``)})
    select ${geometryOfColumn(sql.ref('u.g'), def.srid)}${sql.join(attributes.map((_, i) => sql`, ${sql.ref(`u.a${i}`)}`), sql``)}
    from unnest(${sql.join(arrays)}) with ordinality as u(${sql.join(aliases.map((alias) => sql.id(alias)))}, ord)
    order by u.ord
    returning fid`.execute(trx);
  return inserted.map((row) => Number(row.fid)).sort((a, b) => a - b);
}

/** What an items read selects: its conditions (already SQL), the page's place and size, and the CRS of the answer. */
export interface FeatureSelection {
  conditions: ReadonlyArray<RawBuilder<unknown>>;
  limit: number;
  position: { after: number } | { before: number } | { offset: number };
  output: { srid: number; latitudeFirst: boolean };
}

const whereAll = (conditions: ReadonlyArray<RawBuilder<unknown>>) => (conditions.length > 0 ? sql`where ${sql.join(conditions, sql` and `)}` : sql``);

/**
 * A page of features in fid order. `after`/`before` place the page by fid (the `next`/`prev`
 * links: a feature added or deleted meanwhile moves no other across a page boundary), `offset` by count.
 */
export async function readFeatures(db: Database, schema: string, def: CollectionDef, selection: FeatureSelection): Promise<StoredFeature[]> {
  const { position } = selection;
  const keyset = 'after' in position ? [sql`fid > ${position.after}`] : 'before' in position ? [sql`fid < ${position.before}`] : [];
  const order = 'before' in position ? sql`fid desc` : sql`fid`;
  const offset = 'offset' in position ? position.offset : 0;
  const { rows } = await sql<Record<string, unknown>>`
    select ${featureColumns(def, outputGeometry(def, selection.output))} from ${sql.id(schema, def.name)} ${whereAll([...selection.conditions, ...keyset])}
    order by ${order} limit ${selection.limit} offset ${offset}`.execute(db);
  const features = rows.map((row) => toFeature(row, def));
  if ('before' in position) features.reverse();
  return features;
}

/** How many features match the conditions. */
export async function countFeatures(db: Database, schema: string, def: CollectionDef, conditions: ReadonlyArray<RawBuilder<unknown>>): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.id(schema, def.name)} ${whereAll(conditions)}`.execute(db);
  return rows[0]!.n;
}

/** The geometry column as the answer's CRS wants it: transformed, and with its axes swapped when latitude comes first. */
function outputGeometry(def: CollectionDef, output: FeatureSelection['output']): RawBuilder<unknown> {
  const transformed = output.srid === def.srid ? sql`geom` : sql`st_transform(geom, ${output.srid}::integer)`;
  return output.latitudeFirst ? sql`st_flipcoordinates(${transformed})` : transformed;
}

export async function readFeature(db: Database, schema: string, def: CollectionDef, fid: number, output?: FeatureSelection['output']): Promise<StoredFeature | undefined> {
  const { rows } = await sql<Record<string, unknown>>`
    select ${featureColumns(def, output ? outputGeometry(def, output) : undefined)} from ${sql.id(schema, def.name)} where fid = ${fid}`.execute(db);
  return rows[0] ? toFeature(rows[0], def) : undefined;
}

/** Replaces geometry and every attribute (an attribute left out becomes null); false when there is no such feature. */
export async function replaceFeature(db: Database, schema: string, def: CollectionDef, fid: number, row: FeatureRow): Promise<boolean> {
  const assignments = [
    sql`geom = ${geometryOf(row.geometry, def.srid)}`,
    ...Object.entries(def.properties).map(([name, type]) => sql`${sql.id(name)} = ${row.values[name] ?? null}::${sql.raw(COLUMN_TYPES[type])}`),
  ];
  const { rows } = await sql`
    update ${sql.id(schema, def.name)} set ${sql.join(assignments)} where fid = ${fid} returning fid`.execute(db);
  return rows.length > 0;
}

export async function deleteFeature(db: Database, schema: string, def: CollectionDef, fid: number): Promise<boolean> {
  const { rows } = await sql`delete from ${sql.id(schema, def.name)} where fid = ${fid} returning fid`.execute(db);
  return rows.length > 0;
}

/** fid, the geometry's select item, then the attributes: what toFeature reads. */
const selectFeature = (def: CollectionDef, geometry: RawBuilder<unknown>) =>
  sql.join([sql`fid`, geometry, ...Object.keys(def.properties).map((name) => sql.id(name))]);
const featureColumns = (def: CollectionDef, geometry: RawBuilder<unknown> = sql`geom`) => selectFeature(def, sql`st_asgeojson(${geometry})::json as geom`);

function toFeature(row: Record<string, unknown>, def: CollectionDef): StoredFeature {
  const properties: Record<string, AttributeValue> = {};
  for (const [name, type] of Object.entries(def.properties)) {
    const value = row[name];
    // pg hands bigint over as text and timestamptz as a Date.
    if (value === null || value === undefined) properties[name] = null;
    else if (type === 'integer') properties[name] = Number(value);
    else if (type === 'date-time') properties[name] = (value as Date).toISOString();
    else properties[name] = value as AttributeValue;
  }
  return { type: 'Feature', id: Number(row['fid']), geometry: row['geom'], properties };
}

/** A feature of a download: its geometry in WGS 84 longitude/latitude, as GeoJSON text or WKT. */
export interface DownloadedFeature { fid: number; geometry: string; properties: Record<string, AttributeValue> }

/**
 * The next `limit` features after fid `after`, in fid order: a download reads the collection in such
 * batches, each a short statement on the primary key's index.
 */
export async function readFeatureBatch(
  db: Database, schema: string, def: CollectionDef, after: number, limit: number, encoding: 'geojson' | 'wkt',
): Promise<DownloadedFeature[]> {
  const lonLat = def.srid === 4326 ? sql`geom` : sql`st_transform(geom, 4326)`;
  const geometry = encoding === 'wkt' ? sql`st_astext(${lonLat}) as geom` : sql`st_asgeojson(${lonLat}) as geom`;
  const { rows } = await sql<Record<string, unknown>>`
    select ${selectFeature(def, geometry)}
    from ${sql.id(schema, def.name)} where fid > ${after} order by fid limit ${limit}`.execute(db);
  return rows.map((row) => {
    const { id, properties } = toFeature(row, def);
    return { fid: id, geometry: row['geom'] as string, properties };
  });
}
