import { randomUUID } from 'node:crypto';
import type { Database } from '../../db/client.js';
import type { ScopeType } from '../../db/schema.js';
import type { Caller } from '../../access/caller.js';
import { assertMayAssign } from '../../access/effective-grants.js';
import { AppError, notFound, validationFailed } from '../../errors.js';
import { assertIfMatch } from '../../http/etag.js';
import { pageOf, parseSort } from '../../http/page.js';
import { findScopeType, scopeColumns, scopeExists } from '../../access/scopes.js';
import { isUniqueViolation } from '../../db/constraint-errors.js';
import { ASSIGNMENT_SORT_COLUMNS, findAssignmentPage, loadAssignmentsByIds } from './assignments.repo.js';
import { assertTenantAdministratorRemains, keepingATenantAdministrator, lockTenantAdministratorGuard } from './tenant-administrator-guard.js';
import type { Assignment, AssignmentInput, AssignmentListQuery, GroupRoleAssignmentInput, ScopedAssignmentInput } from './assignments.schemas.js';
import { recordEvents, type Actor, type AuditChange } from '../audit/index.js';

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

interface AssignableItem { groupId: string; roleId: string; scopeType: ScopeType; field: string }

/**
 * Every group and role of the items exists, and a SYSTEM role (tenant administration) is only
 * given at TENANT scope. Two queries for any number of items; FOR KEY SHARE makes a concurrent
 * delete of one of those groups or roles wait for this transaction, and then see its assignments.
 */
async function lockGroupsAndRoles(db: Database, items: AssignableItem[]) {
  if (items.length === 0) return;
  const groupIds = [...new Set(items.map((item) => item.groupId))];
  const roleIds = [...new Set(items.map((item) => item.roleId))];
  const groups = new Set((await db.selectFrom('groups').select('id').where('id', 'in', groupIds).forKeyShare().execute()).map((g) => g.id));
  const roleTypes = new Map((await db.selectFrom('roles').select(['id', 'role_type']).where('id', 'in', roleIds).forKeyShare().execute()).map((r) => [r.id, r.role_type]));
  for (const item of items) {
    if (!groups.has(item.groupId)) throw validationFailed(`${item.field}groupId`, 'no group has this id');
    const roleType = roleTypes.get(item.roleId);
    if (!roleType) throw validationFailed(`${item.field}roleId`, 'no role has this id');
    if (roleType === 'SYSTEM' && item.scopeType !== 'TENANT') {
      throw validationFailed(`${item.field}roleId`, 'a SYSTEM role can only be assigned at TENANT scope');
    }
  }
}

/** What the audit log keeps of an assignment: enough to tell who held which role where. */
const stateOf = (a: ResolvedAssignment) => ({ groupId: a.groupId, roleId: a.roleId, scopeType: a.scopeType, scopeId: a.scopeId });
const stateOfRow = (row: { group_id: string; role_id: string; scope_type: ScopeType; scope_id: string }) =>
  stateOf({ groupId: row.group_id, roleId: row.role_id, scopeType: row.scope_type, scopeId: row.scope_id });

const deletedEvent = (row: { id: string; group_id: string; role_id: string; scope_type: ScopeType; scope_id: string }): AuditChange =>
  ({ type: 'ASSIGNMENT_DELETED', objectType: 'ASSIGNMENT', objectId: row.id, before: stateOfRow(row), after: null });

async function insertAssignments(db: Database, actor: Actor, assignments: ResolvedAssignment[]): Promise<string[]> {
  if (assignments.length === 0) return [];
  const rows = assignments.map((a) => ({ id: randomUUID(), group_id: a.groupId, role_id: a.roleId, ...scopeColumns(a.scopeType, a.scopeId) }));
  try {
    await db.insertInto('assignments').values(rows).execute();
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('UNIQUE_CONSTRAINT_VIOLATION', 'This group already holds this role on this scope');
    throw error;
  }
  await recordEvents(db, actor, rows.map((row, index) => ({
    type: 'ASSIGNMENT_CREATED', objectType: 'ASSIGNMENT', objectId: row.id, before: null, after: stateOf(assignments[index]!),
  })));
  return rows.map((row) => row.id);
}

/**
 * Records the deletion of every assignment of a group, or on a scope object, that is about to go
 * with it by the foreign key's cascade: called in the deleting transaction, before the delete.
 */
export async function recordCascadingAssignmentDeletes(trx: Database, actor: Actor, owner: { column: 'group_id' | 'scope_id'; value: string }): Promise<void> {
  // FOR UPDATE: an assignment deleted concurrently is either waited for and skipped, or deleted by
  // this transaction; never recorded twice.
  const rows = await trx.selectFrom('assignments').select(['id', 'group_id', 'role_id', 'scope_type', 'scope_id'])
    .where(owner.column, '=', owner.value).orderBy('created_at').orderBy('id').forUpdate().execute();
  await recordEvents(trx, actor, rows.map(deletedEvent));
}

export async function createAssignment(db: Database, caller: Caller, actor: Actor, tenantId: string, input: AssignmentInput): Promise<Assignment> {
  // The answer is read before the commit: a delete of the scope object waiting on this
  // transaction may remove the assignment right after it, and the creation still happened.
  return db.transaction().execute(async (trx) => {
    const scope = await resolveScope(trx, tenantId, input.scopeType ?? undefined, input.scopeId ?? undefined, '');
    await lockGroupsAndRoles(trx, [{ groupId: input.groupId, roleId: input.roleId, scopeType: scope.scopeType, field: '' }]);
    const assignment = { groupId: input.groupId, roleId: input.roleId, ...scope };
    await assertMayAssign(trx, caller, [assignment]);
    const [id] = await insertAssignments(trx, actor, [assignment]);
    return getAssignment(trx, id!);
  });
}

export async function getAssignment(db: Database, id: string): Promise<Assignment> {
  const [assignment] = await loadAssignmentsByIds(db, [id]);
  if (!assignment) throw notFound('Assignment', id);
  return assignment;
}

export async function deleteAssignment(db: Database, actor: Actor, id: string, ifMatch: string | undefined): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await lockTenantAdministratorGuard(trx);
    const current = await getAssignment(trx, id);
    assertIfMatch(ifMatch, current);
    // Only what this transaction itself removed is recorded: a concurrent delete that won leaves nothing to record.
    const removed = await keepingATenantAdministrator(trx, () => trx.deleteFrom('assignments').where('id', '=', id)
      .returning(['id', 'group_id', 'role_id', 'scope_type', 'scope_id']).execute());
    await recordEvents(trx, actor, removed.map(deletedEvent));
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
 * their id and timestamps, the others are deleted or inserted. Runs inside the caller's
 * transaction. `guarded`: the change may touch Tenant Administrator assignments, so the
 * last-administrator rules apply (the caller holds the guard lock). The inserted ones are grants:
 * the caller must hold what they give.
 */
async function replaceByDifference(
  trx: Database, caller: Caller, actor: Actor, owned: { column: 'group_id' | 'scope_id'; value: string }, desired: ResolvedAssignment[], guarded: boolean,
) {
  const existing = await trx.selectFrom('assignments').select(['id', 'group_id', 'role_id', 'scope_type', 'scope_id'])
    .where(owned.column, '=', owned.value).execute();
  const wanted = new Map(desired.map((a) => [keyOf(a), a]));
  const staleIds = existing
    .filter((row) => !wanted.delete(keyOf({ groupId: row.group_id, roleId: row.role_id, scopeType: row.scope_type, scopeId: row.scope_id })))
    .map((row) => row.id);
  if (staleIds.length > 0) {
    // Recorded from what the delete returns: one a concurrent delete removed first is not this change.
    const removeStale = () => trx.deleteFrom('assignments').where('id', 'in', staleIds)
      .returning(['id', 'group_id', 'role_id', 'scope_type', 'scope_id']).execute();
    const removed = guarded ? await keepingATenantAdministrator(trx, removeStale) : await removeStale();
    await recordEvents(trx, actor, removed.map(deletedEvent));
  }
  await assertMayAssign(trx, caller, [...wanted.values()]);
  await insertAssignments(trx, actor, [...wanted.values()]);
  if (guarded) await assertTenantAdministratorRemains(trx);
  return staleIds.length > 0 || wanted.size > 0;
}

/** PUT /groups/{groupId}/assignments: every role assignment of the group, replaced by difference. */
export async function replaceGroupAssignments(trx: Database, caller: Caller, actor: Actor, tenantId: string, groupId: string, items: GroupRoleAssignmentInput[]): Promise<boolean> {
  await lockTenantAdministratorGuard(trx); // before any row lock: the order every guarded write uses
  const desired: ResolvedAssignment[] = [];
  const checks: AssignableItem[] = [];
  // Many items name the same scope (several roles on one datapool): look each scope up once.
  const scopes = new Map<string, Awaited<ReturnType<typeof resolveScope>>>();
  for (const [index, item] of items.entries()) {
    const scopeKey = `${item.scopeType ?? ''}|${item.scopeId ?? ''}`;
    const scope = scopes.get(scopeKey) ?? await resolveScope(trx, tenantId, item.scopeType ?? undefined, item.scopeId ?? undefined, `[${index}].`);
    scopes.set(scopeKey, scope);
    checks.push({ groupId, roleId: item.roleId, scopeType: scope.scopeType, field: `[${index}].` });
    desired.push({ groupId, roleId: item.roleId, ...scope });
  }
  await lockGroupsAndRoles(trx, checks);
  return replaceByDifference(trx, caller, actor, { column: 'group_id', value: groupId }, desired, true);
}

/**
 * The `assignments` of a datapool or dataset body: every assignment on that object, replaced by
 * difference. Only DATA roles can be assigned there, never Tenant Administrator, so the
 * last-administrator guard (and its lock) is not involved. `field` names the body field in errors.
 */
export async function replaceScopedAssignments(
  trx: Database, caller: Caller, actor: Actor, scopeType: Exclude<ScopeType, 'TENANT'>, scopeId: string, items: ScopedAssignmentInput[], field = 'assignments',
): Promise<boolean> {
  await lockGroupsAndRoles(trx, items.map((item, index) => ({ ...item, scopeType, field: `${field}[${index}].` })));
  return replaceByDifference(trx, caller, actor, { column: 'scope_id', value: scopeId }, items.map((item) => ({ ...item, scopeType, scopeId })), false);
}
