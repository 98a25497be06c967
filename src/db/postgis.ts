import { sql } from 'kysely';
import type { ConnectionLog, Database } from './client.js';

/**
 * Whether PostGIS serves this database: SensorThings' geospatial filter functions and the map
 * server need it. On a PostgreSQL server that ships it (Debian's postgresql-15-postgis-3) the
 * extension is created once, like pg_trgm; embedded PGlite has none, and geospatial filters then
 * answer 400 naming what they need. Never fails the start: without the privilege to create it,
 * the service runs without it and says so.
 */
export async function enablePostgis(db: Database, isPostgresServer: boolean, log: ConnectionLog): Promise<boolean> {
  if (!isPostgresServer) return false;
  try {
    const { rows } = await sql<{ installed: boolean; available: boolean }>`
      select exists (select 1 from pg_extension where extname = 'postgis') as installed,
             exists (select 1 from pg_available_extensions where name = 'postgis') as available`.execute(db);
    if (rows[0]?.installed) return true;
    if (!rows[0]?.available) return false;
    await sql`create extension if not exists postgis`.execute(db);
    return true;
  } catch (error) {
    log.warn({ err: { message: (error as Error).message } }, 'PostGIS is available but could not be enabled; geospatial filters will answer 400');
    return false;
  }
}
