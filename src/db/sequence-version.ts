import { sql } from 'kysely';
import type { Database } from './client.js';

/**
 * The current value of a version sequence (advanced by triggers on what it versions), as text so
 * that it compares exactly. A fresh sequence reports last_value 1 before its first nextval
 * (is_called false): that state reads as 0. `name` is one of our own sequences, never input.
 */
export async function sequenceVersion(db: Database, name: 'gateway_route_version'): Promise<string> {
  const { rows } = await sql<{ version: string }>`select case when is_called then last_value else 0 end::text as version from ${sql.table(name)}`.execute(db);
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
