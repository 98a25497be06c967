import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Database } from '../db/client.js';

/**
 * Sagas: ordered lists of idempotent steps, run by workers in every process that has the
 * database. Each step runs in its own transaction together with the advance of the job's
 * `next_step`, on a job row claimed FOR UPDATE SKIP LOCKED: while a step runs, no other worker
 * sees its job; a crash rolls the step back (its database effects included) and the step runs
 * again later; a step whose effect lies outside the database must therefore be idempotent.
 *
 * Why not pg-boss (the architecture's choice): pg-boss 12 declares Node >= 22.12, and this
 * service must install cleanly on Node 20; a table and SKIP LOCKED are all a saga needs.
 */

export interface Job<P = Record<string, unknown>> {
  id: string;
  kind: string;
  subjectId: string;
  payload: P;
  /** The step about to run (0-based). */
  step: number;
  /** Failed attempts of this step so far. */
  attempts: number;
}

export interface SagaStep<P = any> {
  name: string;
  run(trx: Database, job: Job<P>): Promise<void>;
}

export interface Saga<P = any> {
  kind: string;
  steps: readonly SagaStep<P>[];
  /** Tries of one step before the job is given up (default 5). */
  maxAttempts?: number;
  /** Called in the transaction that gives the job up, to leave a visible error state. */
  failed?(trx: Database, job: Job<P>, error: string): Promise<void>;
}

/** Enqueues a saga inside the caller's transaction: no job without its write, no write without its job. */
export async function enqueueSaga(trx: Database, kind: string, subjectId: string, payload: Record<string, unknown> = {}): Promise<string> {
  const id = randomUUID();
  await trx.insertInto('jobs').values({ id, kind, subject_id: subjectId, payload: JSON.stringify(payload) }).execute();
  return id;
}

export interface SagaRunnerOptions {
  /** How often a worker looks for due jobs of other processes (default 250 ms). */
  pollMs?: number;
  /** Delay before the n-th retry of a failed step (default 200 ms × 2^(n-1), at most 30 s). */
  backoffMs?: (attempt: number) => number;
  /** Where retries (warn) and given-up jobs (error, else warn) are reported. */
  log?: { warn(object: object, message: string): void; error?(object: object, message: string): void };
}

interface JobRow {
  id: string; kind: string; subject_id: string; payload: unknown; next_step: number; attempts: number;
}

const defaultBackoff = (attempt: number) => Math.min(200 * 2 ** (attempt - 1), 30_000);

export class SagaRunner {
  readonly #db: Database;
  readonly #sagas: Map<string, Saga>;
  readonly #pollMs: number;
  readonly #backoffMs: (attempt: number) => number;
  readonly #log: SagaRunnerOptions['log'];
  #timer: NodeJS.Timeout | null = null;
  #draining: Promise<void> | null = null;
  #again = false;
  #stopped = true;

  constructor(db: Database, sagas: readonly Saga[], options: SagaRunnerOptions = {}) {
    this.#db = db;
    this.#sagas = new Map(sagas.map((saga) => [saga.kind, saga]));
    this.#pollMs = options.pollMs ?? 250;
    this.#backoffMs = options.backoffMs ?? defaultBackoff;
    this.#log = options.log;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#schedule(0);
  }

  /** Looks for due jobs now (after an enqueue in this process), instead of at the next poll. */
  kick(): void {
    if (!this.#stopped) this.#schedule(0);
  }

  /** Stops polling and waits for the step under way, so that the database can be closed after. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#draining;
  }

  /** Runs due steps until none is left; answers how many ran or failed. (The polling loop does the same; tests call it.) */
  async runDue(): Promise<number> {
    let count = 0;
    while ((await this.#runOneStep()) !== 'none') count++;
    return count;
  }

  #schedule(delayMs: number): void {
    if (this.#draining) {
      this.#again = true; // a pass is under way: let it look once more when it ends
      return;
    }
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#draining = this.#pass().finally(() => {
        this.#draining = null;
        if (this.#stopped) return;
        const again = this.#again;
        this.#again = false;
        this.#schedule(again ? 0 : this.#pollMs);
      });
    }, delayMs);
    this.#timer.unref();
  }

  async #pass(): Promise<void> {
    try {
      while (!this.#stopped && (await this.#runOneStep()) !== 'none');
    } catch (error) {
      // The database may be unreachable for a while; the next poll tries again.
      this.#log?.warn({ err: error }, 'saga runner: could not look for due jobs');
    }
  }

  /**
   * Claims one due job and runs its next step in one transaction. A step that throws is rolled
   * back to a savepoint, and its failure recorded in the same transaction, under the same lock.
   */
  async #runOneStep(): Promise<'none' | 'ran' | 'failed'> {
    return this.#db.transaction().execute(async (trx) => {
      const { rows } = await sql<JobRow>`
        select id, kind, subject_id, payload, next_step, attempts from jobs
         where state = 'PENDING' and run_after <= now()
         order by run_after, created_at
         limit 1
         for update skip locked`.execute(trx);
      const row = rows[0];
      if (!row) return 'none';
      const job: Job = {
        id: row.id, kind: row.kind, subjectId: row.subject_id, step: row.next_step, attempts: row.attempts,
        payload: (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload) as Record<string, unknown>,
      };
      const saga = this.#sagas.get(job.kind);
      const step = saga?.steps[job.step];
      if (!saga || !step) {
        await this.#giveUp(trx, saga, job, saga ? `no step ${job.step}` : `unknown saga kind ${job.kind}`);
        return 'failed';
      }
      await sql`savepoint saga_step`.execute(trx);
      try {
        await step.run(trx, job);
      } catch (error) {
        await sql`rollback to savepoint saga_step`.execute(trx);
        await this.#recordFailure(trx, saga, job, step.name, error);
        return 'failed';
      }
      if (job.step + 1 >= saga.steps.length) {
        await trx.deleteFrom('jobs').where('id', '=', job.id).execute();
      } else {
        await trx.updateTable('jobs')
          .set({ next_step: job.step + 1, attempts: 0, last_error: null, modified_at: sql`now()` })
          .where('id', '=', job.id).execute();
      }
      return 'ran';
    });
  }

  async #recordFailure(trx: Database, saga: Saga, job: Job, stepName: string, error: unknown): Promise<void> {
    const message = `step ${job.step} (${stepName}): ${error instanceof Error ? error.message : String(error)}`;
    const attempts = job.attempts + 1;
    if (attempts >= (saga.maxAttempts ?? 5)) {
      await this.#giveUp(trx, saga, { ...job, attempts }, message);
      return;
    }
    this.#log?.warn({ jobId: job.id, kind: job.kind, subjectId: job.subjectId, attempts, err: error }, 'saga step failed; retrying later');
    await trx.updateTable('jobs').set({
      attempts,
      last_error: message,
      run_after: sql`now() + ${`${this.#backoffMs(attempts)} milliseconds`}::interval`,
      modified_at: sql`now()`,
    }).where('id', '=', job.id).execute();
  }

  async #giveUp(trx: Database, saga: Saga | undefined, job: Job, message: string): Promise<void> {
    const details = { jobId: job.id, kind: job.kind, subjectId: job.subjectId, error: message };
    if (this.#log?.error) this.#log.error(details, 'saga given up');
    else this.#log?.warn(details, 'saga given up');
    await trx.updateTable('jobs').set({ state: 'FAILED', attempts: job.attempts, last_error: message, modified_at: sql`now()` })
      .where('id', '=', job.id).execute();
    await saga?.failed?.(trx, job, message);
  }
}
