import { randomUUID } from 'node:crypto';
import type { Database } from '../../db/client.js';
import type { ConnectorType, DatapoolScopeType } from '../../db/schema.js';
import type { Caller } from '../../access/caller.js';
import { hasPermissionOn, readableScope } from '../../access/check-access.js';
import { AppError, accessDenied, notFound, validationFailed, type FieldError } from '../../errors.js';
import { assertIfMatch } from '../../http/etag.js';
import { iso } from '../../http/resource.js';
import { pageOf, parseSort } from '../../http/page.js';
import { loadAssignmentsOfScope, recordCascadingAssignmentDeletes, replaceScopedAssignments, type Assignment } from '../assignments/index.js';
import type { Actor } from '../audit/index.js';
import { authorizeDatasetPart, type DatasetsContext } from '../datasets/index.js';
import { assertUsableVersion, versionSummaries } from '../datastructures/index.js';
import { missingForRelease, readConfiguration, writeConfiguration } from './configuration.js';
import { sealConfiguration } from './secrets.js';
import { assertUnreferenced, referencedSources, type DataSourceReferrer } from './references.js';
import type { SecretKeyRing } from '../../db/secrets.js';
import {
  SOURCE_SORT_COLUMNS, deleteSourceRow, findSourcePage, insertSource, loadSourceRows, lockExistingDatapools, setSourceStatus, updateSourceRow,
  type DataSourceRow, type SourceValues,
} from './datasources.repo.js';
import type {
  DataSource, DataSourceInput, DataSourceListQuery, DataSourcePatch, DataSourceReleasedMetaPatch, DatapoolScopeInput, UsableDataSourceQuery,
} from './datasources.schemas.js';

/**
 * `secrets`: the key ring that seals passwords and secret headers before they are stored;
 * `referrers`: what refers to data sources (pipelines), registered in app.ts.
 */
export interface SourcesContext { db: Database; tenantId: string; secrets: SecretKeyRing; referrers: readonly DataSourceReferrer[] }

const problemsError = (problems: FieldError[]) =>
  new AppError('VALIDATION_FAILED', problems.map((p) => `${p.field}: ${p.message}`).join('; '), { fieldErrors: problems });

/** A data source lies in the datapools its SPECIFIC scope names. */
const asObject = (row: Pick<DataSourceRow, 'id' | 'scopeType' | 'datapoolIds'>) =>
  ({ scopeType: 'DATASOURCE' as const, id: row.id, datapoolIds: row.scopeType === 'SPECIFIC' ? row.datapoolIds : [] });

/** One the caller may not read does not exist for them (404); one they may read but not change answers 403. */
function authorize(caller: Caller, row: DataSourceRow, write: boolean): void {
  if (!hasPermissionOn(caller, 'DATASOURCE_READ', asObject(row))) throw notFound('Data source', row.id);
  if (write && !hasPermissionOn(caller, 'DATASOURCE_WRITE', asObject(row))) throw accessDenied('DATASOURCE_WRITE');
}

async function authorizedRow(db: Database, caller: Caller, id: string, write: boolean): Promise<DataSourceRow> {
  const [row] = await loadSourceRows(db, [id], write);
  if (!row) throw notFound('Data source', id);
  authorize(caller, row, write);
  return row;
}

async function represent(ctx: SourcesContext, db: Database, rows: DataSourceRow[]): Promise<DataSource[]> {
  const versions = await versionSummaries(db, rows.flatMap((row) => (row.dataStructureVersionId ? [row.dataStructureVersionId] : [])));
  const inUse = await referencedSources(ctx.referrers, db, rows.map((row) => row.id));
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    description: row.description,
    connectorType: row.connectorType,
    configuration: readConfiguration(row.connectorType, row.configuration),
    dataStructureVersion: row.dataStructureVersionId ? versions.get(row.dataStructureVersionId) ?? null : null,
    datapoolScope: { type: row.scopeType, datapoolIds: row.scopeType === 'SPECIFIC' ? row.datapoolIds : [] },
    dataSourceStatus: row.status,
    inUse: inUse.has(row.id),
    createdAt: iso(row.createdAt),
    modifiedAt: iso(row.modifiedAt),
  }));
}

async function representation(ctx: SourcesContext, db: Database, id: string): Promise<DataSource> {
  const [source] = await represent(ctx, db, await loadSourceRows(db, [id]));
  if (!source) throw notFound('Data source', id);
  return source;
}

export async function getSource(ctx: SourcesContext, caller: Caller, id: string): Promise<DataSource> {
  await authorizedRow(ctx.db, caller, id, false);
  return representation(ctx, ctx.db, id);
}

export async function listSources(ctx: SourcesContext, caller: Caller, query: DataSourceListQuery) {
  const request = { page: query.page, size: query.size, sort: parseSort(query.sort, Object.keys(SOURCE_SORT_COLUMNS)) };
  const { ids, total } = await findSourcePage(ctx.db, query, request, readableScope(caller, 'DATASOURCE_READ', 'DATASOURCE'));
  return pageOf(await represent(ctx, ctx.db, await loadSourceRows(ctx.db, ids)), total, request);
}

/**
 * The data sources a pipeline of this dataset may read (its `dataSourceIds`): AVAILABLE, scoped to
 * ALL or to the dataset's datapool (ALL only for a dataset in no datapool), readable by the caller.
 * The list's own filters do it in SQL, so that paging and `totalElements` are right. A dataset the
 * caller may not read answers 404, as the dataset itself does.
 */
export async function listUsableSources(ctx: SourcesContext, datasets: DatasetsContext, caller: Caller, datasetId: string, query: UsableDataSourceQuery) {
  const dataset = await authorizeDatasetPart(datasets, caller, datasetId, 'read');
  const poolId = dataset.datapool?.id;
  // Rebuilt member by member: a list parameter this route does not take (datapoolScopeType, say) may sit in the query string.
  const { page, size, sort, id, createdAtFrom, createdAtTo, modifiedAtFrom, modifiedAtTo, name, description, q, connectorType } = query;
  return listSources(ctx, caller, {
    page, size, sort, id, createdAtFrom, createdAtTo, modifiedAtFrom, modifiedAtTo, name, description, q, connectorType,
    dataSourceStatus: 'AVAILABLE', ...(poolId ? { datapoolId: poolId } : { datapoolScopeType: 'ALL' as const }),
  });
}

export async function sourceAssignments(ctx: SourcesContext, caller: Caller, id: string): Promise<Assignment[]> {
  await authorizedRow(ctx.db, caller, id, false);
  return loadAssignmentsOfScope(ctx.db, 'DATASOURCE', id);
}

/** The scope as given: ALL when omitted; datapool ids non-empty with SPECIFIC, else empty. */
function scopeOf(input: DatapoolScopeInput | null | undefined): { type: DatapoolScopeType; datapoolIds: string[] } {
  if (!input) return { type: 'ALL', datapoolIds: [] };
  const datapoolIds = input.datapoolIds ?? [];
  if (input.type === 'SPECIFIC' && datapoolIds.length === 0) throw validationFailed('datapoolScope.datapoolIds', 'must name at least one datapool with SPECIFIC');
  if (input.type !== 'SPECIFIC' && datapoolIds.length > 0) throw validationFailed('datapoolScope.datapoolIds', `must be empty with ${input.type}`);
  return { type: input.type, datapoolIds };
}

/**
 * Where a data source is placed decides who may write it: a SPECIFIC scope needs DATASOURCE_WRITE
 * on every datapool it names (a caller cannot put things into pools they do not administer);
 * ALL and NONE belong to no datapool and need it at tenant scope. The datapools must exist.
 */
async function authorizePlacement(trx: Database, caller: Caller, tenantId: string, scope: { type: DatapoolScopeType; datapoolIds: string[] }): Promise<void> {
  const existing = await lockExistingDatapools(trx, scope.datapoolIds);
  const missing = scope.datapoolIds.filter((id) => !existing.has(id));
  if (missing.length > 0) throw validationFailed('datapoolScope.datapoolIds', `no datapool has the id ${missing.join(', ')}`);
  const targets = scope.type === 'SPECIFIC'
    ? scope.datapoolIds.map((id) => ({ scopeType: 'DATAPOOL' as const, id }))
    : [{ scopeType: 'TENANT' as const, id: tenantId }];
  if (!targets.every((target) => hasPermissionOn(caller, 'DATASOURCE_WRITE', target))) throw accessDenied('DATASOURCE_WRITE');
}

const sameScope = (a: { type: string; datapoolIds: string[] }, b: { type: string; datapoolIds: string[] }) =>
  a.type === b.type && [...a.datapoolIds].sort().join() === [...b.datapoolIds].sort().join();

/**
 * The configuration to store, its secrets sealed, or 400 naming every member in error. `stored`
 * is the stored configuration of the same connector (`{}` when the connector changes), whose
 * sealed secrets `********` keeps.
 */
function configured(secrets: SecretKeyRing, connector: ConnectorType, written: unknown, base: Record<string, unknown>, stored: Record<string, unknown>) {
  const { configuration, problems } = writeConfiguration(connector, written, base, stored);
  if (problems.length > 0) throw problemsError(problems);
  return sealConfiguration(secrets, connector, configuration, stored);
}

export async function createSource(ctx: SourcesContext, caller: Caller, actor: Actor, input: DataSourceInput): Promise<DataSource> {
  const id = randomUUID();
  const scope = scopeOf(input.datapoolScope);
  const values: SourceValues = {
    name: input.name,
    description: input.description ?? null,
    connectorType: input.connectorType,
    configuration: configured(ctx.secrets, input.connectorType, input.configuration, {}, {}),
    dataStructureVersionId: input.dataStructureVersionId ?? null,
    scopeType: scope.type,
    datapoolIds: scope.datapoolIds,
  };
  return ctx.db.transaction().execute(async (trx) => {
    await authorizePlacement(trx, caller, ctx.tenantId, scope);
    if (values.dataStructureVersionId) await assertUsableVersion(trx, caller, values.dataStructureVersionId);
    await insertSource(trx, id, values);
    if (input.assignments) await replaceScopedAssignments(trx, caller, actor, 'DATASOURCE', id, input.assignments);
    return representation(ctx, trx, id);
  });
}

/**
 * Locks and authorizes the data source for a write, checks If-Match, and refuses (400 naming
 * `dataSourceStatus`) a write its status does not allow.
 */
async function prepareWrite(
  ctx: SourcesContext, trx: Database, caller: Caller, id: string, allowed: 'DRAFT' | 'AVAILABLE', operation: string, ifMatch?: string,
): Promise<DataSourceRow> {
  const row = await authorizedRow(trx, caller, id, true);
  if (ifMatch !== undefined) assertIfMatch(ifMatch, await representation(ctx, trx, id));
  if (row.status !== allowed) {
    throw validationFailed('dataSourceStatus', `is ${row.status}: ${allowed === 'DRAFT'
      ? `only a DRAFT data source can be ${operation} (an AVAILABLE one changes through released/meta; unrelease it first)`
      : `only an AVAILABLE data source can be ${operation}`}`);
  }
  return row;
}

/**
 * PUT replaces the data source, `configuration` whole; PATCH merges, `configuration` member by
 * member, unless it changes `connectorType` (then the configuration starts from the new
 * connector's defaults, as with PUT). `********` keeps a stored secret of the same connector.
 */
export async function updateSource(
  ctx: SourcesContext, caller: Caller, actor: Actor, id: string, input: DataSourceInput | DataSourcePatch, mode: 'replace' | 'patch', ifMatch: string | undefined,
): Promise<DataSource> {
  const replace = mode === 'replace';
  return ctx.db.transaction().execute(async (trx) => {
    const current = await prepareWrite(ctx, trx, caller, id, 'DRAFT', 'changed', ifMatch);
    const connectorType = input.connectorType ?? current.connectorType;
    const sameConnector = connectorType === current.connectorType;
    const stored = sameConnector ? current.configuration : {};
    const configuration = replace || !sameConnector
      ? configured(ctx.secrets, connectorType, input.configuration, {}, stored)
      : input.configuration === null ? {} : configured(ctx.secrets, connectorType, input.configuration, current.configuration, stored);
    const currentScope = { type: current.scopeType, datapoolIds: current.scopeType === 'SPECIFIC' ? current.datapoolIds : [] };
    const scope = input.datapoolScope !== undefined || replace ? scopeOf(input.datapoolScope) : currentScope;
    const scopeChanged = !sameScope(scope, currentScope);
    if (scopeChanged) await authorizePlacement(trx, caller, ctx.tenantId, scope);
    const versionId = input.dataStructureVersionId !== undefined ? input.dataStructureVersionId : replace ? null : current.dataStructureVersionId;
    if (versionId && versionId !== current.dataStructureVersionId) await assertUsableVersion(trx, caller, versionId);
    await updateSourceRow(trx, id, {
      name: input.name ?? current.name,
      description: input.description !== undefined ? input.description : replace ? null : current.description,
      connectorType,
      configuration,
      dataStructureVersionId: versionId,
      scopeType: scope.type,
      datapoolIds: scope.datapoolIds,
    }, scopeChanged);
    if (input.assignments) await replaceScopedAssignments(trx, caller, actor, 'DATASOURCE', id, input.assignments);
    return representation(ctx, trx, id);
  });
}

export async function updateReleasedSource(ctx: SourcesContext, caller: Caller, id: string, input: DataSourceReleasedMetaPatch, ifMatch: string | undefined): Promise<DataSource> {
  return ctx.db.transaction().execute(async (trx) => {
    const current = await prepareWrite(ctx, trx, caller, id, 'AVAILABLE', 'changed through released/meta (a DRAFT one takes PUT and PATCH)', ifMatch);
    await updateSourceRow(trx, id, {
      name: input.name ?? current.name,
      description: input.description !== undefined ? input.description : current.description,
      connectorType: current.connectorType,
      configuration: current.configuration,
      dataStructureVersionId: current.dataStructureVersionId,
      scopeType: current.scopeType,
      datapoolIds: current.datapoolIds,
    }, false);
    return representation(ctx, trx, id);
  });
}

/** Release checks what a DRAFT data source may leave out, every problem at once; unrelease returns it to DRAFT. */
export async function changeSourceStatus(ctx: SourcesContext, caller: Caller, id: string, operation: 'release' | 'unrelease'): Promise<DataSource> {
  return ctx.db.transaction().execute(async (trx) => {
    const current = await prepareWrite(ctx, trx, caller, id, operation === 'release' ? 'DRAFT' : 'AVAILABLE', operation === 'release' ? 'released' : 'unreleased');
    if (operation === 'release') {
      const problems: FieldError[] = [];
      if (!current.dataStructureVersionId) problems.push({ field: 'dataStructureVersionId', message: 'is required to release the data source' });
      problems.push(...missingForRelease(current.connectorType, current.configuration));
      if (problems.length > 0) throw problemsError(problems);
    }
    await setSourceStatus(trx, id, operation === 'release' ? 'AVAILABLE' : 'DRAFT');
    return representation(ctx, trx, id);
  });
}

/** Delete of a DRAFT data source; refused (409, before the status rule) while something refers to it (a pipeline reads from it). */
export async function deleteSource(ctx: SourcesContext, caller: Caller, actor: Actor, id: string, ifMatch: string | undefined): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    await authorizedRow(trx, caller, id, true);
    await assertUnreferenced(ctx.referrers, trx, id);
    await prepareWrite(ctx, trx, caller, id, 'DRAFT', 'deleted', ifMatch);
    // Its assignments go with it (foreign key); the audit trail records each.
    await recordCascadingAssignmentDeletes(trx, actor, { column: 'scope_id', value: id });
    await deleteSourceRow(trx, id);
  });
}
