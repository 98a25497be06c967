import type { Kysely } from 'kysely';
import { runStatements } from '../run-statements.js';

/**
 * The durable jobs of sagas (a dataset's CREATE, DELETE, RELEASE, ...), in the service's own
 * database so that a job is enqueued in the same transaction as the write that needs it. A job
 * is an ordered list of steps; `next_step` advances in the transaction of the step it follows,
 * and workers claim due jobs with FOR UPDATE SKIP LOCKED, so no step runs twice at once and a
 * step interrupted by a crash is rolled back and run again. A finished job is deleted; a failed
 * one stays, with its error, for the operator.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `
    create table jobs (
      id uuid primary key,
      kind text not null,
      subject_id uuid not null,
      payload jsonb not null default '{}'::jsonb,
      next_step integer not null default 0,
      state text not null default 'PENDING' check (state in ('PENDING', 'FAILED')),
      attempts integer not null default 0,
      run_after timestamptz not null default now(),
      last_error text,
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index jobs_due_idx on jobs (run_after, created_at) where state = 'PENDING';
    create index jobs_subject_idx on jobs (subject_id);
  `);
}
