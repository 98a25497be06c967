import { randomUUID } from 'node:crypto';
import type { Database } from '../../db/client.js';
import type { ScopeType } from '../../db/schema.js';
import { AppError, notFound, validationFailed } from '../../errors.js';
import { assertIfMatch } from '../../http/etag.js';
import { pageOf, parseSort } from '../../http/page.js';
import { findScopeType, scopeExists } from '../../access/scopes.js';
import { isUniqueViolation } from '../../db/constraint-errors.js';
import { ASSIGNMENT_SORT_COLUMNS, findAssignmentPage, loadAssignmentsByIds } from './assignments.repo.js';
import { assertTenantAdministratorRemains, keepingATenantAdministrator, lockTenantAdministratorGuard } from './tenant-administrator-guard.js';
import type { Assignment, AssignmentInput, AssignmentListQuery, GroupRoleAssignmentInput, ScopedAssignmentInput } from './assignments.schemas.js';

export interface ResolvedAssignment { groupId: string; roleId: string; scopeType: ScopeType; scopeId: string }

/**
 * Completes and checks the scope of an assignment input: scopeType defaults to TENANT (scopeId
 * the tenant's), or is found from scopeId; the scope must exist. `field` prefixes field names.
 */
async function resolveScope(db: Database, tenantId: string, scopeType: ScopeType | undefined, scopeId: string | undefined, field: string) {
  if (!scopeType) {
    if (!scopeId || scopeId === tenantId) return { scopeType: 'TENANT' as const, scopeId: tenantId };
    const found = await findScopeType(db, scopeId);
    if (!found) throw validationFailed(`${field}scopeId`, 'no tenant, datapool, dataset, data source or data structure has this id');
    return { scopeType: found, scopeId };
  }
  if (scopeType === 'TENANT') {
    if (scopeId && scopeId !== tenantId) throw validationFailed(`${field}scopeId`, 'a TENANT assignment takes the tenant id (or no scopeId)');
    return { scopeType, scopeId: tenantId };
  }
  if (!scopeId) throw validationFailed(`${field}scopeId`, `is required for scopeType ${scopeType}`);
  if (!(await scopeExists(db, scopeType, scopeId))) throw validationFailed(`${field}scopeId`, `no ${scopeType} has this id`);
  return { scopeType, scopeId };
}

/** The group and the role exist, and a SYSTEM role (tenant administration) is only given at TENANT scope. */
async function checkGroupAndRole(db: Database, groupId: string, roleId: string, scopeType: ScopeType, field: string) {
  const [group, role] = await Promise.all([
    // FOR KEY SHARE: a concurrent delete of the group or role waits for this assignment, then sees it.
    db.selectFrom('groups').select('id').where('id', '=', groupId).forKeyShare().executeTakeFirst(),
    db.selectFrom('roles').select(['id', 'role_type']).where('id', '=', roleId).forKeyShare().executeTakeFirst(),
  ]);
  if (!group) throw validationFailed(`${field}groupId`, 'no group has this id');
  if (!role) throw validationFailed(`${field}roleId`, 'no role has this id');
  if (role.role_type === 'SYSTEM' && scopeType !== 'TENANT') {
    throw validationFailed(`${field}roleId`, 'a SYSTEM role can only be assigned at TENANT scope');
  }
}

async function insertAssignment(db: Database, assignment: ResolvedAssignment): Promise<string> {
  const id = randomUUID();
  try {
    await db.insertInto('assignments')
      .values({ id, group_id: assignment.groupId, role_id: assignment.roleId, scope_type: assignment.scopeType, scope_id: assignment.scopeId })
      .execute();
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('UNIQUE_CONSTRAINT_VIOLATION', 'This group already holds this role on this scope');
    throw error;
  }
  return id;
}

export async function createAssignment(db: Database, tenantId: string, input: AssignmentInput): Promise<Assignment> {
  const id = await db.transaction().execute(async (trx) => {
    const scope = await resolveScope(trx, tenantId, input.scopeType as ScopeType | undefined, input.scopeId, '');
    await checkGroupAndRole(trx, input.groupId, input.roleId, scope.scopeType, '');
    return insertAssignment(trx, { groupId: input.groupId, roleId: input.roleId, ...scope });
  });
  return getAssignment(db, id);
}

export async function getAssignment(db: Database, id: string): Promise<Assignment> {
  const [assignment] = await loadAssignmentsByIds(db, [id]);
  if (!assignment) throw notFound('Assignment', id);
  return assignment;
}

export async function deleteAssignment(db: Database, id: string, ifMatch: string | undefined): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await lockTenantAdministratorGuard(trx);
    const current = await getAssignment(trx, id);
    assertIfMatch(ifMatch, current);
    await keepingATenantAdministrator(trx, () => trx.deleteFrom('assignments').where('id', '=', id).execute());
    await assertTenantAdministratorRemains(trx);
  });
}

export async function listAssignments(db: Database, query: AssignmentListQuery) {
  const request = { page: query.page, size: query.size, sort: parseSort(query.sort, Object.keys(ASSIGNMENT_SORT_COLUMNS)) };
  const { ids, total } = await findAssignmentPage(db, query, request);
  return pageOf(await loadAssignmentsByIds(db, ids), total, request);
}

const keyOf = (a: { groupId: string; roleId: string; scopeType: string; scopeId: string }) => `${a.groupId}|${a.roleId}|${a.scopeType}|${a.scopeId}`;

/**
 * Makes the assignments matching `owned` exactly `desired`, by difference: unchanged ones keep
 * their id and timestamps, the others are deleted or inserted. Runs inside the caller's transaction.
 */
async function replaceByDifference(trx: Database, owned: { column: 'group_id' | 'scope_id'; value: string }, desired: ResolvedAssignment[]) {
  const existing = await trx.selectFrom('assignments').select(['id', 'group_id', 'role_id', 'scope_type', 'scope_id'])
    .where(owned.column, '=', owned.value).execute();
  const wanted = new Map(desired.map((a) => [keyOf(a), a]));
  const stale = existing.filter((row) => !wanted.delete(keyOf({ groupId: row.group_id, roleId: row.role_id, scopeType: row.scope_type, scopeId: row.scope_id })));
  if (stale.length > 0) {
    const staleIds = stale.map((row) => row.id);
    await keepingATenantAdministrator(trx, () => trx.deleteFrom('assignments').where('id', 'in', staleIds).execute());
  }
  for (const assignment of wanted.values()) await insertAssignment(trx, assignment);
  await assertTenantAdministratorRemains(trx);
  return stale.length > 0 || wanted.size > 0;
}

/** PUT /groups/{groupId}/assignments: every role assignment of the group, replaced by difference. */
export async function replaceGroupAssignments(trx: Database, tenantId: string, groupId: string, items: GroupRoleAssignmentInput[]): Promise<boolean> {
  await lockTenantAdministratorGuard(trx); // first, before any row lock: the order every guarded write uses
  const desired: ResolvedAssignment[] = [];
  for (const [index, item] of items.entries()) {
    const scope = await resolveScope(trx, tenantId, item.scopeType as ScopeType | undefined, item.scopeId, `[${index}].`);
    await checkGroupAndRole(trx, groupId, item.roleId, scope.scopeType, `[${index}].`);
    desired.push({ groupId, roleId: item.roleId, ...scope });
  }
  return replaceByDifference(trx, { column: 'group_id', value: groupId }, desired);
}

/**
 * The `assignments` of a datapool or dataset body: every assignment on that object, replaced by
 * difference. `field` names the body field in validation errors.
 */
export async function replaceScopedAssignments(trx: Database, scopeType: ScopeType, scopeId: string, items: ScopedAssignmentInput[], field = 'assignments'): Promise<boolean> {
  await lockTenantAdministratorGuard(trx); // first, before any row lock: the order every guarded write uses
  const desired: ResolvedAssignment[] = [];
  for (const [index, item] of items.entries()) {
    await checkGroupAndRole(trx, item.groupId, item.roleId, scopeType, `${field}[${index}].`);
    desired.push({ groupId: item.groupId, roleId: item.roleId, scopeType, scopeId });
  }
  const unique = new Map(desired.map((a) => [keyOf(a), a]));
  return replaceByDifference(trx, { column: 'scope_id', value: scopeId }, [...unique.values()]);
}

/** Removes every assignment on an object that is being deleted (scope ids have no foreign key). */
export async function deleteAssignmentsOfScope(trx: Database, scopeId: string): Promise<void> {
  await trx.deleteFrom('assignments').where('scope_id', '=', scopeId).execute();
}
