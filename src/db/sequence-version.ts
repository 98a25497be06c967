import { sql } from 'kysely';
import type { Database } from './client.js';

/**
 * The current value of a version sequence (advanced by triggers on what it versions), as text so
 * that it compares exactly. A fresh sequence reports last_value 1 before its first nextval
 * (is_called false): that state reads as 0. `name` is one of our own sequences, never input.
 */
export async function sequenceVersion(db: Database, name: 'access_version' | 'gateway_route_version'): Promise<string> {
  const { rows } = await sql<{ version: string }>`select case when is_called then last_value else 0 end::text as version from ${sql.table(name)}`.execute(db);
  return rows[0]!.version;
}
