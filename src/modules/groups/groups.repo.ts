import { sql } from 'kysely';
import { jsonArrayFrom, jsonObjectFrom } from 'kysely/helpers/postgres';
import { userFullName, userRefOf } from '../../db/user-ref.js';
import type { Database } from '../../db/client.js';
import { withNameDescriptionFilters, fetchPageIds, inIdOrder, withSharedFilters, splitIds, type ListRequest } from '../../db/list-query.js';
import { iso } from '../../http/resource.js';
import { loadAssignments } from '../assignments/index.js';
import type { Group, GroupListQuery } from './groups.schemas.js';

export const GROUP_SORT_COLUMNS: Record<string, string> = {
  name: 'g.name', description: 'g.description', createdAt: 'g.created_at', modifiedAt: 'g.modified_at',
};


/** Full group representations: contact, members, datapools and assignments, in two queries. */
export async function loadGroups(db: Database, ids: string[]): Promise<Group[]> {
  if (ids.length === 0) return [];
  const [rows, assignments] = await Promise.all([
    db.selectFrom('groups as g')
      .selectAll('g')
      .select((eb) => [
        userRefOf(eb, 'g.contact_user_id').as('contact_user'),
        jsonObjectFrom(eb.selectFrom('groups as pg').select(['pg.id', 'pg.name']).whereRef('pg.id', '=', 'g.parent_group_id')).as('parent_group'),
        jsonArrayFrom(eb.selectFrom('group_members as gm').innerJoin('users as u', 'u.id', 'gm.user_id')
          .select(['u.id', userFullName.as('name')]).whereRef('gm.group_id', '=', 'g.id').orderBy('u.last_name').orderBy('u.first_name').orderBy('u.id')).as('members'),
        // From the group's own DATAPOOL assignments to their datapools (not every datapool probed).
        jsonArrayFrom(eb.selectFrom('assignments as a').innerJoin('datapools as d', 'd.id', 'a.scope_id').distinct().select(['d.id', 'd.name'])
          .whereRef('a.group_id', '=', 'g.id').where('a.scope_type', '=', 'DATAPOOL').orderBy('d.name')).as('datapools'),
      ])
      .where('g.id', 'in', ids)
      .execute(),
    loadAssignments(db, (eb) => eb('a.group_id', 'in', ids)),
  ]);
  // Node 20 has no Map.groupBy yet.
  const assignmentsByGroup = new Map<string, typeof assignments>();
  for (const assignment of assignments) {
    const list = assignmentsByGroup.get(assignment.group.id);
    if (list) list.push(assignment);
    else assignmentsByGroup.set(assignment.group.id, [assignment]);
  }
  return inIdOrder(ids, rows.map((row) => ({
    id: row.id,
    name: row.name,
    description: row.description,
    contactUser: row.contact_user ?? null,
    parentGroup: row.parent_group ?? null,
    members: row.members,
    datapools: row.datapools,
    assignments: assignmentsByGroup.get(row.id) ?? [],
    createdAt: iso(row.created_at),
    modifiedAt: iso(row.modified_at),
  })));
}

export async function findGroupPage(db: Database, query: GroupListQuery, request: ListRequest) {
  let qb = withSharedFilters(db.selectFrom('groups as g'), 'g', query);
  qb = withNameDescriptionFilters(qb, 'g', query);
  if (query.parentGroupId) qb = qb.where('g.parent_group_id', '=', query.parentGroupId);
  if (query.contactUserId) qb = qb.where('g.contact_user_id', '=', query.contactUserId);
  const memberIds = splitIds(query.memberIds);
  if (memberIds) {
    qb = qb.where((eb) => eb.exists(eb.selectFrom('group_members as gm').select(sql.lit(1).as('one'))
      .whereRef('gm.group_id', '=', 'g.id').where('gm.user_id', 'in', memberIds)));
  }
  return fetchPageIds(qb, 'g', request, GROUP_SORT_COLUMNS);
}

export const lockGroup = (db: Database, id: string) =>
  db.selectFrom('groups').select('id').where('id', '=', id).forUpdate().executeTakeFirst();

export async function setMembers(db: Database, groupId: string, userIds: string[]) {
  await db.deleteFrom('group_members').where('group_id', '=', groupId).execute();
  if (userIds.length > 0) await db.insertInto('group_members').values(userIds.map((userId) => ({ group_id: groupId, user_id: userId }))).execute();
}

/** Whether `groupId` is `candidate` itself or one of its ancestors: making it candidate's parent would close a cycle. */
export async function isSelfOrAncestorOf(db: Database, groupId: string, candidate: string): Promise<boolean> {
  const { rows } = await sql`
    with recursive up(id) as (
      select ${candidate}::uuid
      union
      select g.parent_group_id from groups g join up on g.id = up.id where g.parent_group_id is not null
    )
    select 1 from up where id = ${groupId}`.execute(db);
  return rows.length > 0;
}

export const subgroupsOf = (db: Database, groupId: string) =>
  db.selectFrom('groups').select(['id', 'name']).where('parent_group_id', '=', groupId).orderBy('name').execute();
