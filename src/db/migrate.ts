import { Migrator, sql } from 'kysely';
import type { Database } from './client.js';
import { migrations } from './migrations/index.js';
import { StartRefusedError } from './start-errors.js';

/** Kysely's record of the applied migrations. */
const MIGRATION_TABLE = 'kysely_migration';

/**
 * Applies the committed migrations. On PostgreSQL Kysely's migrator holds an advisory lock, so two
 * processes starting together on one database never both migrate. A database migrated by a newer
 * release is refused before anything is applied: this program's queries may not fit its tables.
 */
export async function migrateToLatest(db: Database, applied?: readonly string[]): Promise<void> {
  refuseNewerSchema(applied ?? await appliedMigrations(db));
  // Migrations are written on parallel branches (0002 may land after a database applied 0003);
  // they are independent, so one applied out of order is fine.
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations }, allowUnorderedMigrations: true });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((result) => result.status === 'Error');
    throw new Error(`Migration ${failed?.migrationName ?? '(unknown)'} failed: ${(error as Error).message}`, { cause: error });
  }
}

/** Whether some committed migration is not among `applied` (a start will create or alter tables). */
export function hasPendingMigrations(applied: readonly string[]): boolean {
  const done = new Set(applied);
  return Object.keys(migrations).some((name) => !done.has(name));
}

/**
 * An old replica started after a newer one migrated (a rollback, a rolling update gone back) would
 * otherwise fail later, somewhere, on a column it does not know; it stops at once with one line.
 */
function refuseNewerSchema(applied: readonly string[]): void {
  const unknown = applied.filter((name) => !(name in migrations)).sort();
  if (unknown.length === 0) return;
  const latest = Object.keys(migrations).sort().at(-1);
  throw new StartRefusedError(
    `database schema is newer than this program: migration${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} ${unknown.length > 1 ? 'were' : 'was'} applied by a newer release ` +
    `(this one knows up to ${latest}); run that release or a later one`,
  );
}

/** The names of the migrations this database has applied (none before the first start). */
export async function appliedMigrations(db: Database): Promise<string[]> {
  const { rows: [table] } = await sql<{ present: boolean }>`select to_regclass(${MIGRATION_TABLE}) is not null as present`.execute(db);
  if (!table?.present) return [];
  const { rows } = await sql<{ name: string }>`select name from ${sql.table(MIGRATION_TABLE)}`.execute(db);
  return rows.map((row) => row.name);
}
