import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { bearer, uniqueName } from '../helpers/factories.js';
import { publishStaDataset, waitForNoSaga } from '../helpers/sta-dataset.js';
import { waitFor } from '../helpers/wait.js';
import { createContext } from '../../src/runtime.js';
import { buildDataApiApp } from '../../src/data-api/gateway.app.js';
import { RouteTable } from '../../src/data-api/route-table.js';
import type { AppContext } from '../../src/context.js';

// Issue 31, item 0: once a client has seen a release end (`pendingSagaType` null), every gateway
// routes the dataset's payload requests, whatever became of the NOTIFY that announced it and
// however late the gateway's poll runs.

const SILENT_LOG = { warn: () => {}, info: () => {}, error: () => {}, debug: () => {} };

/** A dataset with an STA API, released through the management API as a client does: answers once the client sees the RELEASE saga end. */
async function releaseAsAClient(t: TestApp, slug: string): Promise<string> {
  const created = await t.app.inject({
    method: 'POST', url: '/v1/datasets', headers: bearer(t.adminToken),
    payload: { name: uniqueName('released'), description: 'first request after release', namedApis: [{ name: 'Payload', slug, standard: 'STA' }] },
  });
  assert.equal(created.statusCode, 201, created.body);
  const datasetId: string = created.json().id;
  await waitForNoSaga(t, datasetId);
  const released = await t.app.inject({ method: 'POST', url: `/v1/datasets/${datasetId}/release`, headers: bearer(t.adminToken) });
  assert.equal(released.statusCode, 202, released.body);
  const seen = await waitForNoSaga(t, datasetId);
  assert.equal(seen['dataSetStatus'], 'AVAILABLE');
  return datasetId;
}

describe('a route table never holds a version newer than its rows (postgres, the real route table)', { skip: !process.env['TEST_DATABASE_URL'] && 'needs TEST_DATABASE_URL' }, () => {
  let t: TestApp;
  let table: RouteTable;
  let admin: pg.Client;
  before(async () => {
    t = await buildTestApp('postgres');
    admin = new pg.Client({ connectionString: t.ctx.databaseUrl! });
    await admin.connect();
    // LISTEN off: only the poll (every 100 ms) and explicit version reads move this table.
    table = new RouteTable(t.ctx.db, { listenUrl: null, pollMs: 100, log: SILENT_LOG });
    await table.start();
  });
  after(async () => {
    await table?.stop();
    await admin?.end();
    await t.close();
  });

  test("a RELEASE saga's finishing UPDATE held uncommitted over two polls, then committed, is routed by the next poll", async () => {
    const published = await publishStaDataset(t, { slug: 'held' });
    await waitFor(() => table.lookup(published.datasetId, 'held'), { what: 'the published route in the table' });
    // Back to "release under way" (the view hides the route), as the saga leaves it before its last step.
    await admin.query(`update datasets set pending_saga_type = 'RELEASE' where id = $1`, [published.datasetId]);
    await waitFor(() => table.lookup(published.datasetId, 'held') === undefined, { what: 'the route to be withdrawn' });

    // The finishing UPDATE, uncommitted while the table polls (and reads the version) twice and more.
    await admin.query('begin');
    await admin.query('update datasets set pending_saga_type = null where id = $1', [published.datasetId]);
    await new Promise((resolve) => setTimeout(resolve, 250));
    await table.reloadIfBehind();
    assert.equal(table.lookup(published.datasetId, 'held'), undefined, 'an uncommitted release is not routed');
    await admin.query('commit');

    // One poll after the commit routes it: reloadIfBehind is what each poll runs.
    await table.reloadIfBehind();
    assert.ok(table.lookup(published.datasetId, 'held'), 'the poll after the commit loaded the route');
  });

  test('a released route shows in a table that only polls, within a poll period of its commit', async () => {
    const published = await publishStaDataset(t, { slug: 'polled' });
    await waitFor(() => table.lookup(published.datasetId, 'polled'), { what: 'the route to be polled in', timeoutMs: 2_000 });
  });
});

for (const kind of databaseKinds(import.meta.url)) {
  describe(`the first request after a release ends is routed (${kind})`, () => {
    let t: TestApp;
    /** A gateway with polling and LISTEN off: only a lookup miss can bring it news. */
    let deaf: { gateway: FastifyInstance; ctx: AppContext | null };
    before(async () => {
      t = await buildTestApp(kind);
      // On PostgreSQL a context of its own, as another process would have; PGlite has one database per process.
      const ctx = kind === 'postgres' ? await createContext(t.ctx.config, { url: t.ctx.databaseUrl, dataDir: null, poolSize: 3 }) : null;
      const gateway = await buildDataApiApp(ctx ?? t.ctx, { routePollMs: 0, routeNotifications: false });
      await gateway.ready();
      deaf = { gateway, ctx };
    });
    after(async () => {
      await deaf?.gateway.close();
      await deaf?.ctx?.db.destroy();
      await t.close();
    });

    const firstRequest = (gateway: FastifyInstance, datasetId: string, slug: string) =>
      gateway.inject({ method: 'GET', url: `/v1/datasets/${datasetId}/${slug}/Things`, headers: bearer(t.adminToken) });

    test('a gateway with polling and LISTEN off answers 200 to the first request after the saga ends', async () => {
      const datasetId = await releaseAsAClient(t, 'first');
      const answer = await firstRequest(deaf.gateway, datasetId, 'first');
      assert.equal(answer.statusCode, 200, answer.body);
      // An unknown slug of the same dataset still answers 404 after its version read.
      const unknown = await firstRequest(deaf.gateway, datasetId, 'nothing-here');
      assert.equal(unknown.statusCode, 404);
    });

    test('an anonymous read right after the dataset was opened (PATCH released/meta) is served on a gateway with polling and LISTEN off', async () => {
      const datasetId = await releaseAsAClient(t, 'opened');
      const anonymous = () => deaf.gateway.inject({ method: 'GET', url: `/v1/datasets/${datasetId}/opened/Things` });
      assert.equal((await anonymous()).statusCode, 401);
      const opened = await t.app.inject({
        method: 'PATCH', url: `/v1/datasets/${datasetId}/released/meta`, headers: { ...bearer(t.adminToken), 'content-type': 'application/merge-patch+json' },
        payload: { openDataAccess: true },
      });
      assert.equal(opened.statusCode, 200, opened.body);
      assert.equal(opened.json().openDataAccess, true);
      const read = await anonymous();
      assert.equal(read.statusCode, 200, read.body);
    });

    test('with the machine busy, every first request after a release is routed, on every gateway', async () => {
      const busy: ChildProcess[] = [];
      // Two spinning processes on a 2-core machine: timers and polls run late, as under load.
      for (let i = 0; i < 2; i++) busy.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
      try {
        const polling = await t.dataApi();
        for (let round = 0; round < 4; round++) {
          const slug = `busy-${round}`;
          const datasetId = await releaseAsAClient(t, slug);
          const [viaPolling, viaDeaf] = await Promise.all([firstRequest(polling, datasetId, slug), firstRequest(deaf.gateway, datasetId, slug)]);
          assert.equal(viaPolling.statusCode, 200, `round ${round}, polling gateway: ${viaPolling.body}`);
          assert.equal(viaDeaf.statusCode, 200, `round ${round}, gateway without polling or LISTEN: ${viaDeaf.body}`);
        }
      } finally {
        for (const child of busy) child.kill('SIGKILL');
      }
    });
  });
}
