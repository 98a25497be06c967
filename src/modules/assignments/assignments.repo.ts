import { sql, type ExpressionBuilder } from 'kysely';
import type { Database } from '../../db/client.js';
import type { DB, RoleType, ScopeType } from '../../db/schema.js';
import { containsAny, fetchPageIds, inIdOrder, withSharedFilters, type ListRequest } from '../../db/list-query.js';
import { iso } from '../../http/resource.js';
import { scopeNameSql } from '../../access/scopes.js';
import type { Assignment, AssignmentListQuery } from './assignments.schemas.js';

export const ASSIGNMENT_SORT_COLUMNS: Record<string, string> = {
  createdAt: 'a.created_at', modifiedAt: 'a.modified_at', scopeType: 'a.scope_type',
};

type AssignmentFilter = (eb: ExpressionBuilder<DB & { a: DB['assignments'] }, 'a'>) => ReturnType<ExpressionBuilder<any, any>['and']>;

/** Loads full assignment representations (group, role, scope name) matching a filter, in one query. */
export async function loadAssignments(db: Database, filter: AssignmentFilter): Promise<Assignment[]> {
  const rows = await db
    .selectFrom('assignments as a')
    .innerJoin('groups as g', 'g.id', 'a.group_id')
    .innerJoin('roles as r', 'r.id', 'a.role_id')
    .select([
      'a.id', 'a.created_at', 'a.modified_at', 'a.scope_type', 'a.scope_id',
      'g.id as group_id', 'g.name as group_name', 'g.description as group_description',
      'r.id as role_id', 'r.name as role_name', 'r.description as role_description', 'r.readonly as role_readonly', 'r.role_type',
      scopeNameSql('a').as('scope_name'),
    ])
    .where((eb) => filter(eb as never))
    .orderBy('a.created_at')
    .orderBy('a.id')
    .execute();
  return rows.map((row) => ({
    id: row.id,
    createdAt: iso(row.created_at),
    modifiedAt: iso(row.modified_at),
    group: { id: row.group_id, name: row.group_name, description: row.group_description },
    role: { id: row.role_id, name: row.role_name, description: row.role_description, readonly: row.role_readonly, roleType: row.role_type },
    scope: { id: row.scope_id, name: row.scope_name ?? '' },
    scopeType: row.scope_type,
  }));
}

export const loadAssignmentsByIds = async (db: Database, ids: string[]) =>
  ids.length === 0 ? [] : inIdOrder(ids, await loadAssignments(db, (eb) => eb('a.id', 'in', ids)));

export const loadAssignmentsOfScope = (db: Database, scopeType: ScopeType, scopeId: string) =>
  loadAssignments(db, (eb) => eb.and([eb('a.scope_type', '=', scopeType), eb('a.scope_id', '=', scopeId)]));

export async function findAssignmentPage(db: Database, query: AssignmentListQuery, request: ListRequest) {
  let qb = withSharedFilters(
    db.selectFrom('assignments as a').innerJoin('roles as r', 'r.id', 'a.role_id').innerJoin('groups as g', 'g.id', 'a.group_id'),
    'a',
    query,
  );
  if (query.roleId) qb = qb.where('a.role_id', '=', query.roleId);
  if (query.groupId) qb = qb.where('a.group_id', '=', query.groupId);
  if (query.userId) {
    const userId = query.userId;
    qb = qb.where((eb) => eb.exists(eb.selectFrom('group_members as gm').select(sql.lit(1).as('one'))
      .whereRef('gm.group_id', '=', 'a.group_id').where('gm.user_id', '=', userId)));
  }
  if (query.scopeId) qb = qb.where('a.scope_id', '=', query.scopeId);
  if (query.scopeType) qb = qb.where('a.scope_type', '=', query.scopeType as ScopeType);
  if (query.roleType) qb = qb.where('r.role_type', '=', query.roleType as RoleType);
  if (query.q) qb = qb.where(containsAny(['r.name', 'r.description', 'g.name'], query.q));
  return fetchPageIds(qb, 'a', request, ASSIGNMENT_SORT_COLUMNS);
}
