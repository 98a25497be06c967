import { sql, type Kysely } from 'kysely';

/**
 * Runs a script of SQL statements one by one. PGlite's query path uses the extended protocol,
 * which takes a single statement, so a migration script is split at the semicolons that end a line.
 */
export async function runStatements(db: Kysely<any>, script: string): Promise<void> {
  const statements = script
    .split(/;\s*$/m)
    .map((statement) => statement.trim())
    .filter((statement) => statement.replace(/--.*$/gm, '').trim() !== '');
  for (const statement of statements) await sql.raw(statement).execute(db);
}
