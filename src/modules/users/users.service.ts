import { randomUUID } from 'node:crypto';
import type { Database } from '../../db/client.js';
import type { Caller } from '../../access/caller.js';
import { constraintOf, isUniqueViolation } from '../../db/constraint-errors.js';
import { assertMayRebindUser, grantingNoMoreThanCallerHolds } from '../../access/effective-grants.js';
import { lockMissingIds } from '../../db/missing-ids.js';
import { keepingATenantAdministrator, lockTenantAdministratorGuard } from '../assignments/index.js';
import { AppError, notFound, validationFailed } from '../../errors.js';
import { recordEvent, type Actor } from '../audit/index.js';
import { assertIfMatch } from '../../http/etag.js';
import { pageOf, parseSort } from '../../http/page.js';
import {
  deleteUserRow, findUserPage, groupIdsOfUser, insertUser, loadUsers, lockUser, replaceMemberships, touchUser,
  updateUserRow, USER_SORT_COLUMNS, type UserValues,
} from './users.repo.js';
import type { CurrentUser, User, UserInput, UserListQuery, UserPatch } from './users.schemas.js';

/**
 * Runs the insert or update of a user row: a taken email or externalId answers 409 naming it, so
 * that a race between two writes answers like the pre-check would.
 */
async function writeUserRow(values: UserValues, write: () => Promise<unknown>): Promise<void> {
  try {
    await write();
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    const externalId = constraintOf(error) === 'users_external_id_key';
    throw new AppError('UNIQUE_CONSTRAINT_VIOLATION', externalId
      ? `A user with the externalId "${values.externalId}" already exists`
      : `A user with the email "${values.email.toLowerCase()}" already exists`, {
      fieldErrors: [{ field: externalId ? 'externalId' : 'email', message: 'is already taken' }],
    });
  }
}

export async function getUser(db: Database, id: string): Promise<User> {
  const [user] = await loadUsers(db, [id]);
  if (!user) throw notFound('User', id);
  return user;
}

export async function listUsers(db: Database, query: UserListQuery) {
  const request = { page: query.page, size: query.size, sort: parseSort(query.sort, Object.keys(USER_SORT_COLUMNS)) };
  const { ids, total } = await findUserPage(db, query, request);
  return pageOf(await loadUsers(db, ids), total, request);
}

/** The audit log's view of a user's memberships: group ids, sorted, so that equal sets compare equal. */
const groupList = (ids: readonly string[]) => [...new Set(ids)].sort();

/**
 * Makes the user a member of exactly `groupIds` (400 naming `field[i]` for an unknown group),
 * refusing a change that leaves nobody administering the tenant or that grants the user what
 * the caller does not hold, and records USER_GROUPS_CHANGED when the memberships changed
 * (`created`: the user did not exist before this transaction). The caller holds the guard lock
 * and the user's row.
 */
async function setGroupsOfUser(trx: Database, caller: Caller, actor: Actor, id: string, groupIds: string[], field: string, created = false): Promise<number> {
  const unknown = await lockMissingIds(trx, 'groups', groupIds);
  const index = groupIds.findIndex((groupId) => unknown.has(groupId));
  if (index >= 0) throw validationFailed(`${field}[${index}]`, 'no group has this id');
  const before = created ? null : groupList(await groupIdsOfUser(trx, id));
  const changed = await grantingNoMoreThanCallerHolds(trx, caller, [id], () => keepingATenantAdministrator(trx, () => replaceMemberships(trx, id, groupIds)));
  if (changed > 0) await recordEvent(trx, actor, { type: 'USER_GROUPS_CHANGED', objectType: 'USER', objectId: id, before, after: groupList(groupIds) });
  return changed;
}

export async function createUser(db: Database, caller: Caller, actor: Actor, input: UserInput): Promise<User> {
  const id = randomUUID();
  const values: UserValues = {
    email: input.email, firstName: input.firstName, lastName: input.lastName, phone: input.phone ?? null,
    title: input.title ?? 'OTHER', active: input.active ?? true, externalId: input.externalId ?? null,
  };
  await db.transaction().execute(async (trx) => {
    if (input.groupIds) await lockTenantAdministratorGuard(trx); // the order every membership change takes
    await writeUserRow(values, () => insertUser(trx, id, values));
    if (input.groupIds) await setGroupsOfUser(trx, caller, actor, id, input.groupIds, 'groupIds', true);
  });
  return getUser(db, id);
}

/**
 * PUT replaces every field (omitted optional ones take their defaults; groupIds left out or null
 * keeps the memberships); PATCH changes the given ones, null clearing phone, externalId and
 * groupIds. A change of email or externalId hands the user's permissions to another identity,
 * and reactivating a user gives them back their permissions: both are checked as grants.
 */
export async function updateUser(
  db: Database, caller: Caller, actor: Actor, id: string, input: UserInput | UserPatch, mode: 'replace' | 'patch', ifMatch: string | undefined,
): Promise<User> {
  return db.transaction().execute(async (trx) => {
    await lockTenantAdministratorGuard(trx); // before the user row, in the order group writes take them: no deadlock
    if (!(await lockUser(trx, id))) throw notFound('User', id);
    const current = await getUser(trx, id);
    assertIfMatch(ifMatch, current);
    const replace = mode === 'replace';
    const values: UserValues = {
      email: input.email ?? current.email,
      firstName: input.firstName ?? current.firstName,
      lastName: input.lastName ?? current.lastName,
      phone: input.phone !== undefined ? input.phone : replace ? null : current.phone,
      title: input.title ?? (replace ? 'OTHER' : current.title),
      active: input.active ?? (replace ? true : current.active),
      externalId: input.externalId !== undefined ? input.externalId : replace ? null : current.externalId,
    };
    if (values.email.toLowerCase() !== current.email || values.externalId !== current.externalId) await assertMayRebindUser(trx, caller, id);
    const groupIds = input.groupIds ?? (input.groupIds === null && !replace ? [] : undefined);
    await grantingNoMoreThanCallerHolds(trx, caller, [id], () => keepingATenantAdministrator(trx, () =>
      writeUserRow(values, () => updateUserRow(trx, id, values))));
    if (groupIds) await setGroupsOfUser(trx, caller, actor, id, groupIds, 'groupIds');
    return getUser(trx, id);
  });
}

export async function deleteUser(db: Database, actor: Actor, id: string, ifMatch: string | undefined): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await lockTenantAdministratorGuard(trx); // before the user row, in the order group writes take them: no deadlock
    if (!(await lockUser(trx, id))) throw notFound('User', id);
    const current = await getUser(trx, id);
    assertIfMatch(ifMatch, current);
    // Memberships go with the user; groups and datapools naming them as contact keep existing
    // with the contact cleared (both by the foreign keys).
    await keepingATenantAdministrator(trx, () => deleteUserRow(trx, id));
    if (current.groups.length > 0) {
      await recordEvent(trx, actor, { type: 'USER_GROUPS_CHANGED', objectType: 'USER', objectId: id, before: groupList(current.groups.map((g) => g.id)), after: null });
    }
  });
}

export async function replaceGroupsOfUser(db: Database, caller: Caller, actor: Actor, id: string, groupIds: string[], ifMatch: string | undefined): Promise<User> {
  return db.transaction().execute(async (trx) => {
    await lockTenantAdministratorGuard(trx); // before the user row, in the order group writes take them: no deadlock
    if (!(await lockUser(trx, id))) throw notFound('User', id);
    assertIfMatch(ifMatch, await getUser(trx, id));
    const changed = await setGroupsOfUser(trx, caller, actor, id, groupIds, '');
    if (changed > 0) await touchUser(trx, id);
    return getUser(trx, id);
  });
}

/**
 * The caller's profile as the authentication hook loaded it (user and grants, already narrowed by
 * X-Allowed-Scope-Ids): no further query. An email unknown to the service shows the token's names.
 */
export function currentUserOf(caller: Caller): CurrentUser {
  const byScope = new Map<string, CurrentUser['assignments'][number]>();
  for (const grant of caller.grants) {
    const key = `${grant.scopeType}|${grant.scopeId}`;
    let entry = byScope.get(key);
    if (!entry) byScope.set(key, (entry = { scopeType: grant.scopeType, scopeId: grant.scopeId, permissions: [] }));
    entry.permissions.push(grant.permission);
  }
  const assignments = [...byScope.values()]
    .sort((a, b) => compare(a.scopeType, b.scopeType) || compare(a.scopeId, b.scopeId))
    .map((entry) => ({ ...entry, permissions: [...new Set(entry.permissions)].sort(compare) }));
  const { profile } = caller;
  return {
    id: profile?.userId ?? null,
    username: caller.username ?? caller.email,
    email: profile?.email ?? caller.email,
    firstName: profile?.firstName ?? caller.givenName,
    lastName: profile?.lastName ?? caller.familyName,
    title: profile?.title ?? 'OTHER',
    assignments,
  };
}

// Code-point order, so that the answer does not depend on the server's locale.
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
