import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { bearer } from '../helpers/factories.js';
import { publishStaDataset, waitForNoSaga } from '../helpers/sta-dataset.js';
import { request, startDataApiBeside, type ChildServer } from '../faults/harness.js';

// Several gateway processes on one PostgreSQL: a release or unrelease made through one process
// reaches the route table of another within 1 s (LISTEN/NOTIFY, with polling behind it).
describe('route table across processes (postgres)', { skip: !process.env['TEST_DATABASE_URL'] && 'needs TEST_DATABASE_URL' }, () => {
  let t: TestApp;
  let other: ChildServer;
  let otherDataApi: string;
  before(async () => {
    t = await buildTestApp('postgres');
    ({ server: other, url: otherDataApi } = await startDataApiBeside(t));
  });
  after(async () => {
    await other?.kill('SIGTERM');
    await t.close();
  });

  const timeUntil = async (url: string, wanted: number) => {
    const started = Date.now();
    for (;;) {
      const answer = await request(url, { token: t.adminToken });
      if (answer.status === wanted) return Date.now() - started;
      if (Date.now() - started > 3_000) assert.fail(`${url} still answers ${answer.status} after 3 s`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };

  test('a release in this process is served by the other within 1 s; an unrelease withdrawn within 1 s', async () => {
    const published = await publishStaDataset(t);
    const url = `${otherDataApi}${published.base}`;
    const appeared = await timeUntil(url, 200);
    assert.ok(appeared < 1_000, `served after ${appeared} ms`);
    const root = await request(url, { token: t.adminToken });
    assert.ok(root.body.value.every((entry: { url: string }) => entry.url.startsWith(`${otherDataApi}${published.base}/`)), JSON.stringify(root.body));

    const unreleased = await t.app.inject({ method: 'POST', url: `/v1/datasets/${published.datasetId}/unrelease`, headers: bearer(t.adminToken) });
    assert.equal(unreleased.statusCode, 202);
    const withdrawn = await timeUntil(url, 404);
    assert.ok(withdrawn < 1_000, `withdrawn after ${withdrawn} ms`);
    await waitForNoSaga(t, published.datasetId);
  });

  test('a route table whose LISTEN connection is terminated keeps following changes', async () => {
    const admin = new (await import('pg')).default.Client({ connectionString: t.ctx.databaseUrl! });
    await admin.connect();
    await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query ilike 'listen%' and pid <> pg_backend_pid()`);
    await admin.end();
    const published = await publishStaDataset(t, { slug: 'after-cut' });
    const appeared = await timeUntil(`${otherDataApi}${published.base}`, 200);
    assert.ok(appeared < 1_000, `served after ${appeared} ms`);
  });
});
