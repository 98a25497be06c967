import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * A PostgreSQL database of one's own, created beside the one a URL names (on the same server) and
 * dropped at the end: every PostgreSQL test suite, the cluster test and the benchmarks take one, so
 * that runs side by side never share tables.
 */
export interface DatabaseBeside {
  name: string;
  url: string;
  /** Drops it, at most once, with whatever connections are still open to it. */
  drop(): Promise<void>;
}

export async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/**
 * `prefix` names what it is for (test, cluster, bench_sta), for whoever lists the server's
 * databases; `template`, a database to copy (see postgres-template.ts), else an empty one.
 */
export async function createDatabaseBeside(serverUrl: string, prefix: string, template?: string): Promise<DatabaseBeside> {
  const name = `${prefix}_${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}_${randomBytes(4).toString('hex')}`;
  await withClient(serverUrl, (client) => client.query(`create database ${name}${template ? ` template ${template}` : ''}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  let dropped: Promise<void> | null = null;
  return {
    name,
    url: url.toString(),
    drop: () => {
      dropped ??= withClient(serverUrl, async (client) => {
        // pg-pool's end() resolves before its sockets are closed; dropping "with (force)" while one
        // is still closing kills it, and that surfaces as an error outside any test. Wait (at most
        // 5 s) for them first; WITH (FORCE) ends the sessions of processes still shutting down.
        for (let attempt = 0; attempt < 50; attempt++) {
          const { rows } = await client.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where datname = $1', [name]);
          if (rows[0]!.n === 0) break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        await client.query(`drop database if exists ${name} with (force)`);
      });
      return dropped;
    },
  };
}
