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

/**
 * How many active users hold the Tenant Administrator role at TENANT scope: members of a group
 * holding it, or of any subgroup of such a group.
 */
async function countTenantAdministrators(trx: Database): Promise<number> {
  const { rows } = await sql<{ count: number }>`
    with recursive administering(id) as (
      select a.group_id from assignments a where a.role_id = ${TENANT_ADMINISTRATOR_ROLE.id} and a.scope_type = 'TENANT'
      union
      select g.id from groups g join administering ad on g.parent_group_id = ad.id
    )
    select count(distinct gm.user_id)::int as count
      from group_members gm
      join administering ad on ad.id = gm.group_id
      join users u on u.id = gm.user_id and u.active`.execute(trx);
  return Number(rows[0]?.count ?? 0);
}

/**
 * Runs a change that removes members or users (user delete or deactivation, membership replacement,
 * group member change, move or delete) and refuses it when it would leave no person holding Tenant Administrator,
 * where there was one before: an assignment whose group has no member administers nothing.
 */
export async function keepingATenantAdministrator<T>(trx: Database, change: () => Promise<T>): Promise<T> {
  await lockTenantAdministratorGuard(trx);
  const before = await countTenantAdministrators(trx);
  const result = await change();
  if (before > 0 && (await countTenantAdministrators(trx)) === 0) {
    throw new AppError('LAST_TENANT_ADMINISTRATOR', 'This would leave no user holding the Tenant Administrator role; make someone else an administrator first');
  }
  return result;
}
