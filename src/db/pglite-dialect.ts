import {
  CompiledQuery,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import type { PGlite } from '@electric-sql/pglite';
import type { LocalWrites } from './local-writes.js';

/**
 * Kysely over one PGlite instance. Kysely 0.28 (the last release that supports Node 20) has no
 * PGlite dialect, so this is ours: PostgreSQL's adapter, compiler and introspector over a driver
 * that lends PGlite's single connection to one user at a time.
 */
export class PgliteDialect implements Dialect {
  readonly #lock = new ConnectionLock();
  constructor(private readonly pglite: PGlite, private readonly writes: LocalWrites) {}
  /** PGlite's one connection: whether someone holds it, and how many wait for it (for /metrics). */
  connectionCounts(): { total: number; idle: number; waiting: number } {
    return { total: 1, idle: this.#lock.held ? 0 : 1, waiting: this.#lock.waiting };
  }
  createAdapter(): DialectAdapter { return new PostgresAdapter(); }
  createDriver(): Driver { return new PgliteDriver(this.pglite, this.#lock, this.writes.connectionTracker()); }
  createIntrospector(db: Kysely<any>): DatabaseIntrospector { return new PostgresIntrospector(db); }
  createQueryCompiler(): QueryCompiler { return new PostgresQueryCompiler(); }
}

/**
 * A first-in first-out lock. PGlite is one session: a transaction's statements and another
 * request's statements must never interleave on it, so whoever holds the connection holds this.
 */
class ConnectionLock {
  #held = false;
  readonly #waiting: Array<() => void> = [];

  get held(): boolean { return this.#held; }
  get waiting(): number { return this.#waiting.length; }

  async acquire(): Promise<void> {
    if (!this.#held) {
      this.#held = true;
      return;
    }
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  release(): void {
    const next = this.#waiting.shift();
    if (next) next(); // the lock passes straight to the next waiter, so it stays held
    else this.#held = false;
  }
}

const WRITES = new Set(['InsertQueryNode', 'UpdateQueryNode', 'DeleteQueryNode', 'MergeQueryNode']);

class PgliteConnection implements DatabaseConnection {
  /** `track` hears of every statement once it is done (the one connection's LocalWrites tracker). */
  constructor(private readonly pglite: PGlite, private readonly track: (text: string) => void) {}

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    let result;
    try {
      result = await this.pglite.query<R>(compiledQuery.sql, [...compiledQuery.parameters], { rowMode: 'object' });
    } finally {
      this.track(compiledQuery.sql);
    }
    const counted = WRITES.has(compiledQuery.query.kind) || compiledQuery.query.kind === 'RawNode';
    return {
      rows: result.rows,
      ...(counted && result.affectedRows !== undefined ? { numAffectedRows: BigInt(result.affectedRows) } : {}),
    };
  }

  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('PGlite does not stream query results');
  }
}

class PgliteDriver implements Driver {
  readonly #connection: PgliteConnection;
  readonly #lock: ConnectionLock;

  constructor(private readonly pglite: PGlite, lock: ConnectionLock, track: (text: string) => void) {
    this.#lock = lock;
    this.#connection = new PgliteConnection(pglite, track);
  }

  async init(): Promise<void> {
    await this.pglite.waitReady;
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    await this.#lock.acquire();
    return this.#connection;
  }

  async releaseConnection(): Promise<void> {
    this.#lock.release();
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const options = [settings.isolationLevel && `isolation level ${settings.isolationLevel}`, settings.accessMode].filter(Boolean);
    await connection.executeQuery(CompiledQuery.raw(options.length ? `start transaction ${options.join(' ')}` : 'begin'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async destroy(): Promise<void> {
    // Whoever still holds the connection finishes first; closing under a query would fail it.
    await this.#lock.acquire();
    await this.pglite.close();
  }
}
