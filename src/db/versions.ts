import { sql } from 'kysely';
import type { Database } from './client.js';

/**
 * The gateway's route version (migration 0021): a counter that moves when a change to a published
 * route commits, never before, so routes read after it are at least as new as it says. As text, so
 * that it compares exactly.
 */
export async function routeVersion(db: Database): Promise<string> {
  const { rows } = await sql<{ version: string }>`select version::text as version from gateway_route_version_counter`.execute(db);
  return rows[0]!.version;
}

/**
 * The access version (migration 0014): a counter that moves when an access change commits, never
 * before, so grants read after it are at least as new as it says.
 */
export async function accessVersion(db: Database): Promise<string> {
  const { rows } = await sql<{ version: string }>`select version::text as version from access_version_counter`.execute(db);
  return rows[0]!.version;
}
