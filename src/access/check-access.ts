import { accessDenied } from '../errors.js';
import type { Caller } from './caller.js';
import type { PermissionName } from './catalogue.js';

/**
 * A data object as authorization sees it: its own scope, and the datapools that contain it.
 * TENANT covers everything; a DATAPOOL covers itself and what it contains; any other scope
 * covers only itself (a dataset's styles, mappings and pipelines are checked as the dataset).
 * A dataset or data structure lies in at most one datapool (`datapoolId`); a data source lies in
 * every datapool its SPECIFIC scope names (`datapoolIds`), and a grant on any of them covers it.
 */
export type ScopedObject =
  | { scopeType: 'TENANT' | 'DATAPOOL'; id: string }
  | { scopeType: 'DATASET' | 'DATASOURCE' | 'DATASTRUCTURE'; id: string; datapoolId?: string | null; datapoolIds?: readonly string[] };

/** The datapools an object lies in (a datapool: itself). */
function containingDatapools(object: ScopedObject): string[] {
  if (object.scopeType === 'DATAPOOL') return [object.id];
  if (!('datapoolId' in object) && !('datapoolIds' in object)) return [];
  return [...(object.datapoolId ? [object.datapoolId] : []), ...(object.datapoolIds ?? [])];
}

function hasTenantPermission(caller: Caller, permission: PermissionName): boolean {
  return caller.grants.some((grant) => grant.permission === permission && grant.scopeType === 'TENANT');
}

/** Tenant-level resources (users, groups, roles, assignments, permissions): 403 without the permission. */
export function requireTenantPermission(caller: Caller, permission: PermissionName): void {
  if (!hasTenantPermission(caller, permission)) throw accessDenied(permission);
}

export function hasPermissionOn(caller: Caller, permission: PermissionName, object: ScopedObject): boolean {
  const datapoolIds = containingDatapools(object);
  return caller.grants.some(
    (grant) =>
      grant.permission === permission &&
      (grant.scopeType === 'TENANT' ||
        (grant.scopeType === object.scopeType && grant.scopeId === object.id) ||
        (grant.scopeType === 'DATAPOOL' && datapoolIds.includes(grant.scopeId))),
  );
}

/**
 * What a list may contain, for the list query to apply in SQL: everything, or the objects whose
 * own id or whose datapool is among the granted ones.
 */
export type ReadableScope = { all: true } | { all: false; ids: string[]; datapoolIds: string[] };

export function readableScope(caller: Caller, permission: PermissionName, scopeType: Exclude<ScopedObject['scopeType'], 'TENANT'>): ReadableScope {
  const ids = new Set<string>();
  const datapoolIds = new Set<string>();
  for (const grant of caller.grants) {
    if (grant.permission !== permission) continue;
    if (grant.scopeType === 'TENANT') return { all: true };
    if (grant.scopeType === scopeType) ids.add(grant.scopeId);
    if (grant.scopeType === 'DATAPOOL') datapoolIds.add(grant.scopeId);
  }
  return { all: false, ids: [...ids], datapoolIds: [...datapoolIds] };
}

/**
 * Datapools are data objects for reading: DATAPOOL_READ on a covering scope reads one, and so does
 * any permission held through an assignment on the datapool itself (a Data Owner of a pool sees it).
 */
export function mayReadDatapool(caller: Caller, id: string): boolean {
  return hasPermissionOn(caller, 'DATAPOOL_READ', { scopeType: 'DATAPOOL', id })
    || caller.grants.some((grant) => grant.scopeType === 'DATAPOOL' && grant.scopeId === id);
}

/** The datapools a list may contain, by the rule of `mayReadDatapool`. */
export function readableDatapools(caller: Caller): ReadableScope {
  const byPermission = readableScope(caller, 'DATAPOOL_READ', 'DATAPOOL');
  if (byPermission.all) return byPermission;
  const ids = new Set([...byPermission.ids, ...byPermission.datapoolIds]);
  for (const grant of caller.grants) if (grant.scopeType === 'DATAPOOL') ids.add(grant.scopeId);
  return { all: false, ids: [...ids], datapoolIds: [] };
}
