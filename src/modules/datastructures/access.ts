import type { Database } from '../../db/client.js';
import type { Caller } from '../../access/caller.js';
import { hasPermissionOn } from '../../access/check-access.js';
import { scopeExists } from '../../access/scopes.js';
import { AppError, accessDenied, notFound, validationFailed } from '../../errors.js';
import { structureState, type StructureState } from './datastructures.repo.js';

/** Authorization and the refusals shared by structures and their versions. */

const asObject = (state: Pick<StructureState, 'id' | 'datapoolId'>) => ({ scopeType: 'DATASTRUCTURE' as const, id: state.id, datapoolId: state.datapoolId });

export const mayReadStructure = (caller: Caller, state: Pick<StructureState, 'id' | 'datapoolId'>) => hasPermissionOn(caller, 'DATASTRUCTURE_READ', asObject(state));

/** A structure the caller may not read does not exist for them (404); one they may read but not change answers 403. */
export function authorize(caller: Caller, state: Pick<StructureState, 'id' | 'datapoolId'>, write: boolean): void {
  if (!mayReadStructure(caller, state)) throw notFound('Data structure', state.id);
  if (write && !hasPermissionOn(caller, 'DATASTRUCTURE_WRITE', asObject(state))) throw accessDenied('DATASTRUCTURE_WRITE');
}

/** The structure's state (locked for writes), authorized: the prelude of every operation on a structure or its versions. */
export async function authorizedStructure(db: Database, caller: Caller, id: string, write: boolean): Promise<StructureState> {
  const state = await structureState(db, id, write);
  if (!state) throw notFound('Data structure', id);
  authorize(caller, state, write);
  return state;
}

/** Placing a structure in a datapool (or, without one, in the tenant) needs DATASTRUCTURE_WRITE there; the datapool must exist. */
export async function authorizePlacement(db: Database, caller: Caller, tenantId: string, datapoolId: string | null): Promise<void> {
  if (datapoolId && !(await scopeExists(db, 'DATAPOOL', datapoolId))) throw validationFailed('datapoolId', 'no datapool has this id');
  const target = datapoolId ? { scopeType: 'DATAPOOL' as const, id: datapoolId } : { scopeType: 'TENANT' as const, id: tenantId };
  if (!hasPermissionOn(caller, 'DATASTRUCTURE_WRITE', target)) throw accessDenied('DATASTRUCTURE_WRITE');
}

/** The 400 of an operation its status does not allow (existing clients expect 400 here, not 409/422). */
export const wrongStatus = (field: string, status: string, message: string) =>
  validationFailed(field, `is ${status}: ${message}`);

/** 409 RESOURCE_IN_USE naming the data sources that reference it. */
export function assertUnreferenced(what: string, sources: { id: string; name: string }[], operation: string): void {
  if (sources.length === 0) return;
  const named = sources.map((s) => `"${s.name}" (${s.id})`).join(', ');
  throw new AppError('RESOURCE_IN_USE', `${what} is referenced by the data sources ${named}; it cannot be ${operation} while they reference it`, {
    extensions: { dataSourceIds: sources.map((s) => s.id) },
  });
}
