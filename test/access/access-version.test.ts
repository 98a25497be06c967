import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { bearer, createAssignment, createGroup, createRole, createUser, expectProblem, grant, permissionIds, uniqueEmail } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { VERSION_FRESH_MS } from '../../src/access/access-version-clock.js';

// The contract's bound for a change made elsewhere (another process, another session).
const CONTRACT_BOUND_MS = 1_000;

/**
 * Requests from `clients` concurrent loops until `stopAt()`, each with the time it was sent. Each
 * loop pauses a millisecond between requests: answered from caches, in-process requests would
 * otherwise keep the event loop from the revoking request for many seconds.
 */
async function stream(read: () => Promise<{ statusCode: number }>, clients: number, stopAt: () => number) {
  const answers: Array<{ sentAt: number; status: number }> = [];
  const client = async () => {
    while (performance.now() < stopAt()) {
      const sentAt = performance.now();
      answers.push({ sentAt, status: (await read()).statusCode });
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  };
  return { answers, done: Promise.all(Array.from({ length: clients }, client)) };
}

// A change made through this process (its management API) is seen by the very next request:
// every completed write makes the next request read the access version again (LocalWrites).
for (const kind of databaseKinds(import.meta.url)) {
  describe(`access changes made by this process (${kind})`, () => {
    let t: TestApp;
    let closed: PublishedDataset;
    before(async () => {
      t = await buildTestApp(kind);
      closed = await publishStaDataset(t, { openDataAccess: false, slug: 'closed' });
    });
    after(() => t.close());

    test('under a stream of concurrent requests, every request sent after the revoking DELETE answered is refused', async () => {
      const email = uniqueEmail('revoked-here');
      const user = await createUser(t, { email });
      const role = await createRole(t, { permissionIds: await permissionIds(t, ['DATASET_PAYLOAD_READ']) });
      const group = await createGroup(t, { memberIds: [user.id] });
      const assignment = await createAssignment(t, { groupId: group.id, roleId: role.id, scopeType: 'DATASET', scopeId: closed.datasetId });
      const reader = await t.tokenFor(email);
      const read = () => closed.request('GET', '', undefined, bearer(reader));
      assert.equal((await read()).statusCode, 200);

      let answeredAt = Number.POSITIVE_INFINITY;
      const load = await stream(read, 8, () => answeredAt + 300);
      await new Promise((resolve) => setTimeout(resolve, 150));
      const deleted = await t.app.inject({ method: 'DELETE', url: `/v1/assignments/${assignment.id}`, headers: bearer(t.adminToken) });
      answeredAt = performance.now();
      assert.equal(deleted.statusCode, 204);
      await load.done;

      const before = load.answers.filter((answer) => answer.sentAt < answeredAt);
      const afterDelete = load.answers.filter((answer) => answer.sentAt > answeredAt);
      assert.ok(before.some((answer) => answer.status === 200), 'the grant served requests before its revocation');
      assert.ok(afterDelete.length >= 8, `${afterDelete.length} requests after the revocation`);
      assert.deepEqual([...new Set(afterDelete.map((answer) => answer.status))], [404]);
    });

    test('a grant made through this process serves the very next request', async () => {
      const email = uniqueEmail('granted-here');
      const user = await createUser(t, { email });
      const reader = await t.tokenFor(email);
      const read = () => closed.request('GET', '', undefined, bearer(reader));
      // Loaded and cached without the right; then granted.
      expectProblem(await read(), 404, 'NOT_FOUND');
      const role = await createRole(t, { permissionIds: await permissionIds(t, ['DATASET_PAYLOAD_READ']) });
      const group = await createGroup(t, { memberIds: [user.id] });
      await createAssignment(t, { groupId: group.id, roleId: role.id, scopeType: 'DATASET', scopeId: closed.datasetId });
      assert.equal((await read()).statusCode, 200);
    });
  });
}

// The access version moves when an access change commits, not before (migration 0014): a caller
// loaded while a revocation is still in flight is never cached under the revocation's version. A
// change committed by another session (as by another process) reaches requests within the
// contract's 1 s (src/access/access-version-clock.ts reads the version at most every VERSION_RENEW_MS and
// trusts a read for VERSION_FRESH_MS). Only PostgreSQL has a second session that can hold a change open.
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

  test('a revocation read by a request while it is uncommitted still counts, within 1 s of its commit and from then on', async () => {
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
    const committedAt = performance.now();

    assert.notEqual(await versionNow(), before);
    let refusedAt: number | null = null;
    while (refusedAt === null && performance.now() - committedAt < CONTRACT_BOUND_MS + 500) {
      const sentAt = performance.now();
      if ((await read()).statusCode === 404) refusedAt = sentAt;
      else await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.ok(refusedAt !== null && refusedAt - committedAt < CONTRACT_BOUND_MS, `refused ${refusedAt === null ? 'never' : `${Math.round(refusedAt - committedAt)} ms after the commit`}`);
    // Never cached under the old version for good: every later request is refused too.
    for (let i = 0; i < 5; i++) expectProblem(await read(), 404, 'NOT_FOUND');
  });

  test('under a stream of concurrent requests, every request sent a fresh read\'s lifetime after another session\'s revocation is refused', async () => {
    // Requests share reads of the version (src/access/access-version-clock.ts); none may carry a read from
    // before the commit past VERSION_FRESH_MS (below the contract's 1 s).
    const email = uniqueEmail('revoked-under-load');
    const reader = await grant(t, email, ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: closed.datasetId });
    const read = () => closed.request('GET', '', undefined, bearer(reader));
    assert.equal((await read()).statusCode, 200);
    let committedAt = Number.POSITIVE_INFINITY;
    const load = await stream(read, 8, () => committedAt + VERSION_FRESH_MS + 300);
    await new Promise((resolve) => setTimeout(resolve, 150));
    await session.query(
      `delete from assignments where scope_id = $1 and group_id in (
         select gm.group_id from group_members gm join users u on u.id = gm.user_id where u.email = $2)`,
      [closed.datasetId, email]);
    committedAt = performance.now();
    await load.done;

    const before = load.answers.filter((answer) => answer.sentAt < committedAt);
    const late = load.answers.filter((answer) => answer.sentAt > committedAt + VERSION_FRESH_MS);
    assert.ok(before.some((answer) => answer.status === 200), 'the grant served requests before its revocation');
    assert.ok(late.length >= 8, `${late.length} requests after the bound`);
    assert.deepEqual([...new Set(late.map((answer) => answer.status))], [404]);
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
