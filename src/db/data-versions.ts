import { sql } from 'kysely';
import type { Database } from './client.js';

/**
 * A storage schema's data version: a counter and a time that move when a transaction that wrote
 * any of the schema's payload tables commits (migration 0023 holds the triggers' functions). Bulk
 * downloads take their ETag and Last-Modified from it, so a download is validated without reading
 * its data.
 */
export interface DataVersion {
  /** 0 while nothing was written since the schema was watched. */
  version: number;
  /** The commit of the last change; for version 0, when the schema began to be watched. */
  changedAt: Date;
}

/**
 * Makes every write to the table (rows or a TRUNCATE) move its schema's version; idempotent (a
 * provisioning step runs again on every release). Statement-level: a bulk write costs one call.
 */
export async function watchPayloadTable(trx: Database, schema: string, table: string): Promise<void> {
  // Migrations 0019 and 0020 provision SensorThings schemas with today's code before 0023 has made
  // the trigger's function: those tables are watched by 0023 itself, when it runs after them.
  const { rows } = await sql<{ ready: boolean }>`select to_regprocedure('note_payload_data_change()') is not null as ready`.execute(trx);
  if (!rows[0]?.ready) return;
  await sql`create or replace trigger payload_data_change
    after insert or update or delete or truncate on ${sql.id(schema, table)}
    for each statement execute function note_payload_data_change()`.execute(trx);
  await sql`insert into payload_data_versions (schema_name, version, changed_at) values (${schema}, 0, now())
    on conflict (schema_name) do nothing`.execute(trx);
}

export async function readDataVersion(db: Database, schema: string): Promise<DataVersion> {
  const { rows } = await sql<{ version: number; changed_at: Date }>`
    select version, changed_at from payload_data_versions where schema_name = ${schema}`.execute(db);
  const row = rows[0];
  // A schema provisioned before its tables were watched and never written since: nothing is known.
  return row ? { version: Number(row.version), changedAt: row.changed_at } : { version: 0, changedAt: new Date(0) };
}
