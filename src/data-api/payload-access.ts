import type { Caller } from '../access/caller.js';
import { hasPermissionOn, type ScopedObject } from '../access/check-access.js';
import type { PayloadRoute } from './route-table.js';

/**
 * What a payload request does, as authorization sees it: the operation, not the HTTP method. A
 * SensorThings `$batch` carries reads and writes that are authorized one by one, so either right
 * admits it (`read-or-write`).
 */
export type PayloadOperation = 'read' | 'write' | 'read-or-write';

/**
 * The gateway's decision for one payload request (the contract's "Payload routes"):
 * - anonymous: passes only a read of an open-data route; anything else is 401 (a client without a
 *   token learns nothing about what is published);
 * - with a token: an unpublished route, or a dataset the caller holds no permission on at all, is
 *   404; a dataset the caller can see (or an open-data one) but lacks the payload permission for is
 *   403. An open-data route is readable with any valid token, as it is without one;
 * - a caller narrowed to some datasets (a personal access token's `datasetIds`) is, on any other
 *   dataset, a caller without permissions.
 */
export type PayloadDecision =
  | { outcome: 'allow'; rights: { read: boolean; write: boolean } }
  | { outcome: 'unauthenticated' }
  | { outcome: 'not-found' }
  | { outcome: 'forbidden'; permission: 'DATASET_PAYLOAD_READ' | 'DATASET_PAYLOAD_WRITE' };

const PERMISSION = { read: 'DATASET_PAYLOAD_READ', write: 'DATASET_PAYLOAD_WRITE' } as const;

export function decidePayloadAccess(caller: Caller | null, route: PayloadRoute | undefined, operation: PayloadOperation): PayloadDecision {
  if (caller === null) {
    if (route?.openDataAccess && operation !== 'write') return { outcome: 'allow', rights: { read: true, write: false } };
    return { outcome: 'unauthenticated' };
  }
  if (!route) return { outcome: 'not-found' };
  // A credential narrowed to other datasets holds nothing on this one (open data stays readable, as without it).
  if (caller.datasetIds && !caller.datasetIds.includes(route.datasetId)) return decidePayloadAccess({ ...caller, grants: [], datasetIds: undefined }, route, operation);
  const dataset = { scopeType: 'DATASET', id: route.datasetId, datapoolId: route.datapoolId } satisfies ScopedObject;
  const rights = {
    read: route.openDataAccess || hasPermissionOn(caller, PERMISSION.read, dataset),
    write: hasPermissionOn(caller, PERMISSION.write, dataset),
  };
  if (operation === 'read-or-write' ? rights.read || rights.write : rights[operation]) return { outcome: 'allow', rights };
  // An open-data route is visibly published; otherwise only a caller who can see the dataset learns it exists.
  const visible = route.openDataAccess || holdsAnythingOn(caller, dataset);
  return visible ? { outcome: 'forbidden', permission: PERMISSION[operation === 'write' ? 'write' : 'read'] } : { outcome: 'not-found' };
}

/**
 * Whether the caller holds any dataset permission covering the dataset: what decides 403 over 404.
 * Tenant-wide permissions of other kinds (USER_READ, ...) say nothing about datasets.
 */
function holdsAnythingOn(caller: Caller, dataset: { id: string; datapoolId?: string | null }): boolean {
  return caller.grants.some((grant) => grant.permission.startsWith('DATASET_') && (
    grant.scopeType === 'TENANT'
    || (grant.scopeType === 'DATASET' && grant.scopeId === dataset.id)
    || (grant.scopeType === 'DATAPOOL' && grant.scopeId === dataset.datapoolId)));
}
