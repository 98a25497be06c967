import { mkdirSync } from 'node:fs';
import { Kysely, PGliteDialect, PostgresDialect } from 'kysely';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { DB } from './schema.js';
import { initialisePgliteDirectory } from './pglite-first-start.js';

export type Database = Kysely<DB>;

export interface DatabaseTarget {
  /** A PostgreSQL connection string; null means the embedded PGlite database. */
  url: string | null;
  /** Where PGlite keeps its files; null keeps them in memory (tests). */
  dataDir: string | null;
  poolSize?: number;
}

// int8 (count(*)) arrives as a string by default; our counts always fit in a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

// PGlite's defaults size the buffers for a server (128 MB shared_buffers); an embedded,
// single-connection database needs far less, and this saves about 150 MB of resident memory.
const PGLITE_SETTINGS = ['shared_buffers=16MB', 'work_mem=4MB', 'maintenance_work_mem=16MB', 'temp_buffers=2MB', 'wal_buffers=1MB'];

export function openDatabase(target: DatabaseTarget): Database {
  if (target.url) {
    const pool = new pg.Pool({ connectionString: target.url, max: target.poolSize ?? 10 });
    // An idle client that loses its connection (server restart, terminated backend) emits 'error';
    // the pool drops that client and the next query gets a fresh one, so the process must not crash.
    pool.on('error', () => {});
    return new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  }
  if (target.dataDir) {
    mkdirSync(target.dataDir, { recursive: true });
    initialisePgliteDirectory(target.dataDir, PGLITE_SETTINGS);
  }
  const pglite = new PGlite(target.dataDir ?? undefined, {
    parsers: { 20: (value: string) => Number(value) },
    postgresqlconf: PGLITE_SETTINGS,
  });
  return new Kysely<DB>({ dialect: new PGliteDialect({ pglite }) });
}
