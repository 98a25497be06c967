import { sql, type SqlBool } from 'kysely';
import { userRefOf } from '../../db/user-ref.js';
import type { Database } from '../../db/client.js';
import { withNameDescriptionFilters, fetchPageIds, inIdOrder, withSharedFilters, type ListRequest } from '../../db/list-query.js';
import { iso } from '../../http/resource.js';
import type { ReadableScope } from '../../access/check-access.js';
import type { Datapool, DatapoolListQuery } from './datapools.schemas.js';

export const DATAPOOL_SORT_COLUMNS: Record<string, string> = {
  name: 'd.name', description: 'd.description', createdAt: 'd.created_at', modifiedAt: 'd.modified_at',
};


/** Full datapool representations (with the contact person's Ref), in one query. */
export async function loadDatapools(db: Database, ids: string[]): Promise<Datapool[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('datapools as d')
    .selectAll('d')
    .select((eb) => [
      userRefOf(eb, 'd.contact_person_id').as('contact_person'),
    ])
    .where('d.id', 'in', ids)
    .execute();
  return inIdOrder(ids, rows.map((row) => ({
    id: row.id,
    name: row.name,
    description: row.description,
    contactPerson: row.contact_person ?? null,
    datasets: [] as string[], // filled by the service from the datasets module
    createdAt: iso(row.created_at),
    modifiedAt: iso(row.modified_at),
  })));
}

/** One page of the datapools matching the filters among those the caller may read (filtered in SQL). */
export async function findDatapoolPage(db: Database, query: DatapoolListQuery, request: ListRequest, readable: ReadableScope) {
  let qb = withSharedFilters(db.selectFrom('datapools as d'), 'd', query);
  if (!readable.all) {
    // For datapools a grant's own id and its datapool id are the same thing.
    const readableIds = [...new Set([...readable.ids, ...readable.datapoolIds])];
    qb = readableIds.length > 0 ? qb.where('d.id', 'in', readableIds) : qb.where(sql<SqlBool>`false`);
  }
  qb = withNameDescriptionFilters(qb, 'd', query);
  if (query.contactPersonId) qb = qb.where('d.contact_person_id', '=', query.contactPersonId);
  return fetchPageIds(qb, 'd', request, DATAPOOL_SORT_COLUMNS);
}

export const lockDatapool = (db: Database, id: string) =>
  db.selectFrom('datapools').select('id').where('id', '=', id).forUpdate().executeTakeFirst();

export async function datapoolExists(db: Database, id: string): Promise<boolean> {
  return (await db.selectFrom('datapools').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
}

