import { sql, type RawBuilder } from 'kysely';
import { COLUMN_TYPES } from '../collections.repo.js';
import { compileCql2Text } from '../cql2/index.js';
import type { CollectionDef } from '../types.js';
import type { ItemsQuery } from './items-params.js';

/** Bounds of a CQL2 filter: its text and its nesting (the same as a SensorThings `$filter`'s). */
export interface FilterLimits { maxBytes: number; maxDepth: number }

/**
 * The SQL conditions of an items query, every value a parameter: the box (transformed into the
 * collection's CRS), the datetime on its first date-time property, the property filters, the CQL2
 * filter. Names come from the collection's definition.
 */
export function itemsConditions(query: ItemsQuery, def: CollectionDef, limits: FilterLimits): RawBuilder<unknown>[] {
  const conditions: RawBuilder<unknown>[] = [];
  if (query.bbox) {
    const [minx, miny, maxx, maxy] = query.bbox.box;
    const envelope = sql`st_makeenvelope(${minx}::double precision, ${miny}::double precision, ${maxx}::double precision, ${maxy}::double precision, ${query.bbox.crs.srid}::integer)`;
    conditions.push(sql`st_intersects(geom, ${query.bbox.crs.srid === def.srid ? envelope : sql`st_transform(${envelope}, ${def.srid}::integer)`})`);
  }
  if (query.datetime) {
    const column = sql.id(query.datetime.property);
    const { start, end, endExclusive } = query.datetime;
    if (start && end && start.getTime() === end.getTime() && !endExclusive) conditions.push(sql`${column} = ${start.toISOString()}::timestamptz`);
    else {
      if (start) conditions.push(sql`${column} >= ${start.toISOString()}::timestamptz`);
      if (end) conditions.push(endExclusive ? sql`${column} < ${end.toISOString()}::timestamptz` : sql`${column} <= ${end.toISOString()}::timestamptz`);
    }
  }
  for (const { property, type, value } of query.equals) {
    conditions.push(sql`${sql.id(property)} = ${value}::${sql.raw(COLUMN_TYPES[type])}`);
  }
  if (query.filter) {
    conditions.push(compileCql2Text(query.filter.text, { properties: def.properties, srid: def.srid }, {
      literalSrid: query.filter.crs.srid, literalLatitudeFirst: query.filter.crs.latitudeFirst, ...limits,
    }));
  }
  return conditions;
}
