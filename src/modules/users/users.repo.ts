import { sql } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import type { Database } from '../../db/client.js';
import { userFullName } from '../../db/user-ref.js';
import type { Title } from '../../db/schema.js';
import { containsAny, containsPattern, fetchPageIds, inIdOrder, withSharedFilters, type ListRequest } from '../../db/list-query.js';
import { iso } from '../../http/resource.js';
import type { User, UserListQuery } from './users.schemas.js';

export const USER_SORT_COLUMNS: Record<string, string> = {
  email: 'u.email', firstName: 'u.first_name', lastName: 'u.last_name', title: 'u.title',
  createdAt: 'u.created_at', modifiedAt: 'u.modified_at',
};

/** Full user representations with their groups and datapools, in one query. */
export async function loadUsers(db: Database, ids: readonly string[]): Promise<User[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('users as u')
    .selectAll('u')
    .select((eb) => [
      jsonArrayFrom(eb.selectFrom('group_members as gm').innerJoin('groups as g', 'g.id', 'gm.group_id')
        .select(['g.id', 'g.name', 'g.description'])
        .whereRef('gm.user_id', '=', 'u.id').orderBy('g.name').orderBy('g.id')).as('groups'),
      // From the user's memberships to their groups' DATAPOOL assignments (distinct: two groups
      // assigned on one datapool list it once), rather than probing every datapool.
      jsonArrayFrom(eb.selectFrom('group_members as gm')
        .innerJoin('assignments as a', 'a.group_id', 'gm.group_id')
        .innerJoin('datapools as d', 'd.id', 'a.scope_id')
        .distinct().select(['d.id', 'd.name'])
        .whereRef('gm.user_id', '=', 'u.id').where('a.scope_type', '=', 'DATAPOOL')
        .orderBy('d.name').orderBy('d.id')).as('datapools'),
    ])
    .where('u.id', 'in', ids)
    .execute();
  return inIdOrder(ids, rows.map((row) => ({
    id: row.id,
    email: row.email,
    firstName: row.first_name,
    lastName: row.last_name,
    phone: row.phone,
    title: row.title,
    active: row.active,
    externalId: row.external_id,
    groups: row.groups,
    datapools: row.datapools,
    createdAt: iso(row.created_at),
    modifiedAt: iso(row.modified_at),
  })));
}

export async function findUserPage(db: Database, query: UserListQuery, request: ListRequest) {
  let qb = withSharedFilters(db.selectFrom('users as u'), 'u', query);
  if (query.firstName) qb = qb.where(containsAny(['u.first_name'], query.firstName));
  if (query.lastName) qb = qb.where(containsAny(['u.last_name'], query.lastName));
  if (query.email) qb = qb.where(sql`lower(u.email)`, '=', query.email.toLowerCase());
  if (query.active !== undefined) qb = qb.where('u.active', '=', query.active);
  if (query.externalId !== undefined) qb = qb.where('u.external_id', '=', query.externalId);
  if (query.q) {
    const pattern = containsPattern(query.q);
    qb = qb.where(sql<boolean>`((${userFullName}) ilike ${pattern} or u.email ilike ${pattern})`);
  }
  return fetchPageIds(qb, 'u', request, USER_SORT_COLUMNS);
}

export interface UserValues {
  email: string; firstName: string; lastName: string; phone: string | null; title: Title; active: boolean; externalId: string | null;
}

const columnsOf = (values: UserValues) => ({
  email: values.email.toLowerCase(),
  first_name: values.firstName,
  last_name: values.lastName,
  phone: values.phone,
  title: values.title,
  active: values.active,
  external_id: values.externalId,
});

export const insertUser = (db: Database, id: string, values: UserValues) =>
  db.insertInto('users').values({ id, ...columnsOf(values) }).execute();

export const updateUserRow = (db: Database, id: string, values: UserValues) =>
  db.updateTable('users').set({ ...columnsOf(values), modified_at: sql`now()` }).where('id', '=', id).execute();

export const deleteUserRow = (db: Database, id: string) => db.deleteFrom('users').where('id', '=', id).execute();

export const lockUser = (db: Database, id: string) =>
  db.selectFrom('users').select('id').where('id', '=', id).forUpdate().executeTakeFirst();

export const groupIdsOfUser = async (db: Database, userId: string) =>
  (await db.selectFrom('group_members').select('group_id').where('user_id', '=', userId).execute()).map((row) => row.group_id);

export const touchUser = (db: Database, id: string) =>
  db.updateTable('users').set({ modified_at: sql`now()` }).where('id', '=', id).execute();

/**
 * Makes the user a member of exactly `groupIds`, by difference, and touches the groups whose
 * membership changed. Returns how many memberships were added or removed.
 */
export async function replaceMemberships(db: Database, userId: string, groupIds: readonly string[]): Promise<number> {
  const current = await db.selectFrom('group_members').select('group_id').where('user_id', '=', userId).execute();
  const before = new Set(current.map((row) => row.group_id));
  const wanted = new Set(groupIds);
  const removed = [...before].filter((id) => !wanted.has(id));
  const added = [...wanted].filter((id) => !before.has(id));
  if (removed.length > 0) {
    await db.deleteFrom('group_members').where('user_id', '=', userId).where('group_id', 'in', removed).execute();
  }
  if (added.length > 0) {
    // A concurrent change of the group's own member list may have added the row already.
    await db.insertInto('group_members').values(added.map((groupId) => ({ group_id: groupId, user_id: userId })))
      .onConflict((oc) => oc.doNothing()).execute();
  }
  const changed = [...removed, ...added];
  if (changed.length > 0) await db.updateTable('groups').set({ modified_at: sql`now()` }).where('id', 'in', changed).execute();
  return changed.length;
}

/** A user's row locked against a concurrent delete (FOR KEY SHARE): whether it exists and is active. */
export async function lockUserState(db: Database, userId: string): Promise<{ active: boolean } | null> {
  const { rows: [row] } = await sql<{ active: boolean }>`select active from users where id = ${userId} for key share`.execute(db);
  return row ?? null;
}

/** Whether a user exists, and whether it is active; undefined when there is none. */
export const findUserActivity = (db: Database, userId: string) =>
  db.selectFrom('users').select(['id', 'active']).where('id', '=', userId).executeTakeFirst();
