import { randomUUID } from 'node:crypto';
import type { Database } from '../../db/client.js';
import type { Caller } from '../../access/caller.js';
import { readableScope } from '../../access/check-access.js';
import { scopeExists } from '../../access/scopes.js';
import { notFound, validationFailed } from '../../errors.js';
import { assertIfMatch } from '../../http/etag.js';
import { pageOf, parseSort } from '../../http/page.js';
import { loadAssignmentsOfScope, recordCascadingAssignmentDeletes, replaceScopedAssignments, type Assignment } from '../assignments/index.js';
import type { Actor } from '../audit/index.js';
import { assertUnreferenced, authorizePlacement, authorizedStructure, wrongStatus } from './access.js';
import {
  STRUCTURE_SORT_COLUMNS, dataSourcesReferencing, deleteStructureRow, findStructurePage, insertStructure, loadStructures, setStructureStatus,
  updateStructureRow, type StructureValues,
} from './datastructures.repo.js';
import type { DataStructure, DataStructureInput, DataStructureListQuery, DataStructurePatch, ReleasedMetaPatch } from './datastructures.schemas.js';

export interface StructuresContext { db: Database; tenantId: string }

export async function representation(db: Database, id: string): Promise<DataStructure> {
  const [structure] = await loadStructures(db, [id]);
  if (!structure) throw notFound('Data structure', id);
  return structure;
}

export async function getStructure(ctx: StructuresContext, caller: Caller, id: string): Promise<DataStructure> {
  await authorizedStructure(ctx.db, caller, id, false);
  return representation(ctx.db, id);
}

export async function listStructures(ctx: StructuresContext, caller: Caller, query: DataStructureListQuery) {
  const request = { page: query.page, size: query.size, sort: parseSort(query.sort, Object.keys(STRUCTURE_SORT_COLUMNS)) };
  const { ids, total } = await findStructurePage(ctx.db, query, request, readableScope(caller, 'DATASTRUCTURE_READ', 'DATASTRUCTURE'));
  return pageOf(await loadStructures(ctx.db, ids), total, request);
}

export async function structureAssignments(ctx: StructuresContext, caller: Caller, id: string): Promise<Assignment[]> {
  await authorizedStructure(ctx.db, caller, id, false);
  return loadAssignmentsOfScope(ctx.db, 'DATASTRUCTURE', id);
}

export async function createStructure(ctx: StructuresContext, caller: Caller, actor: Actor, input: DataStructureInput): Promise<DataStructure> {
  const id = randomUUID();
  const values: StructureValues = {
    name: input.name, description: input.description ?? null, datapoolId: input.datapoolId ?? null, createdFromDataSource: input.createdFromDataSource ?? false,
  };
  return ctx.db.transaction().execute(async (trx) => {
    await authorizePlacement(trx, caller, ctx.tenantId, values.datapoolId);
    await insertStructure(trx, id, values);
    if (input.assignments) await replaceScopedAssignments(trx, caller, actor, 'DATASTRUCTURE', id, input.assignments);
    return representation(trx, id);
  });
}

/**
 * Locks and authorizes the structure for a write, checks If-Match, and refuses (400 naming the
 * status field) a write its status does not allow.
 */
async function prepareWrite(trx: Database, caller: Caller, id: string, allowed: 'DRAFT' | 'AVAILABLE', operation: string, ifMatch?: string) {
  const state = await authorizedStructure(trx, caller, id, true);
  const current = await representation(trx, id);
  if (ifMatch !== undefined) assertIfMatch(ifMatch, current);
  if (state.status !== allowed) {
    throw wrongStatus('dataStructureStatus', state.status, allowed === 'DRAFT'
      ? `only a DRAFT data structure can be ${operation} (an AVAILABLE one changes through released/meta; unrelease it first)`
      : `only an AVAILABLE data structure can be ${operation}`);
  }
  return { state, current };
}

/** PUT (replace) and PATCH of a DRAFT structure; moving it to another datapool needs DATASTRUCTURE_WRITE there. */
export async function updateStructure(
  ctx: StructuresContext, caller: Caller, actor: Actor, id: string, input: DataStructureInput | DataStructurePatch, mode: 'replace' | 'patch', ifMatch: string | undefined,
): Promise<DataStructure> {
  const replace = mode === 'replace';
  return ctx.db.transaction().execute(async (trx) => {
    // The target datapool before the structure row: a datapool delete locks them in that order
    // (the datapool, then the structures it clears), so neither can deadlock.
    if (input.datapoolId) await scopeExists(trx, 'DATAPOOL', input.datapoolId);
    const { current } = await prepareWrite(trx, caller, id, 'DRAFT', 'changed', ifMatch);
    const datapoolId = input.datapoolId !== undefined ? input.datapoolId : replace ? null : current.datapool?.id ?? null;
    if (datapoolId !== (current.datapool?.id ?? null)) await authorizePlacement(trx, caller, ctx.tenantId, datapoolId);
    await updateStructureRow(trx, id, {
      name: input.name ?? current.name,
      description: input.description !== undefined ? input.description : replace ? null : current.description,
      datapoolId,
      createdFromDataSource: input.createdFromDataSource ?? (replace ? false : current.createdFromDataSource),
    });
    if (input.assignments) await replaceScopedAssignments(trx, caller, actor, 'DATASTRUCTURE', id, input.assignments);
    return representation(trx, id);
  });
}

export async function updateReleasedStructure(ctx: StructuresContext, caller: Caller, id: string, input: ReleasedMetaPatch, ifMatch: string | undefined): Promise<DataStructure> {
  return ctx.db.transaction().execute(async (trx) => {
    const { current } = await prepareWrite(trx, caller, id, 'AVAILABLE', 'changed through released/meta (a DRAFT one takes PUT and PATCH)', ifMatch);
    await updateStructureRow(trx, id, {
      name: input.name ?? current.name,
      description: input.description !== undefined ? input.description : current.description,
      datapoolId: current.datapool?.id ?? null,
      createdFromDataSource: current.createdFromDataSource,
    });
    return representation(trx, id);
  });
}

/** Release needs one AVAILABLE version; unrelease is refused while a data source references one of its versions. */
export async function changeStructureStatus(ctx: StructuresContext, caller: Caller, id: string, operation: 'release' | 'unrelease'): Promise<DataStructure> {
  return ctx.db.transaction().execute(async (trx) => {
    if (operation === 'unrelease') {
      await authorizedStructure(trx, caller, id, true);
      assertUnreferenced(`Data structure ${id}`, await dataSourcesReferencing(trx, { structureId: id }), 'unreleased');
    }
    const { current } = await prepareWrite(trx, caller, id, operation === 'release' ? 'DRAFT' : 'AVAILABLE', operation === 'release' ? 'released' : 'unreleased');
    if (operation === 'release' && !current.dataStructureVersions.some((v) => v.status === 'AVAILABLE')) {
      throw validationFailed('dataStructureVersions', 'a released data structure needs one of its versions AVAILABLE');
    }
    await setStructureStatus(trx, id, operation === 'release' ? 'AVAILABLE' : 'DRAFT');
    return representation(trx, id);
  });
}

/** Delete of a DRAFT structure removes its versions; refused (409) while a data source references one of them. */
export async function deleteStructure(ctx: StructuresContext, caller: Caller, actor: Actor, id: string, ifMatch: string | undefined): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    await authorizedStructure(trx, caller, id, true);
    assertUnreferenced(`Data structure ${id}`, await dataSourcesReferencing(trx, { structureId: id }), 'deleted');
    await prepareWrite(trx, caller, id, 'DRAFT', 'deleted', ifMatch);
    // Its assignments go with it (foreign key); the audit trail records each.
    await recordCascadingAssignmentDeletes(trx, actor, { column: 'scope_id', value: id });
    await deleteStructureRow(trx, id);
  });
}
