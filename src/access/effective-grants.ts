import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import type { ScopeType } from '../db/schema.js';
import { heldGroupsCte, type Caller } from './caller.js';
import type { PermissionName } from './catalogue.js';
import { assertMayGrant, holdsEverything, type PermissionGrant } from './escalation.js';

/**
 * What changes of memberships, groups, users, assignments and roles grant, computed in SQL inside
 * the changing transaction, and checked against the caller by the escalation rule.
 */

interface UserGrantRow { user_id: string; permission: PermissionName; scope_type: ScopeType; scope_id: string; datapool_id: string | null }

/** Every permission each of the (active) users holds, through their groups and those groups' ancestors. */
async function grantsOfUsers(db: Database, userIds: readonly string[]): Promise<UserGrantRow[]> {
  if (userIds.length === 0) return [];
  const { rows } = await sql<UserGrantRow>`
    with recursive ${heldGroupsCte(sql`select gm.user_id, gm.group_id from group_members gm join users u on u.id = gm.user_id
                                        where u.active and gm.user_id in (${sql.join([...userIds])})`)}
    select distinct h.user_id, p.name as permission, a.scope_type, a.scope_id, ds.datapool_id
      from held h
      join assignments a on a.group_id = h.group_id
      left join datasets ds on ds.id = a.dataset_id
      join role_permissions rp on rp.role_id = a.role_id
      join permissions p on p.id = rp.permission_id`.execute(db);
  return rows;
}

const rowKey = (row: UserGrantRow) => `${row.user_id}|${row.permission}|${row.scope_type}|${row.scope_id}`;
const grantOf = (row: UserGrantRow): PermissionGrant => ({ permission: row.permission, scopeType: row.scope_type, scopeId: row.scope_id, datapoolId: row.datapool_id });

/** The datapool each dataset scope lies in: a grant on that datapool covers the dataset. */
async function datapoolsOfScopes(trx: Database, scopes: readonly { scopeType: ScopeType; scopeId: string }[]): Promise<Map<string, string | null>> {
  const datasetIds = [...new Set(scopes.filter((s) => s.scopeType === 'DATASET').map((s) => s.scopeId))];
  if (datasetIds.length === 0) return new Map();
  const rows = await trx.selectFrom('datasets').select(['id', 'datapool_id']).where('id', 'in', datasetIds).execute();
  return new Map(rows.map((row) => [row.id, row.datapool_id]));
}

/**
 * Runs a change of memberships, group tree or user state inside the caller's transaction and
 * refuses it (403, rolling it back) when any of `userIds` holds a permission afterwards that they
 * did not hold before and that the caller does not hold on that scope.
 */
export async function grantingNoMoreThanCallerHolds<T>(trx: Database, caller: Caller, userIds: readonly string[], change: () => Promise<T>): Promise<T> {
  if (holdsEverything(caller) || userIds.length === 0) return change();
  const before = new Set((await grantsOfUsers(trx, userIds)).map(rowKey));
  const result = await change();
  assertMayGrant(caller, (await grantsOfUsers(trx, userIds)).filter((row) => !before.has(rowKey(row))).map(grantOf));
  return result;
}

/** Changing who a user is (email, externalId) hands everything they hold to another identity: the caller must hold it all. */
export async function assertMayRebindUser(trx: Database, caller: Caller, userId: string): Promise<void> {
  if (holdsEverything(caller)) return;
  assertMayGrant(caller, (await grantsOfUsers(trx, [userId])).map(grantOf));
}

/** Assignments about to be written: every permission of each one's role on its scope. */
export async function assertMayAssign(trx: Database, caller: Caller, assignments: readonly { roleId: string; scopeType: ScopeType; scopeId: string }[]): Promise<void> {
  if (holdsEverything(caller) || assignments.length === 0) return;
  const roleIds = [...new Set(assignments.map((a) => a.roleId))];
  const permissions = await trx.selectFrom('role_permissions as rp').innerJoin('permissions as p', 'p.id', 'rp.permission_id')
    .select(['rp.role_id', 'p.name']).where('rp.role_id', 'in', roleIds).execute();
  const datapools = await datapoolsOfScopes(trx, assignments);
  assertMayGrant(caller, assignments.flatMap((a) => permissions
    .filter((row) => row.role_id === a.roleId)
    .map((row) => ({ permission: row.name as PermissionName, scopeType: a.scopeType, scopeId: a.scopeId, datapoolId: datapools.get(a.scopeId) ?? null }))));
}

/** Permissions about to be added to a role: each of them on every scope the role is assigned on. */
export async function assertMayAddToRole(trx: Database, caller: Caller, roleId: string, permissionIds: readonly string[]): Promise<void> {
  if (holdsEverything(caller) || permissionIds.length === 0) return;
  const [scopes, permissions] = await Promise.all([
    trx.selectFrom('assignments').select(['scope_type', 'scope_id']).distinct().where('role_id', '=', roleId).execute(),
    trx.selectFrom('permissions').select('name').where('id', 'in', [...permissionIds]).execute(),
  ]);
  const datapools = await datapoolsOfScopes(trx, scopes.map((s) => ({ scopeType: s.scope_type, scopeId: s.scope_id })));
  assertMayGrant(caller, scopes.flatMap((scope) => permissions.map((p) => ({
    permission: p.name as PermissionName, scopeType: scope.scope_type, scopeId: scope.scope_id, datapoolId: datapools.get(scope.scope_id) ?? null,
  }))));
}

/** The users of a group and of all its subgroups: who gains or loses what the group's ancestors hold when it moves. */
export async function membersOfSubtree(trx: Database, groupId: string): Promise<string[]> {
  const { rows } = await sql<{ user_id: string }>`
    with recursive subtree(id) as (
      select ${groupId}::uuid
      union
      select g.id from groups g join subtree s on g.parent_group_id = s.id
    )
    select distinct gm.user_id from group_members gm join subtree s on s.id = gm.group_id`.execute(trx);
  return rows.map((row) => row.user_id);
}
