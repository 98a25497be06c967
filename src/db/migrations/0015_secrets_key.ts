import { sql, type Kysely } from 'kysely';

/**
 * Where a key generated for data source secrets is kept on PostgreSQL when SECRETS_KEY is not
 * set (the embedded database keeps it in a file beside its own). One row per purpose.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table secrets_keys (
    name text primary key,
    key bytea not null check (octet_length(key) = 32),
    created_at timestamptz not null default now()
  )`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table secrets_keys`.execute(db);
}
