import pg from 'pg';
import type { TestApp } from './test-app.js';
import { waitFor } from './wait.js';

/**
 * Runs `requests` at once and proves they raced: on PostgreSQL the test first takes `lock table
 * <table> in access exclusive mode` on a connection of its own, starts the requests, and lets go only
 * once as many server sessions as there are requests wait on a lock, so that every request is inside
 * the database at the same moment (a timeout fails the test rather than letting it pass on requests
 * that ran one after the other). `table` must be one that every request reads or writes. On PGlite
 * (one session, every statement serialised) there is no race to force, and the requests just run
 * together. `atLeast` lowers the count where not every request can be caught inside the database.
 * `table` may be `[schema, table]` for a table outside the search path (a dataset's SensorThings tables).
 */
export async function raceInDatabase<R>(t: TestApp, table: string | readonly [string, string], requests: Array<() => Promise<R>>, options: { atLeast?: number } = {}): Promise<R[]> {
  const wanted = options.atLeast ?? requests.length;
  if (!t.ctx.databaseUrl) return Promise.all(requests.map((request) => request()));
  // Callers are cached, and requests arriving together after an access change share one load of
  // theirs: loaded first (the administrator's, whom these races run as), each request reaches the
  // database on its own instead of all waiting behind one caller query on the locked table.
  await t.app.inject({ method: 'GET', url: '/v1/users/me', headers: { authorization: `Bearer ${t.adminToken}` } });
  const locker = new pg.Client({ connectionString: t.ctx.databaseUrl });
  await locker.connect();
  try {
    await locker.query('begin');
    const name = typeof table === 'string' ? pg.escapeIdentifier(table) : table.map((part) => pg.escapeIdentifier(part)).join('.');
    await locker.query(`lock table ${name} in access exclusive mode`);
    const running = requests.map((request) => request());
    // Unhandled until awaited below: a request failing while we wait must not crash the process.
    for (const promise of running) promise.catch(() => undefined);
    let waiting = 0;
    await waitFor(async () => {
      // Inside a transaction PostgreSQL keeps the list of sessions it read first (only their wait
      // events are read afresh): a connection the pool opened for one of the requests after the
      // first poll would never be counted. Cleared, the list is read again each time.
      await locker.query('select pg_stat_clear_snapshot()');
      const { rows } = await locker.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`);
      waiting = rows[0]!.n;
      return waiting >= wanted;
    }, { what: `${wanted} of the ${requests.length} requests to wait inside the database on the test's lock of ${String(table)}`, timeoutMs: 10_000, last: () => `${waiting} waiting` });
    await locker.query('commit');
    return await Promise.all(running);
  } finally {
    await locker.end();
  }
}
