import { Migrator } from 'kysely';
import type { Database } from './client.js';
import { migrations } from './migrations/index.js';

/**
 * Applies the committed migrations. On PostgreSQL Kysely's migrator holds an advisory lock, so two
 * processes starting together on one database never both migrate.
 */
export async function migrateToLatest(db: Database): Promise<void> {
  // Migrations are written on parallel branches (0002 may land after a database applied 0003);
  // they are independent, so one applied out of order is fine.
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations }, allowUnorderedMigrations: true });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((result) => result.status === 'Error');
    throw new Error(`Migration ${failed?.migrationName ?? '(unknown)'} failed: ${(error as Error).message}`, { cause: error });
  }
}
