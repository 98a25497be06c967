import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { bearer } from '../helpers/factories.js';
import { publishStaDataset, waitForNoSaga } from '../helpers/sta-dataset.js';
import { request, startDataApiBeside, type ChildServer } from '../faults/harness.js';
import { createContext } from '../../src/runtime.js';
import { buildDataApiApp } from '../../src/data-api/gateway.app.js';
import type { AppContext } from '../../src/context.js';

// Several gateways on one PostgreSQL: a release or unrelease made through one reaches the route table
// of another within 1 s, by LISTEN/NOTIFY, with polling behind it as the fallback.
describe('route table across processes (postgres)', { skip: !process.env['TEST_DATABASE_URL'] && 'needs TEST_DATABASE_URL' }, () => {
  let t: TestApp;
  /** Another gateway process, polling as deployed (every 500 ms) besides LISTEN. */
  let other: ChildServer;
  let otherDataApi: string;
  /** Another gateway with a context (pool, LISTEN connection) of its own and polling off: only NOTIFY moves it. */
  let notifyOnly: { ctx: AppContext; gateway: FastifyInstance };
  before(async () => {
    t = await buildTestApp('postgres');
    ({ server: other, url: otherDataApi } = await startDataApiBeside(t));
    const ctx = await createContext(t.ctx.config, { url: t.ctx.databaseUrl, dataDir: null, poolSize: 3 });
    const gateway = await buildDataApiApp(ctx, { routePollMs: 0 });
    await gateway.ready();
    notifyOnly = { ctx, gateway };
  });
  after(async () => {
    await notifyOnly?.gateway.close();
    await notifyOnly?.ctx.db.destroy();
    await other?.kill('SIGTERM');
    await t.close();
  });

  /** Milliseconds until `probe` answers `wanted`; fails after `limitMs`. */
  const timeUntil = async (probe: () => Promise<number>, wanted: number, limitMs = 3_000) => {
    const started = Date.now();
    for (;;) {
      const status = await probe();
      if (status === wanted) return Date.now() - started;
      if (Date.now() - started > limitMs) assert.fail(`still answers ${status} after ${limitMs} ms (wanted ${wanted})`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  const viaChild = (url: string) => async () => (await request(url, { token: t.adminToken })).status;
  const viaNotifyOnly = (path: string) => async () =>
    (await notifyOnly.gateway.inject({ method: 'GET', url: path, headers: bearer(t.adminToken) })).statusCode;

  /** Terminates every LISTEN backend on the test's database; answers how many there were. */
  const terminateListeners = async () => {
    const admin = new pg.Client({ connectionString: t.ctx.databaseUrl! });
    await admin.connect();
    try {
      const { rows } = await admin.query(`select pg_terminate_backend(pid) as done from pg_stat_activity
        where datname = current_database() and query ilike 'listen%' and pid <> pg_backend_pid()`);
      return rows.filter((row) => row.done).length;
    } finally {
      await admin.end();
    }
  };

  test('with polling off, NOTIFY alone brings a release within 1 s and withdraws an unrelease within 1 s', async () => {
    const published = await publishStaDataset(t, { slug: 'notified' });
    const appeared = await timeUntil(viaNotifyOnly(published.base), 200);
    assert.ok(appeared < 1_000, `served after ${appeared} ms`);

    const unreleased = await t.app.inject({ method: 'POST', url: `/v1/datasets/${published.datasetId}/unrelease`, headers: bearer(t.adminToken) });
    assert.equal(unreleased.statusCode, 202);
    const withdrawn = await timeUntil(viaNotifyOnly(published.base), 404);
    assert.ok(withdrawn < 1_000, `withdrawn after ${withdrawn} ms`);
    await waitForNoSaga(t, published.datasetId);
  });

  test('a release in this process is served by another process within 1 s; an unrelease withdrawn within 1 s', async () => {
    const published = await publishStaDataset(t);
    const url = `${otherDataApi}${published.base}`;
    const appeared = await timeUntil(viaChild(url), 200);
    assert.ok(appeared < 1_000, `served after ${appeared} ms`);
    const root = await request(url, { token: t.adminToken });
    assert.ok(root.body.value.every((entry: { url: string }) => entry.url.startsWith(`${otherDataApi}${published.base}/`)), JSON.stringify(root.body));

    const unreleased = await t.app.inject({ method: 'POST', url: `/v1/datasets/${published.datasetId}/unrelease`, headers: bearer(t.adminToken) });
    assert.equal(unreleased.statusCode, 202);
    const withdrawn = await timeUntil(viaChild(url), 404);
    assert.ok(withdrawn < 1_000, `withdrawn after ${withdrawn} ms`);
    await waitForNoSaga(t, published.datasetId);
  });

  test('a route table whose LISTEN connection is terminated keeps following changes: by polling, and with polling off by re-LISTENing', async () => {
    assert.ok((await terminateListeners()) >= 2, 'both gateways\' LISTEN backends were terminated');
    const published = await publishStaDataset(t, { slug: 'after-cut' });
    // The polling gateway sees it within its poll period, whatever became of its LISTEN.
    const polled = await timeUntil(viaChild(`${otherDataApi}${published.base}`), 200);
    assert.ok(polled < 1_000, `served after ${polled} ms`);
    // The NOTIFY-only gateway re-LISTENs after a pause (1 s) and reloads then: it catches up without polling.
    await timeUntil(viaNotifyOnly(published.base), 200, 5_000);
    // ... and NOTIFY works again on the new connection: an unrelease is withdrawn within 1 s.
    const unreleased = await t.app.inject({ method: 'POST', url: `/v1/datasets/${published.datasetId}/unrelease`, headers: bearer(t.adminToken) });
    assert.equal(unreleased.statusCode, 202);
    const withdrawn = await timeUntil(viaNotifyOnly(published.base), 404);
    assert.ok(withdrawn < 1_000, `withdrawn after ${withdrawn} ms`);
    await waitForNoSaga(t, published.datasetId);
  });
});
