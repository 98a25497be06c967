import type { Kysely } from 'kysely';
import { runStatements } from '../run-statements.js';

/**
 * The placeholder of an Idempotency-Key whose first request is still running holds a lease that
 * the request renews while it runs. A placeholder whose lease ran out belongs to a process that
 * died (kill -9, a crash), so a retry may take the key over at once instead of waiting.
 * Null on finished records, which never expire this way.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `
    alter table idempotency_keys add column lease_expires_at timestamptz;
  `);
}
