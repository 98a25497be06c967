import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import type { RoleType } from '../../db/schema.js';
import type { Caller } from '../../access/caller.js';
import { assertMayAddToRole } from '../../access/effective-grants.js';
import { AppError, notFound, validationFailed } from '../../errors.js';
import { assertIfMatch } from '../../http/etag.js';
import { pageOf, parseSort } from '../../http/page.js';
import { uniquely } from '../../db/constraint-errors.js';
import { recordEvent, type Actor } from '../audit/index.js';
import {
  countAssignmentsOfRole, findRolePage, hasNonTenantAssignments, loadRoles, lockRole, permissionTypes, ROLE_SORT_COLUMNS, setRolePermissions,
} from './roles.repo.js';
import type { Role, RoleInput, RoleListQuery, RolePatch } from './roles.schemas.js';

const duplicateName = (name: string) => `A role named "${name}" already exists`;

/** The audit log's view of a role: its permission names, sorted. */
const permissionNames = (role: Role) => role.permissions.map((p) => p.name).sort();

/** ROLE_PERMISSIONS_CHANGED from `before` to `after` (null: the role did not exist); nothing when they are the same. */
const recordPermissions = (trx: Database, actor: Actor, roleId: string, before: string[] | null, after: string[] | null) =>
  recordEvent(trx, actor, { type: 'ROLE_PERMISSIONS_CHANGED', objectType: 'ROLE', objectId: roleId, before, after });

export async function getRole(db: Database, id: string): Promise<Role> {
  const [role] = await loadRoles(db, [id]);
  if (!role) throw notFound('Role', id);
  return role;
}

export async function listRoles(db: Database, query: RoleListQuery) {
  const request = { page: query.page, size: query.size, sort: parseSort(query.sort, Object.keys(ROLE_SORT_COLUMNS)) };
  const { ids, total } = await findRolePage(db, query, request);
  return pageOf(await loadRoles(db, ids), total, request);
}

/** Every permission exists, and a DATA role holds DATA permissions only (tenant administration is SYSTEM). */
async function checkPermissions(db: Database, roleType: RoleType, permissionIds: string[]) {
  const types = await permissionTypes(db, permissionIds);
  permissionIds.forEach((id, index) => {
    if (!types.has(id)) throw validationFailed(`permissionIds[${index}]`, 'no permission has this id');
    if (roleType === 'DATA' && types.get(id) === 'SYSTEM') {
      throw validationFailed(`permissionIds[${index}]`, 'a DATA role cannot hold a SYSTEM permission');
    }
  });
}

export async function createRole(db: Database, actor: Actor, input: RoleInput): Promise<Role> {
  const id = randomUUID();
  await db.transaction().execute(async (trx) => {
    await checkPermissions(trx, input.roleType as RoleType, input.permissionIds ?? []);
    await uniquely(() => trx.insertInto('roles').values({
      id, name: input.name, description: input.description ?? '', role_type: input.roleType as RoleType, readonly: input.readonly ?? false,
    }).execute(), duplicateName(input.name), 'name');
    await setRolePermissions(trx, id, input.permissionIds ?? []);
    // A role created without permissions grants nothing: no event.
    const after = permissionNames(await getRole(trx, id));
    if (after.length > 0) await recordPermissions(trx, actor, id, null, after);
  });
  return getRole(db, id);
}

/**
 * PUT replaces every field (omitted optional ones take their defaults); PATCH changes the given
 * ones (null clears description and permissions). Permissions added to a role that is assigned
 * are granted on every scope it is assigned on: the caller must hold them there.
 */
export async function updateRole(db: Database, caller: Caller, actor: Actor, id: string, input: RoleInput | RolePatch, mode: 'replace' | 'patch', ifMatch: string | undefined): Promise<Role> {
  await db.transaction().execute(async (trx) => {
    const locked = await lockRole(trx, id);
    if (!locked) throw notFound('Role', id);
    const current = await getRole(trx, id);
    assertIfMatch(ifMatch, current);
    if (locked.readonly) throw new AppError('ROLE_READONLY', `The role "${current.name}" is read-only and cannot be changed`);

    const next = mode === 'replace'
      ? { name: input.name!, description: input.description ?? '', roleType: input.roleType as RoleType, readonly: input.readonly ?? false, permissionIds: input.permissionIds ?? [] }
      : {
          name: input.name ?? current.name,
          description: input.description === null ? '' : input.description ?? current.description,
          roleType: (input.roleType ?? current.roleType) as RoleType,
          readonly: input.readonly ?? current.readonly,
          permissionIds: input.permissionIds === null ? [] : input.permissionIds ?? current.permissions.map((p) => p.id),
        };
    await checkPermissions(trx, next.roleType, next.permissionIds);
    const held = new Set(current.permissions.map((p) => p.id));
    await assertMayAddToRole(trx, caller, id, next.permissionIds.filter((permissionId) => !held.has(permissionId)));
    if (next.roleType === 'SYSTEM' && current.roleType !== 'SYSTEM' && (await hasNonTenantAssignments(trx, id))) {
      throw validationFailed('roleType', 'the role is assigned below TENANT scope, where a SYSTEM role cannot be');
    }
    await uniquely(() => trx.updateTable('roles').set({
      name: next.name, description: next.description, role_type: next.roleType, readonly: next.readonly, modified_at: sql`now()`,
    }).where('id', '=', id).execute(), duplicateName(next.name), 'name');
    await setRolePermissions(trx, id, next.permissionIds);
    await recordPermissions(trx, actor, id, permissionNames(current), permissionNames(await getRole(trx, id)));
  });
  return getRole(db, id);
}

export async function deleteRole(db: Database, actor: Actor, id: string, ifMatch: string | undefined): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const locked = await lockRole(trx, id);
    if (!locked) throw notFound('Role', id);
    const current = await getRole(trx, id);
    assertIfMatch(ifMatch, current);
    if (locked.readonly) throw new AppError('ROLE_READONLY', `The role "${current.name}" is read-only and cannot be deleted`);
    const assignments = await countAssignmentsOfRole(trx, id);
    if (assignments > 0) {
      throw new AppError('RESOURCE_IN_USE', `The role "${current.name}" is used by ${assignments} assignment(s); delete them first`);
    }
    await trx.deleteFrom('roles').where('id', '=', id).execute();
    if (current.permissions.length > 0) await recordPermissions(trx, actor, id, permissionNames(current), null);
  });
}
