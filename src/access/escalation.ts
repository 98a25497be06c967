import type { ScopeType } from '../db/schema.js';
import { AppError } from '../errors.js';
import type { Caller } from './caller.js';
import { PERMISSION_CATALOGUE, type PermissionName } from './catalogue.js';
import { hasPermissionOn, type ScopedObject } from './check-access.js';

/** One permission that a change would give someone on one scope (and the datapools that scope lies in, if any). */
export interface PermissionGrant { permission: PermissionName; scopeType: ScopeType; scopeId: string; datapoolId?: string | null; datapoolIds?: readonly string[] }

const keyOf = (grant: PermissionGrant) => `${grant.permission}|${grant.scopeType}|${grant.scopeId}`;

/**
 * Whether the caller holds every permission of the catalogue tenant-wide (a Tenant
 * Administrator): such a caller may grant anything, and the grant computations can be skipped.
 */
export function holdsEverything(caller: Caller): boolean {
  const held = new Set(caller.grants.filter((grant) => grant.scopeType === 'TENANT').map((grant) => grant.permission));
  return PERMISSION_CATALOGUE.every((permission) => held.has(permission.name));
}

function scopedObjectOf(grant: PermissionGrant): ScopedObject {
  if (grant.scopeType === 'TENANT' || grant.scopeType === 'DATAPOOL') return { scopeType: grant.scopeType, id: grant.scopeId };
  return { scopeType: grant.scopeType, id: grant.scopeId, datapoolId: grant.datapoolId ?? null, datapoolIds: grant.datapoolIds ?? [] };
}

/**
 * The rule of Kubernetes RBAC against privilege escalation: a change that grants permissions
 * needs the caller to hold each of them at a scope covering the scope it is granted on.
 * Otherwise 403 ACCESS_DENIED naming every missing one (also as `missingPermissions`).
 */
export function assertMayGrant(caller: Caller, grants: Iterable<PermissionGrant>): void {
  const missing = new Map<string, PermissionGrant>();
  for (const grant of grants) {
    if (!hasPermissionOn(caller, grant.permission, scopedObjectOf(grant))) missing.set(keyOf(grant), grant);
  }
  if (missing.size === 0) return;
  const list = [...missing.values()].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1))
    .map(({ permission, scopeType, scopeId }) => ({ permission, scopeType, scopeId }));
  const named = list.map((grant) => `${grant.permission} on ${grant.scopeType} ${grant.scopeId}`).join(', ');
  throw new AppError('ACCESS_DENIED', `This change would grant permissions you do not hold on that scope: ${named}`, {
    extensions: { missingPermissions: list },
  });
}
