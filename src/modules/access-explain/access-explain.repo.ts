import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import type { ScopeType } from '../../db/schema.js';
import { heldGroupsCte } from '../../access/caller.js';

export interface GrantRow {
  permission: string; assignment_id: string; group_id: string; group_name: string; role_id: string; role_name: string;
  scope_type: ScopeType; scope_id: string;
}

/**
 * Every (permission, assignment) through which an active user holds a permission on a dataset, in
 * one query: the assignments of the user's groups and of their ancestors (as the caller's own
 * grants are loaded), on the tenant, on the dataset's datapool or on the dataset itself.
 */
export async function grantsOnDataset(db: Database, userId: string, dataset: { id: string; datapoolId: string | null }): Promise<GrantRow[]> {
  const { rows } = await sql<GrantRow>`
    with recursive ${heldGroupsCte(sql`select gm.user_id, gm.group_id from group_members gm join users u on u.id = gm.user_id
                                        where u.active and gm.user_id = ${userId}`)}
    select distinct p.name as permission, a.id as assignment_id, g.id as group_id, g.name as group_name,
           r.id as role_id, r.name as role_name, a.scope_type, a.scope_id
      from held h
      join assignments a on a.group_id = h.group_id
      join groups g on g.id = a.group_id
      join roles r on r.id = a.role_id
      join role_permissions rp on rp.role_id = r.id
      join permissions p on p.id = rp.permission_id
     where a.scope_type = 'TENANT'
        or (a.scope_type = 'DATASET' and a.scope_id = ${dataset.id})
        or (a.scope_type = 'DATAPOOL' and a.scope_id = ${dataset.datapoolId})
     order by a.scope_type, g.name, r.name, a.id`.execute(db);
  return rows;
}
