import type { Kysely } from 'kysely';
import { runStatements } from '../run-statements.js';

/**
 * Trigram indexes for the partial-match filters (`q`, `name`, `description`: ILIKE '%…%'), which a
 * b-tree cannot serve: without them a search reads every row. pg_trgm ships with PostgreSQL and
 * with PGlite, and is a trusted extension (the database owner may create it).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `
    create extension if not exists pg_trgm;
    create index datasets_name_trgm on datasets using gin (name gin_trgm_ops);
    create index datasets_description_trgm on datasets using gin (description gin_trgm_ops);
    create index groups_name_trgm on groups using gin (name gin_trgm_ops);
    create index groups_description_trgm on groups using gin (description gin_trgm_ops);
  `);
}
