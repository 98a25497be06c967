import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import { notFound, validationFailed } from '../../errors.js';
import { assertIfMatch } from '../../http/etag.js';
import { pageOf, parseSort } from '../../http/page.js';
import { uniquely } from '../../db/constraint-errors.js';
import { replaceGroupAssignments } from '../assignments/assignments.service.js';
import type { GroupRoleAssignmentInput } from '../assignments/assignments.schemas.js';
import { assertTenantAdministratorRemains, keepingATenantAdministrator, lockTenantAdministratorGuard } from '../assignments/tenant-administrator-guard.js';
import { findGroupPage, GROUP_SORT_COLUMNS, loadGroups, lockGroup, setMembers } from './groups.repo.js';
import { lockMissingIds } from '../../db/missing-ids.js';
import type { Group, GroupInput, GroupListQuery, GroupPatch } from './groups.schemas.js';

const duplicateName = (name: string) => `A group named "${name}" already exists`;

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

async function checkUsers(db: Database, contactUserId: string | null | undefined, memberIds: string[] | undefined) {
  if (contactUserId && (await lockMissingIds(db, 'users', [contactUserId])).size > 0) throw validationFailed('contactUserId', 'no user has this id');
  if (!memberIds) return;
  const unknown = await lockMissingIds(db, 'users', memberIds);
  const index = memberIds.findIndex((id) => unknown.has(id));
  if (index >= 0) throw validationFailed(`memberIds[${index}]`, 'no user has this id');
}

export async function createGroup(db: Database, input: GroupInput): Promise<Group> {
  const id = randomUUID();
  await db.transaction().execute(async (trx) => {
    await checkUsers(trx, input.contactUserId, input.memberIds);
    await uniquely(() => trx.insertInto('groups').values({
      id, name: input.name, description: input.description ?? '', contact_user_id: input.contactUserId ?? null,
    }).execute(), duplicateName(input.name), 'name');
    await setMembers(trx, id, input.memberIds ?? []);
  });
  return getGroup(db, id);
}

/** PUT replaces every field (omitted optional ones are cleared); PATCH changes the given ones. */
export async function updateGroup(db: Database, id: string, input: GroupInput | GroupPatch, mode: 'replace' | 'patch', ifMatch: string | undefined): Promise<Group> {
  await db.transaction().execute(async (trx) => {
    // The guard lock first, then the group, then its users: the order every write that takes
    // more than one of them uses (user writes included), so that none can deadlock another.
    await lockTenantAdministratorGuard(trx);
    if (!(await lockGroup(trx, id))) throw notFound('Group', id);
    const current = await getGroup(trx, id);
    assertIfMatch(ifMatch, current);
    await checkUsers(trx, input.contactUserId, input.memberIds);
    const replace = mode === 'replace';
    const name = input.name ?? current.name;
    await uniquely(() => trx.updateTable('groups').set({
      name,
      description: input.description ?? (replace ? '' : current.description),
      contact_user_id: input.contactUserId !== undefined ? input.contactUserId : replace ? null : current.contactUser?.id ?? null,
      modified_at: sql`now()`,
    }).where('id', '=', id).execute(), duplicateName(name), 'name');
    if (input.memberIds || replace) await keepingATenantAdministrator(trx, () => setMembers(trx, id, input.memberIds ?? []));
  });
  return getGroup(db, id);
}

export async function replaceAssignmentsOfGroup(db: Database, tenantId: string, id: string, items: GroupRoleAssignmentInput[], ifMatch: string | undefined): Promise<Group> {
  await db.transaction().execute(async (trx) => {
    await lockTenantAdministratorGuard(trx); // guard before group, as deleteGroup does: no deadlock
    if (!(await lockGroup(trx, id))) throw notFound('Group', id);
    assertIfMatch(ifMatch, await getGroup(trx, id));
    const changed = await replaceGroupAssignments(trx, tenantId, id, items);
    if (changed) await trx.updateTable('groups').set({ modified_at: sql`now()` }).where('id', '=', id).execute();
  });
  return getGroup(db, id);
}

export async function deleteGroup(db: Database, id: string, ifMatch: string | undefined): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await lockTenantAdministratorGuard(trx);
    if (!(await lockGroup(trx, id))) throw notFound('Group', id);
    assertIfMatch(ifMatch, await getGroup(trx, id));
    // Memberships and assignments go with the group (foreign keys cascade).
    await keepingATenantAdministrator(trx, () => trx.deleteFrom('groups').where('id', '=', id).execute());
    await assertTenantAdministratorRemains(trx);
  });
}
