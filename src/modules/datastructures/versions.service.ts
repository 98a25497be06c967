import { randomUUID } from 'node:crypto';
import type { Database } from '../../db/client.js';
import type { Caller } from '../../access/caller.js';
import { notFound, validationFailed } from '../../errors.js';
import { assertIfMatch } from '../../http/etag.js';
import { uniquely } from '../../db/constraint-errors.js';
import { assertUnreferenced, authorizedStructure, mayReadStructure, wrongStatus } from './access.js';
import {
  dataSourcesReferencing, deleteVersionRow, insertVersion, loadVersion, loadVersionSummaries, lockVersionForReference, setVersionStatus,
  updateVersionRow, versionsOfStructure, type VersionValues,
} from './datastructures.repo.js';
import type { DataStructureVersion, VersionInput, VersionPatch, VersionReleasedMetaPatch, VersionSummary } from './datastructures.schemas.js';
import { checkModel } from './model.js';
import type { StructuresContext } from './datastructures.service.js';

const taken = (version: string) => `Version "${version}" already exists in this data structure`;

async function versionOrNotFound(db: Database, structureId: string, versionId: string): Promise<DataStructureVersion> {
  const version = await loadVersion(db, structureId, versionId);
  if (!version) throw notFound('Data structure version', versionId);
  return version;
}

export async function getVersion(ctx: StructuresContext, caller: Caller, structureId: string, versionId: string): Promise<DataStructureVersion> {
  await authorizedStructure(ctx.db, caller, structureId, false);
  return versionOrNotFound(ctx.db, structureId, versionId);
}

/** The first of "1", "2", ... that no version of the structure has. */
async function nextVersionName(db: Database, structureId: string): Promise<string> {
  const names = new Set((await versionsOfStructure(db, structureId)).map((v) => v.version));
  let n = 1;
  while (names.has(String(n))) n++;
  return String(n);
}

/** `model`: a valid JSON Schema or null; anything else answers 400 naming `model` before anything changes. */
const checkedModel = (model: unknown) => {
  if (model !== null && model !== undefined) checkModel(model);
  return model ?? null;
};

export async function createVersion(ctx: StructuresContext, caller: Caller, structureId: string, input: VersionInput): Promise<DataStructureVersion> {
  const model = checkedModel(input.model);
  const id = randomUUID();
  return ctx.db.transaction().execute(async (trx) => {
    // An AVAILABLE structure takes new versions too: they start DRAFT.
    await authorizedStructure(trx, caller, structureId, true);
    const values: VersionValues = {
      version: input.version ?? await nextVersionName(trx, structureId),
      description: input.description ?? null, modelName: input.modelName ?? null, model, styles: input.styles ?? {},
    };
    await uniquely(() => insertVersion(trx, id, structureId, values), taken(values.version), 'version');
    return versionOrNotFound(trx, structureId, id);
  });
}

/** Locks the structure, authorizes the write, loads the version, checks If-Match and the version's status. */
async function prepareWrite(trx: Database, caller: Caller, structureId: string, versionId: string, allowed: 'DRAFT' | 'AVAILABLE', operation: string, ifMatch?: string) {
  const structure = await authorizedStructure(trx, caller, structureId, true);
  const current = await versionOrNotFound(trx, structureId, versionId);
  if (ifMatch !== undefined) assertIfMatch(ifMatch, current);
  if (current.dataStructureVersionStatus !== allowed) {
    throw wrongStatus('dataStructureVersionStatus', current.dataStructureVersionStatus, allowed === 'DRAFT'
      ? `only a DRAFT version can be ${operation} (an AVAILABLE one changes through released/meta; unrelease it first)`
      : `only an AVAILABLE version can be ${operation}`);
  }
  return { structure, current };
}

/** PUT (replace; a version left out is kept) and PATCH of a DRAFT version. */
export async function updateVersion(
  ctx: StructuresContext, caller: Caller, structureId: string, versionId: string, input: VersionInput | VersionPatch, mode: 'replace' | 'patch', ifMatch: string | undefined,
): Promise<DataStructureVersion> {
  const replace = mode === 'replace';
  if (input.model !== undefined) checkedModel(input.model);
  return ctx.db.transaction().execute(async (trx) => {
    const { current } = await prepareWrite(trx, caller, structureId, versionId, 'DRAFT', 'changed', ifMatch);
    const pick = <T>(given: T | undefined, stored: T, cleared: T): T => (given !== undefined ? given : replace ? cleared : stored);
    const values: VersionValues = {
      version: input.version ?? current.version,
      description: pick(input.description, current.description, null),
      modelName: pick(input.modelName, current.modelName, null),
      model: pick(input.model, current.model, null) ?? null,
      styles: pick(input.styles, current.styles, {}) ?? {},
    };
    await uniquely(() => updateVersionRow(trx, versionId, values), taken(values.version), 'version');
    return versionOrNotFound(trx, structureId, versionId);
  });
}

export async function updateReleasedVersion(
  ctx: StructuresContext, caller: Caller, structureId: string, versionId: string, input: VersionReleasedMetaPatch, ifMatch: string | undefined,
): Promise<DataStructureVersion> {
  return ctx.db.transaction().execute(async (trx) => {
    const { current } = await prepareWrite(trx, caller, structureId, versionId, 'AVAILABLE', 'changed through released/meta (a DRAFT one takes PUT and PATCH)', ifMatch);
    await updateVersionRow(trx, versionId, {
      version: current.version,
      description: input.description !== undefined ? input.description : current.description,
      modelName: input.modelName !== undefined ? input.modelName : current.modelName,
      model: current.model,
      styles: current.styles,
    });
    return versionOrNotFound(trx, structureId, versionId);
  });
}

/**
 * Release needs the model. Unrelease is refused (409) while a data source references the version,
 * and (400) when it is the only AVAILABLE version of an AVAILABLE structure.
 */
export async function changeVersionStatus(ctx: StructuresContext, caller: Caller, structureId: string, versionId: string, operation: 'release' | 'unrelease'): Promise<DataStructureVersion> {
  return ctx.db.transaction().execute(async (trx) => {
    if (operation === 'unrelease') {
      await authorizedStructure(trx, caller, structureId, true);
      await versionOrNotFound(trx, structureId, versionId);
      assertUnreferenced(`Data structure version ${versionId}`, await dataSourcesReferencing(trx, { versionId }), 'unreleased');
    }
    const { structure, current } = await prepareWrite(trx, caller, structureId, versionId, operation === 'release' ? 'DRAFT' : 'AVAILABLE', operation === 'release' ? 'released' : 'unreleased');
    if (operation === 'release' && current.model === null) throw validationFailed('model', 'a released version needs its model');
    if (operation === 'unrelease' && structure.status === 'AVAILABLE') {
      const others = (await versionsOfStructure(trx, structureId)).filter((v) => v.id !== versionId && v.status === 'AVAILABLE');
      if (others.length === 0) {
        throw validationFailed('dataStructureVersionStatus', 'is the only AVAILABLE version of an AVAILABLE data structure; unrelease the structure first');
      }
    }
    await setVersionStatus(trx, versionId, operation === 'release' ? 'AVAILABLE' : 'DRAFT');
    return versionOrNotFound(trx, structureId, versionId);
  });
}

export async function deleteVersion(ctx: StructuresContext, caller: Caller, structureId: string, versionId: string, ifMatch: string | undefined): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    await authorizedStructure(trx, caller, structureId, true);
    await versionOrNotFound(trx, structureId, versionId);
    assertUnreferenced(`Data structure version ${versionId}`, await dataSourcesReferencing(trx, { versionId }), 'deleted');
    await prepareWrite(trx, caller, structureId, versionId, 'DRAFT', 'deleted', ifMatch);
    await deleteVersionRow(trx, versionId);
  });
}

/**
 * For data sources: `dataStructureVersionId` must name an AVAILABLE version of an AVAILABLE
 * structure the caller may read (else 400 naming it). The version and its structure stay locked
 * FOR KEY SHARE until the data source's write commits: an unrelease or delete waits, then sees it.
 */
export async function assertUsableVersion(db: Database, caller: Caller, versionId: string): Promise<void> {
  const row = await lockVersionForReference(db, versionId);
  const problem = !row || !mayReadStructure(caller, { id: row.structure_id, datapoolId: row.datapool_id })
    ? 'no data structure version you may read has this id'
    : row.version_status !== 'AVAILABLE' ? 'names a DRAFT version; release it first'
      : row.structure_status !== 'AVAILABLE' ? 'names a version of a DRAFT data structure; release the structure first' : null;
  if (problem) throw validationFailed('dataStructureVersionId', problem);
}

export const versionSummaries = (db: Database, ids: readonly string[]): Promise<Map<string, VersionSummary>> => loadVersionSummaries(db, ids);
