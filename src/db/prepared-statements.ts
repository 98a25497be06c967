import type pg from 'pg';
import { BEGINS, ENDS } from './local-writes.js';

/**
 * PostgreSQL parses and plans every unnamed statement again; for the short reads that make most of
 * our traffic, planning costs more than executing (SensorThings' latest-100 page: 0.58 ms planning
 * against 0.33 ms execution). A named statement is planned once per connection and then executed.
 *
 * Which statements get names: a text seen a second time, up to `maxNamed` texts per process
 * (each pooled connection prepares them on first use and keeps them until it closes). Texts
 * beyond that, or seen once, stay unnamed: dynamic SQL (a dataset's own schema, an `in` list of
 * any length) can never fill a connection with prepared statements. Counting is bounded too.
 */
const NAMEABLE = /^\s*(select|with|insert|update|delete)\b[^;]*$/i;

export class StatementNames {
  private readonly named = new Map<string, string>();
  private readonly seenOnce = new Set<string>();

  constructor(private readonly maxNamed: number, private readonly maxCounted = 10_000) {}

  /**
   * The name to run `text` under, or undefined to run it unnamed. Only single queries and writes
   * are named (never transaction control, DDL or several statements in one text, which the
   * extended protocol would refuse or which gain nothing).
   */
  nameOf(text: string): string | undefined {
    const name = this.named.get(text);
    if (name === undefined && !NAMEABLE.test(text)) return undefined;
    if (name !== undefined || this.named.size >= this.maxNamed) return name;
    if (!this.seenOnce.has(text)) {
      if (this.seenOnce.size >= this.maxCounted) this.seenOnce.clear();
      this.seenOnce.add(text);
      return undefined;
    }
    this.seenOnce.delete(text);
    const fresh = `s${this.named.size}`;
    this.named.set(text, fresh);
    return fresh;
  }
}

/**
 * A prepared statement whose tables changed shape since it was planned ("cached plan must not
 * change result type": `select *` on a table that gained a column, say while another replica
 * migrates during a rolling deploy) fails on that connection until the connection closes.
 */
export const isStalePreparedStatement = (error: unknown) => (error as { code?: unknown })?.code === '0A000';

/** What Kysely needs of a pooled client, with the statements it sends named by `names`. */
export interface NamingClient {
  query(text: string, values: unknown[]): Promise<pg.QueryResult>;
  release(): void;
}

/**
 * A pooled client that runs nameable statements by name, outside transactions only: there a
 * statement gone stale is simply run again unnamed (and the connection closed when released, so
 * that the next one plans afresh), where inside a transaction its failure would have aborted the
 * work. Reads, the statements that gain, mostly run outside transactions anyway.
 */
export function namingClient(client: pg.PoolClient, names: StatementNames): NamingClient {
  let inTransaction = false;
  let stale = false;
  return {
    async query(text, values) {
      const name = inTransaction || stale ? undefined : names.nameOf(text);
      if (name === undefined) {
        if (BEGINS.test(text)) inTransaction = true;
        else if (ENDS.test(text)) inTransaction = false;
        return client.query(text, values);
      }
      try {
        return await client.query({ name, text, values });
      } catch (error) {
        if (!isStalePreparedStatement(error)) throw error;
        stale = true;
        return client.query(text, values);
      }
    },
    release: () => client.release(stale),
  };
}
