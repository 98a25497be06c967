import { sql, type Kysely } from 'kysely';
import { runStatements } from '../run-statements.js';
import type { Database } from '../client.js';
import { watchPayloadTable } from '../data-versions.js';

/**
 * Each storage schema's data version: what a bulk download's ETag and Last-Modified come from (see
 * data-versions.ts). A statement trigger on every payload table notes, once per transaction and
 * schema, that the schema changed; the note's deferred trigger moves the schema's version and time
 * as the transaction commits, so the version row is locked only for the commit itself (writers of
 * one dataset never wait on each other's open transactions for it), and a reader that sees the new
 * version sees the data it stands for.
 *
 * The schemas provisioned before get their triggers here: every table of a SensorThings schema and
 * every feature collection's table with the collections' own catalogue.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `
    create table payload_data_versions (
      schema_name text primary key,
      version bigint not null,
      changed_at timestamptz not null
    );
    create table payload_data_changes (schema_name text not null);
  `);
  await sql.raw(`
    create function note_payload_data_change() returns trigger language plpgsql as $$
    declare
      noted text := coalesce(current_setting('platform.payload_data_changed', true), '');
      mark text := '|' || tg_table_schema || '|';
    begin
      if split_part(noted, ':', 1) is distinct from txid_current()::text then
        noted := txid_current()::text || ':';
      end if;
      if position(mark in noted) = 0 then
        insert into public.payload_data_changes (schema_name) values (tg_table_schema);
        perform set_config('platform.payload_data_changed', noted || mark, true);
      end if;
      return null;
    end
    $$`).execute(db);
  await sql.raw(`
    create function move_payload_data_version() returns trigger language plpgsql as $$
    begin
      insert into public.payload_data_versions as v (schema_name, version, changed_at)
        values (new.schema_name, 1, clock_timestamp())
        on conflict (schema_name) do update set version = v.version + 1, changed_at = clock_timestamp();
      delete from public.payload_data_changes where ctid = new.ctid;
      return null;
    end
    $$`).execute(db);
  await runStatements(db, `
    create constraint trigger payload_data_changes_at_commit
      after insert on payload_data_changes
      deferrable initially deferred
      for each row execute function move_payload_data_version();
  `);
  const { rows } = await sql<{ schema: string; table: string }>`
    select table_schema as schema, table_name as table from information_schema.tables
    where table_schema like 'ds\\_%' and table_type = 'BASE TABLE' order by 1, 2`.execute(db);
  for (const { schema, table } of rows) await watchPayloadTable(db as unknown as Database, schema, table);
}

export async function down(db: Kysely<any>): Promise<void> {
  const { rows } = await sql<{ schema: string; table: string }>`
    select event_object_schema as schema, event_object_table as table from information_schema.triggers
    where trigger_name = 'payload_data_change' group by 1, 2`.execute(db);
  for (const { schema, table } of rows) await sql`drop trigger if exists payload_data_change on ${sql.id(schema, table)}`.execute(db);
  await runStatements(db, `
    drop table payload_data_changes;
    drop table payload_data_versions;
    drop function move_payload_data_version();
    drop function note_payload_data_change();
  `);
}
