import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import type { PermissionRow } from '../../db/schema.js';
import { withNameDescriptionFilters, withSharedFilters } from '../../db/list-query.js';
import { parseSort } from '../../http/page.js';
import type { PermissionListQuery } from './permissions.schemas.js';

export const PERMISSION_SORT_COLUMNS: Record<string, string> = {
  name: 'p.name', description: 'p.description', permissionType: 'p.permission_type', category: 'p.category',
  source: 'p.source', createdAt: 'p.created_at', modifiedAt: 'p.modified_at',
};

export async function findPermissions(db: Database, query: PermissionListQuery): Promise<PermissionRow[]> {
  const sort = parseSort(query.sort, Object.keys(PERMISSION_SORT_COLUMNS), { property: 'name', direction: 'asc' });
  let qb = withSharedFilters(db.selectFrom('permissions as p').selectAll('p'), 'p', query);
  qb = withNameDescriptionFilters(qb, 'p', query);
  if (query.permissionType) qb = qb.where('p.permission_type', '=', query.permissionType);
  if (query.category) qb = qb.where('p.category', '=', query.category);
  if (query.source) qb = qb.where('p.source', '=', query.source);
  for (const { property, direction } of sort) qb = qb.orderBy(sql.ref(PERMISSION_SORT_COLUMNS[property]!), direction);
  return qb.orderBy('p.id').execute();
}

export const findPermission = (db: Database, id: string) =>
  db.selectFrom('permissions').selectAll().where('id', '=', id).executeTakeFirst();
