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
    const found = await postgisState(db);
    if (found.installed) return true;
    if (!found.available) return false;
    await sql`create extension if not exists postgis`.execute(db);
    return true;
  } catch (error) {
    // Replicas starting together on a new database all try to create it, and `if not exists` does
    // not stop the losers from failing on the catalogue's unique index: another process made it.
    if (await postgisState(db).then((state) => state.installed, () => false)) return true;
    log.warn({ err: { message: (error as Error).message } }, 'PostGIS is available but could not be enabled; geospatial filters will answer 400');
    return false;
  }
}

async function postgisState(db: Database): Promise<{ installed: boolean; available: boolean }> {
  const { rows } = await sql<{ installed: boolean; available: boolean }>`
    select exists (select 1 from pg_extension where extname = 'postgis') as installed,
           exists (select 1 from pg_available_extensions where name = 'postgis') as available`.execute(db);
  return rows[0]!;
}
