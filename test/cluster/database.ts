import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * A PostgreSQL database of the cluster run's own, created beside the one TEST_DATABASE_URL names
 * (on the same server) and dropped at the end, with its connections, also after a failure.
 */
export interface RunDatabase { name: string; url: string; drop(): Promise<void> }

async function onServer<T>(serverUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export async function createRunDatabase(serverUrl: string, prefix = 'cluster'): Promise<RunDatabase> {
  const name = `${prefix}_${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}_${randomBytes(3).toString('hex')}`;
  await onServer(serverUrl, (client) => client.query(`create database ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    name,
    url: url.toString(),
    drop: async () => {
      if (dropped) return;
      dropped = true;
      // WITH (FORCE) ends the sessions of replicas that are still shutting down (PostgreSQL 13+).
      await onServer(serverUrl, (client) => client.query(`drop database if exists ${name} with (force)`));
    },
  };
}
