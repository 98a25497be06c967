import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import { AppError, notFound, validationFailed } from '../../errors.js';
import type { Caller } from '../../access/caller.js';
import { grantingNoMoreThanCallerHolds, membersOfSubtree } from '../../access/effective-grants.js';
import { assertIfMatch } from '../../http/etag.js';
import { pageOf, parseSort } from '../../http/page.js';
import { uniquely } from '../../db/constraint-errors.js';
import {
  assertTenantAdministratorRemains, keepingATenantAdministrator, lockTenantAdministratorGuard, recordCascadingAssignmentDeletes, replaceGroupAssignments,
  type GroupRoleAssignmentInput,
} from '../assignments/index.js';
import { recordEvent, type Actor } from '../audit/index.js';
import { findGroupPage, GROUP_SORT_COLUMNS, isSelfOrAncestorOf, loadGroups, lockGroup, setMembers, subgroupsOf } from './groups.repo.js';
import { lockMissingIds } from '../../db/missing-ids.js';
import type { Group, GroupInput, GroupListQuery, GroupPatch } from './groups.schemas.js';

const duplicateName = (name: string) => `A group named "${name}" already exists`;

/** The audit log's view of a group's members: their ids, sorted, so that equal sets compare equal. */
const memberList = (ids: readonly string[]) => [...new Set(ids)].sort();

/** GROUP_MEMBERS_CHANGED from `before` to `after` (null: the group did not exist); nothing when they are the same. */
const recordMembers = (trx: Database, actor: Actor, groupId: string, before: string[] | null, after: string[] | null) =>
  recordEvent(trx, actor, { type: 'GROUP_MEMBERS_CHANGED', objectType: 'GROUP', objectId: groupId, before, after });

export async function getGroup(db: Database, id: string): Promise<Group> {
  const [group] = await loadGroups(db, [id]);
  if (!group) throw notFound('Group', id);
  return group;
}

export async function listGroups(db: Database, query: GroupListQuery) {
  const request = { page: query.page, size: query.size, sort: parseSort(query.sort, Object.keys(GROUP_SORT_COLUMNS)) };
  const { ids, total } = await findGroupPage(db, query, request);
  return pageOf(await loadGroups(db, ids), total, request);
}

async function checkUsers(db: Database, contactUserId: string | null | undefined, memberIds: string[] | null | undefined) {
  if (contactUserId && (await lockMissingIds(db, 'users', [contactUserId])).size > 0) throw validationFailed('contactUserId', 'no user has this id');
  if (!memberIds) return;
  const unknown = await lockMissingIds(db, 'users', memberIds);
  const index = memberIds.findIndex((id) => unknown.has(id));
  if (index >= 0) throw validationFailed(`memberIds[${index}]`, 'no user has this id');
}

/** The parent must exist (locked, so it cannot vanish before the write) and must not be the group or one of its subgroups. */
async function checkParent(db: Database, groupId: string, parentGroupId: string | null) {
  if (!parentGroupId) return;
  if ((await lockMissingIds(db, 'groups', [parentGroupId])).size > 0) throw validationFailed('parentGroupId', 'no group has this id');
  if (await isSelfOrAncestorOf(db, groupId, parentGroupId)) {
    throw validationFailed('parentGroupId', 'is the group itself or one of its subgroups: the groups would form a cycle');
  }
}

export async function createGroup(db: Database, caller: Caller, actor: Actor, input: GroupInput): Promise<Group> {
  const id = randomUUID();
  await db.transaction().execute(async (trx) => {
    await checkParent(trx, id, input.parentGroupId ?? null);
    await checkUsers(trx, input.contactUserId, input.memberIds);
    await uniquely(() => trx.insertInto('groups').values({
      id, name: input.name, description: input.description ?? '', contact_user_id: input.contactUserId ?? null, parent_group_id: input.parentGroupId ?? null,
    }).execute(), duplicateName(input.name), 'name');
    // Members of a subgroup receive what its ancestors hold.
    await grantingNoMoreThanCallerHolds(trx, caller, input.memberIds ?? [], () => setMembers(trx, id, input.memberIds ?? []));
    // A group created without members changed nobody's membership: no event.
    if (input.memberIds && input.memberIds.length > 0) await recordMembers(trx, actor, id, null, memberList(input.memberIds));
  });
  return getGroup(db, id);
}

/**
 * PUT replaces every field (omitted or null optional ones are cleared); PATCH changes the given
 * ones, null clearing them. Adding members or moving the group under another parent grants
 * permissions: refused when the caller does not hold them, as is leaving nobody administering.
 */
export async function updateGroup(
  db: Database, caller: Caller, actor: Actor, id: string, input: GroupInput | GroupPatch, mode: 'replace' | 'patch', ifMatch: string | undefined,
): Promise<Group> {
  await db.transaction().execute(async (trx) => {
    // The guard lock first, then the group, then its users: the order every write that takes
    // more than one of them uses (user writes included), so that none can deadlock another.
    await lockTenantAdministratorGuard(trx);
    if (!(await lockGroup(trx, id))) throw notFound('Group', id);
    const current = await getGroup(trx, id);
    assertIfMatch(ifMatch, current);
    const replace = mode === 'replace';
    const given = <T>(value: T | null | undefined, kept: T | null): T | null => (value !== undefined ? value : replace ? null : kept);
    const parentGroupId = given(input.parentGroupId, current.parentGroup?.id ?? null);
    const moved = parentGroupId !== (current.parentGroup?.id ?? null);
    if (moved) await checkParent(trx, id, parentGroupId);
    await checkUsers(trx, input.contactUserId, input.memberIds);
    const name = input.name ?? current.name;
    const memberIds = given(input.memberIds, null);
    // Who may gain permissions: the members given, and when the group moves, everyone below it.
    const affected = [...new Set([...(moved ? await membersOfSubtree(trx, id) : []), ...(memberIds ?? [])])];
    await grantingNoMoreThanCallerHolds(trx, caller, affected, () => keepingATenantAdministrator(trx, async () => {
      await uniquely(() => trx.updateTable('groups').set({
        name,
        description: given(input.description, current.description) ?? '',
        contact_user_id: given(input.contactUserId, current.contactUser?.id ?? null),
        parent_group_id: parentGroupId,
        modified_at: sql`now()`,
      }).where('id', '=', id).execute(), duplicateName(name), 'name');
      if (input.memberIds !== undefined || replace) await setMembers(trx, id, memberIds ?? []);
    }));
    if (input.memberIds !== undefined || replace) {
      await recordMembers(trx, actor, id, memberList(current.members.map((m) => m.id)), memberList(memberIds ?? []));
    }
  });
  return getGroup(db, id);
}

export async function replaceAssignmentsOfGroup(
  db: Database, caller: Caller, actor: Actor, tenantId: string, id: string, items: GroupRoleAssignmentInput[], ifMatch: string | undefined,
): Promise<Group> {
  await db.transaction().execute(async (trx) => {
    await lockTenantAdministratorGuard(trx); // guard before group, as deleteGroup does: no deadlock
    if (!(await lockGroup(trx, id))) throw notFound('Group', id);
    assertIfMatch(ifMatch, await getGroup(trx, id));
    const changed = await replaceGroupAssignments(trx, caller, actor, tenantId, id, items);
    if (changed) await trx.updateTable('groups').set({ modified_at: sql`now()` }).where('id', '=', id).execute();
  });
  return getGroup(db, id);
}

/** A group with subgroups answers 409 RESOURCE_IN_USE: deleting a whole subtree is left to the caller, group by group. */
export async function deleteGroup(db: Database, actor: Actor, id: string, ifMatch: string | undefined): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await lockTenantAdministratorGuard(trx);
    if (!(await lockGroup(trx, id))) throw notFound('Group', id);
    const current = await getGroup(trx, id);
    assertIfMatch(ifMatch, current);
    const subgroups = await subgroupsOf(trx, id);
    if (subgroups.length > 0) {
      throw new AppError('RESOURCE_IN_USE', `The group has subgroups (${subgroups.map((g) => `"${g.name}"`).join(', ')}); delete them or move them to another parent first`);
    }
    // Memberships and assignments go with the group (foreign keys cascade): recorded as removed.
    await recordCascadingAssignmentDeletes(trx, actor, { column: 'group_id', value: id });
    if (current.members.length > 0) await recordMembers(trx, actor, id, memberList(current.members.map((m) => m.id)), null);
    await keepingATenantAdministrator(trx, () => trx.deleteFrom('groups').where('id', '=', id).execute());
    await assertTenantAdministratorRemains(trx);
  });
}
