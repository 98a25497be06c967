import type { Database } from '../../db/client.js';
import type { PermissionRow } from '../../db/schema.js';
import { notFound } from '../../errors.js';
import { iso } from '../../http/resource.js';
import { findPermission, findPermissions } from './permissions.repo.js';
import type { Permission, PermissionListQuery } from './permissions.schemas.js';

const toPermission = (row: PermissionRow): Permission => ({
  id: row.id,
  name: row.name,
  description: row.description,
  permissionType: row.permission_type,
  category: row.category,
  source: row.source,
  createdAt: iso(row.created_at),
  modifiedAt: iso(row.modified_at),
});

export async function listPermissions(db: Database, query: PermissionListQuery): Promise<Permission[]> {
  return (await findPermissions(db, query)).map(toPermission);
}

export async function getPermission(db: Database, id: string): Promise<Permission> {
  const row = await findPermission(db, id);
  if (!row) throw notFound('Permission', id);
  return toPermission(row);
}
