import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kysely, PostgresDialect, type PostgresPool } from 'kysely';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import pg from 'pg';
import type { DB } from './schema.js';
import { initialisePgliteDirectory } from './pglite-first-start.js';
import { PgliteDialect } from './pglite-dialect.js';
import { describeConnectionError, isConnectionRefused } from './connection-errors.js';
import { namingClient, StatementNames } from './prepared-statements.js';
import { processWrites, type LocalWrites } from './local-writes.js';

/** Statement texts named per process unless the target says otherwise (DATABASE_PREPARED_STATEMENTS). */
export const DEFAULT_PREPARED_STATEMENTS = 200;

export type Database = Kysely<DB>;

export interface DatabaseTarget {
  /** A PostgreSQL connection string; null means the embedded PGlite database. */
  url: string | null;
  /** Where PGlite keeps its files; null keeps them in memory (tests). */
  dataDir: string | null;
  poolSize?: number;
  /** PostgreSQL: how many statement texts a process runs as named (prepared) statements; 0: none (see prepared-statements.ts). */
  preparedStatements?: number;
  /**
   * PGlite: a data directory to start from (a `pgliteSnapshot` of a database already made and
   * migrated) when there is none yet, instead of creating one: the test suites start hundreds of
   * databases, and creating each from nothing costs seconds of CPU. An existing DATA_DIR ignores it.
   */
  pgliteSnapshot?: Blob;
}

/** Where connection trouble is reported; the process carries on either way. */
export interface ConnectionLog { warn(details: object, message: string): void }

// int8 (count(*)) arrives as a string by default; our counts always fit in a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

// PGlite's defaults size the buffers for a server (128 MB shared_buffers); an embedded,
// single-connection database needs far less, and this saves about 150 MB of resident memory.
const PGLITE_SETTINGS = ['shared_buffers=16MB', 'work_mem=4MB', 'maintenance_work_mem=16MB', 'temp_buffers=2MB', 'wal_buffers=1MB'];

// A request waits at most this long for a connection, so that nothing hangs on a dead database.
const CONNECTION_TIMEOUT_MS = 5_000;
// A refused connection is tried again briefly (a database restarting, a proxy failing over) before
// the request answers 503; nothing was sent, so trying again cannot apply anything twice.
const CONNECT_RETRY_DELAYS_MS = [100, 300];

/** The database's connections by state, as /metrics reports them. */
export interface ConnectionCounts { total: number; idle: number; waiting: number }

// Kysely hides its pool; what each opened database counts is kept beside it, not on it.
const connectionCounters = new WeakMap<Database, () => ConnectionCounts>();

/**
 * PostgreSQL: the pool's open connections, those idle, and the requests waiting for one. PGlite:
 * its single connection, idle or held, and the requests waiting for it. Null for a database not
 * opened by openDatabase.
 */
export function connectionCountsOf(db: Database): ConnectionCounts | null {
  return connectionCounters.get(db)?.() ?? null;
}

export function openDatabase(target: DatabaseTarget, log: ConnectionLog = { warn: () => {} }): Database {
  // Every database of the process reports to one count: a component with a pool of its own (the
  // MQTT broker's) sees the writes made through the others.
  const writes = processWrites;
  if (target.url) {
    const pool = openPool(target.url, target.poolSize ?? 10, target.preparedStatements ?? DEFAULT_PREPARED_STATEMENTS, writes, log);
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: pool.kysely }) });
    connectionCounters.set(db, () => ({ total: pool.pg.totalCount, idle: pool.pg.idleCount, waiting: pool.pg.waitingCount }));
    return db;
  }
  // A new directory starts from the snapshot when there is one (PGlite unpacks it there).
  const fromSnapshot = target.pgliteSnapshot && !(target.dataDir && existsSync(join(target.dataDir, 'PG_VERSION'))) ? target.pgliteSnapshot : null;
  if (target.dataDir) {
    mkdirSync(target.dataDir, { recursive: true });
    if (!fromSnapshot) initialisePgliteDirectory(target.dataDir, PGLITE_SETTINGS);
  }
  const pglite = new PGlite({
    ...(target.dataDir ? { dataDir: target.dataDir } : {}),
    ...(fromSnapshot ? { loadDataDir: fromSnapshot } : {}),
    parsers: { 20: (value: string) => Number(value) },
    postgresqlconf: PGLITE_SETTINGS,
    // Trigram indexes keep substring searches (`q=`) fast on large lists; PostgreSQL ships it too.
    extensions: { pg_trgm },
  });
  const dialect = new PgliteDialect(pglite, writes);
  const db = new Kysely<DB>({ dialect });
  connectionCounters.set(db, () => dialect.connectionCounts());
  pglites.set(db, pglite);
  return db;
}

const pglites = new WeakMap<Database, PGlite>();

/** The data directory of a PGlite database opened by openDatabase, as a tarball to start others from. */
export async function pgliteSnapshot(db: Database): Promise<Blob> {
  const pglite = pglites.get(db);
  if (!pglite) throw new Error('not a PGlite database opened by openDatabase');
  return pglite.dumpDataDir('none');
}

function openPool(url: string, size: number, preparedStatements: number, writes: LocalWrites, log: ConnectionLog): { pg: pg.Pool; kysely: PostgresPool } {
  const names = preparedStatements > 0 ? new StatementNames(preparedStatements) : null;
  const pool = new pg.Pool({ connectionString: url, max: size, connectionTimeoutMillis: CONNECTION_TIMEOUT_MS });
  // A client whose connection drops (terminated backend, database restart, network) emits 'error',
  // idle or checked out; unheard, that error would end the process. The query under way fails on
  // its own, and the pool discards the broken client when it comes back.
  const onClientError = (err: Error) => log.warn({ err: { message: err.message, code: (err as { code?: string }).code } }, `database connection lost (${describeConnectionError(err)})`);
  pool.on('connect', (client) => client.on('error', onClientError));
  pool.on('error', onClientError);
  const kysely: PostgresPool = {
    connect: async () => {
      for (let attempt = 0; ; attempt++) {
        try {
          const client = await pool.connect();
          return trackingClient(names ? namingClient(client, names) : client, writes.connectionTracker()) as unknown as pg.PoolClient;
        } catch (error) {
          const delay = CONNECT_RETRY_DELAYS_MS[attempt];
          if (delay === undefined || !isConnectionRefused(error)) throw error;
          await sleep(delay);
        }
      }
    },
    end: () => pool.end(),
  };
  return { pg: pool, kysely };
}

/** What Kysely calls on a pooled client, with every statement reported to `track` once it is done. */
function trackingClient(client: Pick<pg.PoolClient, 'release'> & { query(text: string, values: unknown[]): Promise<pg.QueryResult> }, track: (text: string) => void) {
  return {
    async query(text: string, values: unknown[]) {
      try {
        return await client.query(text, values);
      } finally {
        track(text);
      }
    },
    release: () => client.release(),
  };
}
