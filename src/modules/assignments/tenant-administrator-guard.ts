import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import { TENANT_ADMINISTRATOR_ROLE } from '../../access/catalogue.js';
import { AppError } from '../../errors.js';

// Serialises the transactions that may remove a tenant-administrator assignment, so that two
// concurrent removals cannot each see the other's assignment as the one that remains.
const GUARD_LOCK_KEY = 7_041_914;

export async function lockTenantAdministratorGuard(trx: Database): Promise<void> {
  await sql`select pg_advisory_xact_lock(${GUARD_LOCK_KEY})`.execute(trx);
}

/**
 * Called inside a transaction after assignments were removed: the tenant must keep at least one
 * TENANT assignment of the Tenant Administrator role, or nobody could administer it any more.
 */
export async function assertTenantAdministratorRemains(trx: Database): Promise<void> {
  const remaining = await trx
    .selectFrom('assignments')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('role_id', '=', TENANT_ADMINISTRATOR_ROLE.id)
    .where('scope_type', '=', 'TENANT')
    .executeTakeFirstOrThrow();
  if (Number(remaining.count) === 0) {
    throw new AppError('LAST_TENANT_ADMINISTRATOR', 'This would remove the last TENANT assignment of the Tenant Administrator role; assign it to another group first');
  }
}
