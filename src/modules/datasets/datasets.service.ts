import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import type { Caller } from '../../access/caller.js';
import { hasPermissionOn, readableScope } from '../../access/check-access.js';
import type { PermissionName } from '../../access/catalogue.js';
import { scopeExists } from '../../access/scopes.js';
import { AppError, accessDenied, notFound, validationFailed, type FieldError } from '../../errors.js';
import { assertIfMatch } from '../../http/etag.js';
import { pageOf, parseSort } from '../../http/page.js';
import { enqueueSaga } from '../../jobs/saga-runner.js';
import { loadAssignmentsOfScope, recordCascadingAssignmentDeletes, replaceScopedAssignments, type Assignment } from '../assignments/index.js';
import type { Actor } from '../audit/index.js';
import { actorPayload, recordDatasetEvent } from './dataset-audit.js';
import { SAGA_KINDS, storageSchemaOf } from './dataset-sagas.js';
import {
  DATASET_SORT_COLUMNS, deleteDatasetRow, findDatasetPage, findDatasetState, insertDataset, loadDatasets, lockDataset, markRecordChanged, setDatasetState,
  setNamedApis, updateDatasetRow, type DatasetState, type DatasetValues,
} from './datasets.repo.js';
import {
  RESERVED_SLUGS, type Dataset, type DatasetInput, type DatasetListQuery, type DatasetMetadataPatch, type DatasetPatch, type NamedApiInput,
} from './datasets.schemas.js';
import { transition, type LifecycleOperation } from './lifecycle.js';
import {
  catalogueMetadataProblems, EMPTY_CATALOGUE_METADATA, mergeCatalogueMetadata, type CatalogueMetadataPatch,
} from '../../catalogue/index.js';
import type { DatasetPartCheck } from './part-checks.js';

/** What the datasets module needs from the process: its database, its public data API URL, a nudge for the saga workers. */
export interface DatasetsContext {
  db: Database;
  tenantId: string;
  dataApiUrl: string;
  /** Called after a commit that enqueued a saga, so that this process's worker starts at once. */
  sagaEnqueued(): void;
  /**
   * What the dataset's parts check at stage and release (the pipelines' references, say), in the
   * order their problems are listed. Wired in app.ts: this module imports none of its parts.
   */
  partChecks: readonly DatasetPartCheck[];
  /** The origins a named API's `upstreamUrl` may name (STA_UPSTREAM_ORIGINS); none: upstream mode per API is off. */
  upstreamOrigins: readonly string[];
}


const STATUS_EVENTS = { stage: 'DATASET_STAGED', unstage: 'DATASET_UNSTAGED', release: 'DATASET_RELEASED', unrelease: 'DATASET_UNRELEASED' } as const;

const asObject = (state: Pick<DatasetState, 'id' | 'datapoolId'>) => ({ scopeType: 'DATASET' as const, id: state.id, datapoolId: state.datapoolId });

/** A dataset the caller may not read does not exist for them (404); one they may read but not change answers 403. */
function authorize(caller: Caller, state: Pick<DatasetState, 'id' | 'datapoolId'>, ...permissions: PermissionName[]): void {
  if (!hasPermissionOn(caller, 'DATASET_READ', asObject(state))) throw notFound('Dataset', state.id);
  for (const permission of permissions) if (!hasPermissionOn(caller, permission, asObject(state))) throw accessDenied(permission);
}

/** Creating a dataset in a datapool (or, without one, in the tenant) needs DATASET_CREATE there; the datapool must exist. */
async function authorizeCreateIn(trx: Database, caller: Caller, tenantId: string, datapoolId: string | null): Promise<void> {
  if (datapoolId && !(await scopeExists(trx, 'DATAPOOL', datapoolId))) throw validationFailed('datapoolId', 'no datapool has this id');
  const target = datapoolId ? { scopeType: 'DATAPOOL' as const, id: datapoolId } : { scopeType: 'TENANT' as const, id: tenantId };
  if (!hasPermissionOn(caller, 'DATASET_CREATE', target)) throw accessDenied('DATASET_CREATE');
}

/**
 * Slugs unique within the dataset and none of the reserved ones; an upstream only for STA and only
 * on an allowed origin (the gateway would otherwise fetch any URL a data steward names); every
 * problem named at once.
 */
function checkNamedApis(apis: readonly NamedApiInput[], upstreamOrigins: readonly string[]): void {
  const problems: FieldError[] = [];
  const seen = new Set<string>();
  apis.forEach((api, index) => {
    if (RESERVED_SLUGS.includes(api.slug)) problems.push({ field: `namedApis[${index}].slug`, message: `is reserved (${RESERVED_SLUGS.join(', ')})` });
    else if (seen.has(api.slug)) problems.push({ field: `namedApis[${index}].slug`, message: 'is used by another named API of this dataset' });
    seen.add(api.slug);
    if (api.upstreamUrl) {
      const field = `namedApis[${index}].upstreamUrl`;
      if (api.standard !== 'STA') problems.push({ field, message: 'only a SensorThings (STA) API can have an upstream' });
      else if (!upstreamOrigins.includes(new URL(api.upstreamUrl).origin)) {
        problems.push({ field, message: upstreamOrigins.length === 0 ? 'upstream mode is not enabled (STA_UPSTREAM_ORIGINS is empty)' : `its origin is not one of STA_UPSTREAM_ORIGINS (${upstreamOrigins.join(', ')})` });
      }
    }
  });
  if (problems.length > 0) {
    throw new AppError('VALIDATION_FAILED', problems.map((p) => `${p.field}: ${p.message}`).join('; '), { fieldErrors: problems });
  }
}

async function stateOrNotFound(db: Database, id: string, lock: boolean): Promise<DatasetState> {
  const state = lock ? await lockDataset(db, id) : await findDatasetState(db, id);
  if (!state) throw notFound('Dataset', id);
  return state;
}

async function representation(ctx: DatasetsContext, db: Database, id: string): Promise<Dataset> {
  const [dataset] = await loadDatasets(db, [id], ctx.dataApiUrl);
  if (!dataset) throw notFound('Dataset', id);
  return dataset;
}

export async function getDataset(ctx: DatasetsContext, caller: Caller, id: string): Promise<Dataset> {
  authorize(caller, await stateOrNotFound(ctx.db, id, false));
  return representation(ctx, ctx.db, id);
}

export async function listDatasets(ctx: DatasetsContext, caller: Caller, query: DatasetListQuery) {
  const request = { page: query.page, size: query.size, sort: parseSort(query.sort, Object.keys(DATASET_SORT_COLUMNS)) };
  const { ids, total } = await findDatasetPage(ctx.db, query, request, readableScope(caller, 'DATASET_READ', 'DATASET'));
  return pageOf(await loadDatasets(ctx.db, ids, ctx.dataApiUrl), total, request);
}

/** Runs a write that may enqueue a saga, then wakes this process's saga worker. */
async function writing<T>(ctx: DatasetsContext, write: (trx: Database) => Promise<T>): Promise<T> {
  const result = await ctx.db.transaction().execute(write);
  ctx.sagaEnqueued();
  return result;
}

export async function createDataset(ctx: DatasetsContext, caller: Caller, actor: Actor, input: DatasetInput): Promise<Dataset> {
  const id = randomUUID();
  checkCatalogue(input.catalogue);
  const values: DatasetValues = {
    name: input.name, description: input.description, datapoolId: input.datapoolId ?? null, openDataAccess: input.openDataAccess ?? false,
    catalogue: mergeCatalogueMetadata(EMPTY_CATALOGUE_METADATA, input.catalogue ?? {}),
  };
  checkNamedApis(input.namedApis ?? [], ctx.upstreamOrigins);
  return writing(ctx, async (trx) => {
    await authorizeCreateIn(trx, caller, ctx.tenantId, values.datapoolId);
    await insertDataset(trx, id, values, caller.profile?.userId ?? null);
    await setNamedApis(trx, id, input.namedApis ?? []);
    await recordDatasetEvent(trx, actor, 'DATASET_CREATED', id, null, await representation(ctx, trx, id));
    if (input.assignments) await replaceScopedAssignments(trx, caller, actor, 'DATASET', id, input.assignments);
    await enqueueSaga(trx, SAGA_KINDS.CREATE, id, actorPayload(actor));
    return representation(ctx, trx, id);
  });
}

/**
 * Locks the dataset, checks the caller's permissions and If-Match, and asks the lifecycle table
 * whether the operation may run: the prelude of every write of a dataset.
 */
async function prepare(trx: Database, ctx: DatasetsContext, caller: Caller, id: string, operation: LifecycleOperation, permissions: PermissionName[], ifMatch?: string) {
  const state = await stateOrNotFound(trx, id, true);
  authorize(caller, state, ...permissions);
  if (ifMatch !== undefined) assertIfMatch(ifMatch, await representation(ctx, trx, id));
  return { state, step: transition(operation, state) };
}

/** Metadata values after a change: moving the dataset to another datapool needs DATASET_CREATE there. */
async function changedValues(
  trx: Database, ctx: DatasetsContext, caller: Caller, current: Dataset,
  input: { name?: string; description?: string; datapoolId?: string | null; openDataAccess?: boolean | null; catalogue?: CatalogueMetadataPatch }, replace: boolean,
): Promise<DatasetValues> {
  const datapoolId = input.datapoolId !== undefined ? input.datapoolId : replace ? null : current.datapool?.id ?? null;
  if (datapoolId !== (current.datapool?.id ?? null)) await authorizeCreateIn(trx, caller, ctx.tenantId, datapoolId);
  return {
    name: input.name ?? current.name,
    description: input.description ?? current.description,
    datapoolId,
    openDataAccess: input.openDataAccess ?? (replace ? false : current.openDataAccess),
    // A merge patch wherever it is written, PUT included: a client that knows nothing of it keeps it.
    catalogue: mergeCatalogueMetadata(current.catalogue, input.catalogue ?? {}),
  };
}

/** Every code of the catalogue metadata in its EU table, all problems named at once. */
function checkCatalogue(patch: CatalogueMetadataPatch | undefined): void {
  const problems = patch ? catalogueMetadataProblems(patch) : [];
  if (problems.length > 0) throw new AppError('VALIDATION_FAILED', problems.map((p) => `${p.field}: ${p.message}`).join('; '), { fieldErrors: problems });
}

/** PUT (replace) and PATCH of a DRAFT dataset. */
export async function updateDataset(
  ctx: DatasetsContext, caller: Caller, actor: Actor, id: string, input: DatasetInput | DatasetPatch, mode: 'replace' | 'patch', ifMatch: string | undefined,
): Promise<Dataset> {
  const replace = mode === 'replace';
  const namedApis = input.namedApis !== undefined ? input.namedApis ?? [] : replace ? [] : undefined;
  if (namedApis) checkNamedApis(namedApis, ctx.upstreamOrigins);
  checkCatalogue(input.catalogue);
  return writing(ctx, async (trx) => {
    await prepare(trx, ctx, caller, id, 'update', ['DATASET_UPDATE'], ifMatch);
    const current = await representation(ctx, trx, id);
    await updateDatasetRow(trx, id, await changedValues(trx, ctx, caller, current, input, replace));
    if (namedApis) await setNamedApis(trx, id, namedApis);
    await recordDatasetEvent(trx, actor, 'DATASET_UPDATED', id, current, await representation(ctx, trx, id));
    if (input.assignments) await replaceScopedAssignments(trx, caller, actor, 'DATASET', id, input.assignments);
    return representation(ctx, trx, id);
  });
}

/** The metadata updates of READY (`readyMeta`) and released (`releasedMeta`) datasets: merge semantics. */
export async function updateDatasetMetadata(
  ctx: DatasetsContext, caller: Caller, actor: Actor, id: string, input: DatasetMetadataPatch, operation: 'readyMeta' | 'releasedMeta', ifMatch: string | undefined,
): Promise<Dataset> {
  const permissions: PermissionName[] = operation === 'readyMeta' ? ['DATASET_UPDATE'] : ['DATASET_UPDATE', 'DATASET_RELEASE'];
  checkCatalogue(input.catalogue);
  return writing(ctx, async (trx) => {
    await prepare(trx, ctx, caller, id, operation, permissions, ifMatch);
    const current = await representation(ctx, trx, id);
    await updateDatasetRow(trx, id, await changedValues(trx, ctx, caller, current, input, false));
    await recordDatasetEvent(trx, actor, 'DATASET_UPDATED', id, current, await representation(ctx, trx, id));
    if (input.assignments) await replaceScopedAssignments(trx, caller, actor, 'DATASET', id, input.assignments);
    return representation(ctx, trx, id);
  });
}

/**
 * Stage and release validate the dataset's configuration and list every problem at once (422):
 * release needs at least one named API and provisioned storage; then come the problems the
 * parts' registered checks find (every pipeline's mapping, data sources and named API).
 */
async function validateFor(trx: Database, ctx: DatasetsContext, id: string, purpose: 'stage' | 'release'): Promise<void> {
  const dataset = await representation(ctx, trx, id);
  const problems: FieldError[] = [];
  if (purpose === 'release') {
    if (dataset.namedApis.length === 0) problems.push({ field: 'namedApis', message: 'a released dataset needs at least one named API' });
    if (!dataset.provisioned) problems.push({ field: 'provisioned', message: "the dataset's storage is not provisioned (see sagaError); delete and create it again" });
  }
  for (const check of ctx.partChecks) problems.push(...await check.problems(trx, dataset, purpose));
  if (problems.length > 0) {
    throw new AppError('VALIDATION_FAILED', problems.map((p) => `${p.field}: ${p.message}`).join('; '), { status: 422, fieldErrors: problems });
  }
}

/** stage, unstage, release, unrelease: one transition of the table, its validation, and its saga. */
export async function changeStatus(ctx: DatasetsContext, caller: Caller, actor: Actor, id: string, operation: 'stage' | 'unstage' | 'release' | 'unrelease'): Promise<Dataset> {
  const permission: PermissionName = operation === 'release' || operation === 'unrelease' ? 'DATASET_RELEASE' : 'DATASET_UPDATE';
  return writing(ctx, async (trx) => {
    const { step } = await prepare(trx, ctx, caller, id, operation, [permission]);
    const before = await representation(ctx, trx, id);
    if (step.validate) await validateFor(trx, ctx, id, step.validate);
    await setDatasetState(trx, id, { status: step.to as Dataset['dataSetStatus'], ...(step.saga ? { pendingSagaType: step.saga } : {}) });
    if (step.saga) await enqueueSaga(trx, SAGA_KINDS[step.saga], id, actorPayload(actor));
    // The dataset leaves the open-data catalogue: its Last-Modified moves.
    if (operation === 'unrelease') await markRecordChanged(trx, id);
    const after = await representation(ctx, trx, id);
    await recordDatasetEvent(trx, actor, STATUS_EVENTS[operation], id, before, after);
    return after;
  });
}

/**
 * Delete: a never-provisioned dataset goes at once (a CREATE saga still under way compensates);
 * a provisioned one is marked DELETE and removed by its saga. Deleting one that is being deleted
 * already changes nothing.
 */
export async function deleteDataset(ctx: DatasetsContext, caller: Caller, actor: Actor, id: string, ifMatch: string | undefined): Promise<void> {
  await writing(ctx, async (trx) => {
    const { state } = await prepare(trx, ctx, caller, id, 'delete', ['DATASET_DELETE'], ifMatch);
    if (state.pendingSagaType === 'DELETE') return;
    // Recorded at the request, whether the row goes now or with its saga.
    await recordDatasetEvent(trx, actor, 'DATASET_DELETED', id, await representation(ctx, trx, id), null);
    if (!state.provisioned) {
      // A CREATE saga that gave up may have left its schema: nothing stays behind.
      await sql`drop schema if exists ${sql.id(storageSchemaOf(id))} cascade`.execute(trx);
      await recordCascadingAssignmentDeletes(trx, actor, { column: 'scope_id', value: id });
      await deleteDatasetRow(trx, id);
      return;
    }
    await setDatasetState(trx, id, { pendingSagaType: 'DELETE' });
    // The saga removes the row (and its assignments) later: it records those removals in the requester's name.
    await enqueueSaga(trx, SAGA_KINDS.DELETE, id, actorPayload(actor));
  });
}

/** The named APIs of a released dataset with their public base URLs; none unless AVAILABLE. */
export async function publishedApisOf(ctx: DatasetsContext, caller: Caller, id: string) {
  const dataset = await getDataset(ctx, caller, id);
  if (dataset.dataSetStatus !== 'AVAILABLE') return [];
  return dataset.namedApis.map(({ upstreamUrl: _internal, ...api }) => ({ ...api, previewUrl: `${ctx.dataApiUrl}/v1/datasets/${id}/${api.slug}` }));
}

export async function datasetAssignments(ctx: DatasetsContext, caller: Caller, id: string): Promise<Assignment[]> {
  authorize(caller, await stateOrNotFound(ctx.db, id, false));
  return loadAssignmentsOfScope(ctx.db, 'DATASET', id);
}

/**
 * The prelude of every request on a dataset's parts (styles, mappings, pipelines), which the
 * dataset's scope covers: reading needs DATASET_READ (else 404, as the dataset itself); writing
 * needs DATASET_UPDATE (else 403), locks the dataset row for the caller's transaction (so that a
 * stage or release cannot slip between the check and the write) and refuses a dataset that is
 * not DRAFT through the lifecycle table's `update` row (400 DATASET_NOT_EDITABLE). Answers the
 * dataset as it is.
 */
export async function authorizeDatasetPart(
  ctx: DatasetsContext, caller: Caller, datasetId: string, access: 'read' | 'write' | 'operate', trx: Database = ctx.db,
): Promise<Dataset> {
  const state = await stateOrNotFound(trx, datasetId, access !== 'read');
  if (access === 'read') authorize(caller, state);
  // Operating a released dataset's parts (restarting a pipeline) needs DATASET_UPDATE, whatever the state.
  else if (access === 'operate') authorize(caller, state, 'DATASET_UPDATE');
  else {
    authorize(caller, state, 'DATASET_UPDATE');
    transition('update', state);
  }
  return representation(ctx, trx, datasetId);
}
