import pg from 'pg';
import { oneAtATime } from '../util/one-at-a-time.js';
import type { IngestLog } from './types.js';

/**
 * Which process runs a pipeline. On PostgreSQL: a session advisory lock per pipeline, held on
 * one connection of this process that does nothing else. A process that dies (`kill -9`, a lost
 * machine) loses its connection and with it every lock, at once; a process that stops talking
 * (frozen, cut off) is disconnected by the server after `idle_session_timeout`, so another
 * process takes over within the runtime's reconcile period plus that timeout. On embedded PGlite
 * there is one process: it holds every lease.
 */
export interface Leases {
  /** Takes the pipeline's lease if no other process holds it; true when this process holds it now. */
  tryAcquire(pipelineId: string): Promise<boolean>;
  release(pipelineId: string): Promise<void>;
  /** Whether this process still holds the pipeline's lease (false once the lease connection was lost). */
  holds(pipelineId: string): boolean;
  /** A round trip on the lease connection (reconnecting it when lost), so that a lost one is noticed. */
  heartbeat(): Promise<void>;
  close(): Promise<void>;
}

/** Embedded PGlite: one process, every lease its own. */
export class LocalLeases implements Leases {
  async tryAcquire(): Promise<boolean> { return true; }
  async release(): Promise<void> {}
  holds(): boolean { return true; }
  async heartbeat(): Promise<void> {}
  async close(): Promise<void> {}
}

// The first key of the two-key advisory locks: 'PIPE'. Other advisory locks of the service use one-key locks.
const LOCK_CLASS = 0x50495045;

export class PostgresLeases implements Leases {
  readonly #url: string;
  readonly #idleTimeoutSeconds: number;
  readonly #log: IngestLog;
  #client: pg.Client | null = null;
  #connecting: Promise<pg.Client> | null = null;
  /** The leases taken on the current connection (all gone with it). */
  #held = new Set<string>();
  #closed = false;
  /** The reconcile pass and a pipeline stopping meanwhile both use the connection: their statements take turns. */
  readonly #inTurn = oneAtATime();

  constructor(url: string, log: IngestLog, idleTimeoutSeconds = 8) {
    this.#url = url;
    this.#log = log;
    this.#idleTimeoutSeconds = idleTimeoutSeconds;
  }

  async tryAcquire(pipelineId: string): Promise<boolean> {
    if (this.#held.has(pipelineId)) return true;
    return this.#inTurn(async () => {
      const client = await this.#connection();
      const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_lock($1, hashtext($2)) as locked', [LOCK_CLASS, pipelineId]);
      if (rows[0]?.locked) this.#held.add(pipelineId);
      return rows[0]?.locked === true;
    });
  }

  async release(pipelineId: string): Promise<void> {
    if (!this.#held.delete(pipelineId)) return;
    await this.#inTurn(async () => {
      // Only on the connection that holds it: a new one holds nothing.
      await this.#client?.query('select pg_advisory_unlock($1, hashtext($2))', [LOCK_CLASS, pipelineId]);
    }).catch(() => {});
  }

  holds(pipelineId: string): boolean {
    return this.#held.has(pipelineId);
  }

  async heartbeat(): Promise<void> {
    try {
      await this.#inTurn(async () => (await this.#connection()).query('select 1'));
    } catch {
      // lost: #lost cleared what was held; the runtime stops those pipelines and tries again later
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#held.clear();
    const client = this.#client;
    this.#client = null;
    await client?.end().catch(() => {});
  }

  #connection(): Promise<pg.Client> {
    if (this.#client) return Promise.resolve(this.#client);
    if (this.#closed) return Promise.reject(new Error('leases closed'));
    this.#connecting ??= (async () => {
      const client = new pg.Client({ connectionString: this.#url, keepAlive: true, application_name: 'pipeline-leases' });
      client.on('error', (error) => this.#lost(client, error));
      client.on('end', () => this.#lost(client, null));
      try {
        await client.connect();
        // A process that stops talking loses its leases after this long, so that another takes over.
        // PostgreSQL before 14 has no such setting: leases then end only with the connection.
        await client.query(`set idle_session_timeout = '${this.#idleTimeoutSeconds}s'`).catch((error: { code?: string }) => {
          if (error.code !== '42704') throw error;
        });
      } catch (error) {
        client.end().catch(() => {});
        throw error;
      }
      this.#client = client;
      return client;
    })().finally(() => { this.#connecting = null; });
    return this.#connecting;
  }

  #lost(client: pg.Client, error: Error | null): void {
    if (this.#client !== client) return;
    this.#client = null;
    if (this.#held.size > 0 && !this.#closed) {
      this.#log.warn({ leases: this.#held.size, err: error?.message }, 'pipeline lease connection lost: its pipelines stop here and may run elsewhere');
    }
    this.#held.clear();
  }
}
