import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { bearer, expectProblem, grant, uniqueEmail } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';

// The access version moves when an access change commits, not before (migration 0014): a caller
// loaded while a revocation is still in flight is never cached under the revocation's version.
// Only PostgreSQL has a second session that can hold a change open.
describe('access version at commit (postgres)', { skip: !process.env['TEST_DATABASE_URL'] && 'needs TEST_DATABASE_URL' }, () => {
  let t: TestApp;
  let closed: PublishedDataset;
  let session: pg.Client;
  before(async () => {
    t = await buildTestApp('postgres');
    closed = await publishStaDataset(t, { openDataAccess: false, slug: 'closed' });
    session = new pg.Client({ connectionString: t.ctx.databaseUrl! });
    await session.connect();
  });
  after(async () => {
    await session.end();
    await t.close();
  });

  const versionNow = async () => (await session.query('select version::text as v from access_version_counter')).rows[0].v as string;

  test('a revocation read by a request while it is uncommitted still counts on the first request after its commit', async () => {
    const email = uniqueEmail('revoked-in-flight');
    const reader = await grant(t, email, ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: closed.datasetId });
    const read = () => closed.request('GET', '', undefined, bearer(reader));
    assert.equal((await read()).statusCode, 200);
    const before = await versionNow();

    await session.query('begin');
    const { rowCount } = await session.query(
      `delete from assignments where scope_id = $1 and group_id in (
         select gm.group_id from group_members gm join users u on u.id = gm.user_id where u.email = $2)`,
      [closed.datasetId, email]);
    assert.equal(rowCount, 1);
    // Uncommitted: the version has not moved, and the request (another session) still sees the grant.
    assert.equal(await versionNow(), before);
    assert.equal((await read()).statusCode, 200);
    await session.query('commit');

    assert.notEqual(await versionNow(), before);
    expectProblem(await read(), 404, 'NOT_FOUND');
  });

  test('under a stream of concurrent requests, every request sent after a revocation committed is refused', async () => {
    // Requests arriving together share one version read (src/access/caller-cache.ts): one sent
    // before the commit must never serve a request that arrived after it.
    const email = uniqueEmail('revoked-under-load');
    const reader = await grant(t, email, ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: closed.datasetId });
    const read = () => closed.request('GET', '', undefined, bearer(reader));
    assert.equal((await read()).statusCode, 200);
    const answers: Array<{ sentAt: number; status: number }> = [];
    let committedAt = Number.POSITIVE_INFINITY;
    let stopAt = Number.POSITIVE_INFINITY;
    const client = async () => {
      while (performance.now() < stopAt) {
        const sentAt = performance.now();
        answers.push({ sentAt, status: (await read()).statusCode });
      }
    };
    const clients = Array.from({ length: 8 }, client);
    await new Promise((resolve) => setTimeout(resolve, 150));
    await session.query(
      `delete from assignments where scope_id = $1 and group_id in (
         select gm.group_id from group_members gm join users u on u.id = gm.user_id where u.email = $2)`,
      [closed.datasetId, email]);
    committedAt = performance.now();
    stopAt = committedAt + 300;
    await Promise.all(clients);

    const before = answers.filter((answer) => answer.sentAt < committedAt);
    const afterCommit = answers.filter((answer) => answer.sentAt > committedAt);
    assert.ok(before.some((answer) => answer.status === 200), 'the grant served requests before its revocation');
    assert.ok(afterCommit.length >= 8, `${afterCommit.length} requests after the commit`);
    assert.deepEqual([...new Set(afterCommit.map((answer) => answer.status))], [404]);
  });

  test('one transaction touching many rows moves the version by one; a rolled-back one not at all', async () => {
    const start = BigInt(await versionNow());
    await session.query('begin');
    await session.query(`update users set modified_at = modified_at where true`);
    await session.query(`update group_members set group_id = group_id where true`);
    await session.query('commit');
    assert.equal(BigInt(await versionNow()), start + 1n);
    await session.query('begin');
    await session.query(`update users set modified_at = modified_at where true`);
    await session.query('rollback');
    assert.equal(BigInt(await versionNow()), start + 1n);
  });
});
