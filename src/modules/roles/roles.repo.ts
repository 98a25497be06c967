import { sql } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import type { Database } from '../../db/client.js';
import type { RoleType } from '../../db/schema.js';
import { withNameDescriptionFilters, fetchPageIds, inIdOrder, withSharedFilters, type ListRequest } from '../../db/list-query.js';
import { iso } from '../../http/resource.js';
import type { Role, RoleListQuery } from './roles.schemas.js';

export const ROLE_SORT_COLUMNS: Record<string, string> = {
  name: 'r.name', description: 'r.description', roleType: 'r.role_type', readonly: 'r.readonly',
  createdAt: 'r.created_at', modifiedAt: 'r.modified_at',
};

/** Full role representations, with permissions, datapools and usage counts, in one query. */
export async function loadRoles(db: Database, ids: string[]): Promise<Role[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('roles as r')
    .selectAll('r')
    .select((eb) => [
      jsonArrayFrom(eb.selectFrom('role_permissions as rp').innerJoin('permissions as p', 'p.id', 'rp.permission_id')
        .select(['p.id', 'p.name', 'p.permission_type as permissionType']).whereRef('rp.role_id', '=', 'r.id').orderBy('p.name')).as('permissions'),
      jsonArrayFrom(eb.selectFrom('assignments as a').innerJoin('datapools as d', 'd.id', 'a.scope_id').distinct().select(['d.id', 'd.name'])
        .whereRef('a.role_id', '=', 'r.id').where('a.scope_type', '=', 'DATAPOOL').orderBy('d.name')).as('datapools'),
      eb.selectFrom('assignments as a').select(sql<number>`count(distinct a.group_id)`.as('n')).whereRef('a.role_id', '=', 'r.id').as('group_count'),
      eb.selectFrom('assignments as a').innerJoin('group_members as gm', 'gm.group_id', 'a.group_id')
        .select(sql<number>`count(distinct gm.user_id)`.as('n')).whereRef('a.role_id', '=', 'r.id').as('user_count'),
    ])
    .where('r.id', 'in', ids)
    .execute();
  return inIdOrder(ids, rows.map((row) => ({
    id: row.id,
    name: row.name,
    description: row.description,
    roleType: row.role_type,
    readonly: row.readonly,
    permissions: row.permissions,
    datapools: row.datapools,
    groupCount: Number(row.group_count ?? 0),
    userCount: Number(row.user_count ?? 0),
    createdAt: iso(row.created_at),
    modifiedAt: iso(row.modified_at),
  })));
}

export async function findRolePage(db: Database, query: RoleListQuery, request: ListRequest) {
  let qb = withSharedFilters(db.selectFrom('roles as r'), 'r', query);
  qb = withNameDescriptionFilters(qb, 'r', query);
  if (query.roleType) qb = qb.where('r.role_type', 'in', query.roleType.flatMap((value) => value.split(',')) as RoleType[]);
  if (query.readonly !== undefined) qb = qb.where('r.readonly', '=', query.readonly);
  return fetchPageIds(qb, 'r', request, ROLE_SORT_COLUMNS);
}

export const lockRole = (db: Database, id: string) =>
  db.selectFrom('roles').select(['id', 'readonly', 'role_type']).where('id', '=', id).forUpdate().executeTakeFirst();

/** Permission types of the given ids; ids that are not permissions are missing from the map. */
export async function permissionTypes(db: Database, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('permissions').select(['id', 'permission_type']).where('id', 'in', ids).execute();
  return new Map(rows.map((row) => [row.id, row.permission_type]));
}

export async function setRolePermissions(db: Database, roleId: string, permissionIds: string[]) {
  await db.deleteFrom('role_permissions').where('role_id', '=', roleId).execute();
  if (permissionIds.length > 0) {
    await db.insertInto('role_permissions').values(permissionIds.map((permissionId) => ({ role_id: roleId, permission_id: permissionId }))).execute();
  }
}

/** Whether the role is assigned anywhere but at TENANT scope (where a SYSTEM role may not go). */
export const hasNonTenantAssignments = async (db: Database, roleId: string) =>
  !!(await db.selectFrom('assignments').select('id').where('role_id', '=', roleId).where('scope_type', '!=', 'TENANT').executeTakeFirst());

export const countAssignmentsOfRole = async (db: Database, roleId: string) =>
  Number((await db.selectFrom('assignments').select((eb) => eb.fn.countAll<number>().as('n')).where('role_id', '=', roleId).executeTakeFirstOrThrow()).n);
