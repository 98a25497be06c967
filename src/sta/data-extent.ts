import { sql } from 'kysely';
import type { Database } from '../db/client.js';

/** What a SensorThings API's data spans: its features' box (WGS 84) and its Observations' phenomenon times. */
export interface StaDataExtent { bbox: [number, number, number, number] | null; start: Date | null; end: Date | null }

/**
 * From the streams' derived columns (kept by triggers, one row per stream: cheap at any number of
 * Observations) and the Things' Locations. The box needs PostGIS to read the GeoJSON; without it,
 * or when a stored geometry is one PostGIS refuses, the box is null.
 */
export async function staDataExtent(db: Database, schema: string, postgis: boolean): Promise<StaDataExtent> {
  const { rows } = await sql<{ start: Date | null; end: Date | null }>`
    select min(s) as start, max(e) as end from (
      select phenomenon_time_start as s, phenomenon_time_end as e from ${sql.id(schema, 'datastreams')}
      union all
      select phenomenon_time_start, phenomenon_time_end from ${sql.id(schema, 'multi_datastreams')}
    ) t`.execute(db);
  const times = rows[0] ?? { start: null, end: null };
  return { bbox: postgis ? await featureBox(db, schema) : null, start: asDate(times.start), end: asDate(times.end) };
}

async function featureBox(db: Database, schema: string): Promise<[number, number, number, number] | null> {
  // A Location may be a GeoJSON Feature: its geometry is what is placed.
  const geometry = (column: string) => sql`st_geomfromgeojson((case when ${sql.ref(column)}->>'type' = 'Feature' then ${sql.ref(column)}->'geometry' else ${sql.ref(column)} end)::text)`;
  try {
    const { rows } = await sql<{ minx: number | null; miny: number; maxx: number; maxy: number }>`
      select st_xmin(e) as minx, st_ymin(e) as miny, st_xmax(e) as maxx, st_ymax(e) as maxy from (
        select st_extent(g)::box3d as e from (
          select ${geometry('observed_area')} as g from ${sql.id(schema, 'datastreams')} where observed_area is not null
          union all
          select ${geometry('observed_area')} from ${sql.id(schema, 'multi_datastreams')} where observed_area is not null
          union all
          select ${geometry('location')} from ${sql.id(schema, 'locations')}
        ) g
      ) s`.execute(db);
    const row = rows[0];
    return !row || row.minx === null ? null : [row.minx, row.miny, row.maxx, row.maxy];
  } catch {
    return null;
  }
}

const asDate = (value: Date | string | null) => (value === null ? null : new Date(value));
