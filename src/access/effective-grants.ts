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

/**
 * The datapools each scope lies in: a grant on any of them covers it. A dataset or data structure
 * lies in its datapool; a data source in every datapool its SPECIFIC scope names.
 */
async function datapoolsOfScopes(trx: Database, scopes: readonly { scopeType: ScopeType; scopeId: string }[]): Promise<Map<string, string[]>> {
  const idsOf = (type: ScopeType) => [...new Set(scopes.filter((s) => s.scopeType === type).map((s) => s.scopeId))];
  const [datasetIds, structureIds, sourceIds] = [idsOf('DATASET'), idsOf('DATASTRUCTURE'), idsOf('DATASOURCE')];
  const [datasets, structures, sources] = await Promise.all([
    datasetIds.length ? trx.selectFrom('datasets').select(['id', 'datapool_id']).where('id', 'in', datasetIds).execute() : [],
    structureIds.length ? trx.selectFrom('data_structures').select(['id', 'datapool_id']).where('id', 'in', structureIds).execute() : [],
    sourceIds.length
      ? trx.selectFrom('data_source_datapools as p').innerJoin('data_sources as s', 's.id', 'p.data_source_id')
        .select(['p.data_source_id as id', 'p.datapool_id']).where('s.datapool_scope_type', '=', 'SPECIFIC').where('p.data_source_id', 'in', sourceIds).execute()
      : [],
  ]);
  const out = new Map<string, string[]>();
  for (const row of [...datasets, ...structures, ...sources]) {
    if (row.datapool_id) out.set(row.id, [...(out.get(row.id) ?? []), row.datapool_id]);
  }
  return out;
}

/** The grants of user rows with the datapools their scopes lie in (for the scopes of types the SQL above does not join). */
async function grantsWithDatapools(trx: Database, rows: UserGrantRow[]): Promise<PermissionGrant[]> {
  const datapools = await datapoolsOfScopes(trx, rows.filter((row) => row.datapool_id === null).map((row) => ({ scopeType: row.scope_type, scopeId: row.scope_id })));
  return rows.map((row) => ({ ...grantOf(row), datapoolIds: datapools.get(row.scope_id) ?? [] }));
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
  assertMayGrant(caller, await grantsWithDatapools(trx, (await grantsOfUsers(trx, userIds)).filter((row) => !before.has(rowKey(row)))));
  return result;
}

/** Changing who a user is (email, externalId) hands everything they hold to another identity: the caller must hold it all. */
export async function assertMayRebindUser(trx: Database, caller: Caller, userId: string): Promise<void> {
  if (holdsEverything(caller)) return;
  assertMayGrant(caller, await grantsWithDatapools(trx, await grantsOfUsers(trx, [userId])));
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
    .map((row) => ({ permission: row.name as PermissionName, scopeType: a.scopeType, scopeId: a.scopeId, datapoolIds: datapools.get(a.scopeId) ?? [] }))));
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
    permission: p.name as PermissionName, scopeType: scope.scope_type, scopeId: scope.scope_id, datapoolIds: datapools.get(scope.scope_id) ?? [],
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
