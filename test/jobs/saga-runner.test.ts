import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase, type Database } from '../../src/db/client.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { enqueueSaga, SagaRunner, type Saga } from '../../src/jobs/saga-runner.js';
import { databaseKinds, freshPostgresDatabase } from '../helpers/test-app.js';
import { waitFor } from '../helpers/wait.js';
import { migratedPgliteSnapshot } from '../helpers/pglite-snapshot.js';
import { nodeArgumentsFor } from '../helpers/programs.js';

/**
 * The saga runner: steps in order, one transaction each; failures retried with backoff and then
 * given up visibly; two workers never run one step twice; a kill -9 inside any step loses nothing
 * and repeats nothing.
 */

const MARKS = sql`create table saga_marks (job_id uuid not null, step integer not null, primary key (job_id, step))`;

async function marksOf(db: Database, jobId: string): Promise<number[]> {
  const { rows } = await sql<{ step: number }>`select step from saga_marks where job_id = ${jobId} order by step`.execute(db);
  return rows.map((row) => row.step);
}

const jobOf = (db: Database, id: string) => db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();

/** A saga whose steps each write a mark (the primary key refuses a step that would run twice). */
function markingSaga(kind: string, options: { failFirst?: number; steps?: number; maxAttempts?: number } = {}): Saga {
  let failuresLeft = options.failFirst ?? 0;
  return {
    kind,
    maxAttempts: options.maxAttempts,
    steps: Array.from({ length: options.steps ?? 3 }, (_, index) => ({
      name: `mark ${index}`,
      async run(trx: Database, job: { id: string }) {
        await sql`insert into saga_marks (job_id, step) values (${job.id}, ${index})`.execute(trx);
        // Fails after its write: the write must be rolled back with the step.
        if (index === 1 && failuresLeft-- > 0) throw new Error('downstream refused');
      },
    })),
    async failed(trx, job) {
      await sql`insert into saga_marks (job_id, step) values (${job.id}, -1)`.execute(trx);
    },
  };
}

for (const kind of databaseKinds(import.meta.url)) {
  describe(`saga runner (${kind})`, () => {
    let db: Database;
    let postgres: Awaited<ReturnType<typeof freshPostgresDatabase>> | null = null;
    let dataDir: string | null = null;
    before(async () => {
      if (kind === 'postgres') postgres = await freshPostgresDatabase();
      else dataDir = mkdtempSync(join(tmpdir(), 'saga-'));
      db = openDatabase({ url: postgres?.url ?? null, dataDir, ...(dataDir ? { pgliteSnapshot: await migratedPgliteSnapshot() } : {}) });
      await migrateToLatest(db);
      await MARKS.execute(db);
    });
    after(async () => {
      await db.destroy();
      await postgres?.drop();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    });

    it('runs the steps in order and removes the finished job', async () => {
      const runner = new SagaRunner(db, [markingSaga('plain')]);
      const id = await enqueueSaga(db, 'plain', crypto.randomUUID(), { any: 'payload' });
      assert.equal(await runner.runDue(), 3);
      assert.deepEqual(await marksOf(db, id), [0, 1, 2]);
      assert.equal(await jobOf(db, id), undefined);
    });

    it('a job enqueued in a transaction that rolls back does not exist', async () => {
      let id = '';
      await assert.rejects(db.transaction().execute(async (trx) => {
        id = await enqueueSaga(trx, 'plain', crypto.randomUUID());
        throw new Error('the write that needed it failed');
      }), /the write that needed it failed/);
      assert.equal(await jobOf(db, id), undefined);
    });

    it('a failing step is rolled back and retried after a backoff, then the saga goes on', async () => {
      const runner = new SagaRunner(db, [markingSaga('flaky', { failFirst: 2 })], { backoffMs: () => 1 });
      const id = await enqueueSaga(db, 'flaky', crypto.randomUUID());
      await runner.runDue();
      let job = await jobOf(db, id);
      if (job) {
        // The retry waits for its backoff; run again once it is due.
        assert.match(String(job.last_error), /step 1 \(mark 1\): downstream refused/);
        await new Promise((resolve) => setTimeout(resolve, 20));
        await runner.runDue();
        await new Promise((resolve) => setTimeout(resolve, 20));
        await runner.runDue();
        job = await jobOf(db, id);
      }
      assert.equal(job, undefined);
      assert.deepEqual(await marksOf(db, id), [0, 1, 2]);
    });

    it('after the last attempt the job is given up, visibly, and the saga can leave an error state', async () => {
      const runner = new SagaRunner(db, [markingSaga('doomed', { failFirst: 99, maxAttempts: 2 })], { backoffMs: () => 0 });
      const id = await enqueueSaga(db, 'doomed', crypto.randomUUID());
      await runner.runDue();
      await new Promise((resolve) => setTimeout(resolve, 5));
      await runner.runDue();
      const job = await jobOf(db, id);
      assert.equal(job?.state, 'FAILED');
      assert.equal(job?.attempts, 2);
      assert.match(String(job?.last_error), /downstream refused/);
      assert.deepEqual(await marksOf(db, id), [-1, 0]);
      assert.equal(await runner.runDue(), 0, 'a failed job is not picked up again');
    });

    it('workers started with start() pick up a kicked job at once, and stop() waits for them', async () => {
      const runner = new SagaRunner(db, [markingSaga('kicked')], { pollMs: 60_000 });
      runner.start();
      const id = await enqueueSaga(db, 'kicked', crypto.randomUUID());
      runner.kick();
      await waitFor(async () => (await jobOf(db, id)) === undefined, { what: 'the kicked job to be done' });
      await runner.stop();
      assert.deepEqual(await marksOf(db, id), [0, 1, 2]);
    });

    it('two workers on one database never run a step twice', async () => {
      // On PostgreSQL a second connection pool: another process as far as locks are concerned.
      const other = postgres ? openDatabase({ url: postgres.url, dataDir: null }) : db;
      try {
        const ids = await Promise.all(Array.from({ length: 20 }, () => enqueueSaga(db, 'shared', crypto.randomUUID())));
        const [a, b] = [new SagaRunner(db, [markingSaga('shared')]), new SagaRunner(other, [markingSaga('shared')])];
        const [ranA, ranB] = await Promise.all([a.runDue(), b.runDue()]);
        assert.equal(ranA + ranB, 60);
        for (const id of ids) assert.deepEqual(await marksOf(db, id), [0, 1, 2]);
      } finally {
        if (other !== db) await other.destroy();
      }
    });

    it('kill -9 inside each step in turn: after a restart the saga completes, every step done exactly once', async () => {
      // The worker processes open the database themselves: PGlite allows one process at a time.
      await db.destroy();
      let id = '';
      try {
        const setup = openDatabase({ url: postgres?.url ?? null, dataDir });
        id = await enqueueSaga(setup, 'test.marks', crypto.randomUUID());
        await setup.destroy();
        const worker = (crashAt?: number) => spawnSync(process.execPath, nodeArgumentsFor('test/jobs/fixtures/crashing-saga.ts'), {
          env: {
            ...process.env,
            ...(postgres ? { DATABASE_URL: postgres.url } : { DATA_DIR: dataDir! }),
            ...(crashAt === undefined ? {} : { CRASH_AT: String(crashAt) }),
          },
          encoding: 'utf8',
          timeout: 60_000,
        });
        for (const step of [0, 1, 2]) {
          const crashed = worker(step);
          assert.equal(crashed.signal, 'SIGKILL', `the worker should die in step ${step}: ${crashed.stderr}`);
        }
        const finished = worker();
        assert.equal(finished.status, 0, finished.stderr);
      } finally {
        db = openDatabase({ url: postgres?.url ?? null, dataDir });
      }
      assert.deepEqual(await marksOf(db, id), [0, 1, 2]);
      assert.equal(await jobOf(db, id), undefined);
    });
  });
}
