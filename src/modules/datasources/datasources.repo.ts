import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import type { ConnectorType, DatapoolScopeType, ReleaseStatus } from '../../db/schema.js';
import { fetchPageIds, inIdOrder, withNameDescriptionFilters, withSharedFilters, type ListRequest } from '../../db/list-query.js';
import { withReadableScope } from '../../access/readable-scope.js';
import type { ReadableScope } from '../../access/check-access.js';
import type { DataSourceListQuery } from './datasources.schemas.js';

export const SOURCE_SORT_COLUMNS: Record<string, string> = {
  name: 's.name', description: 's.description', connectorType: 's.connector_type', dataSourceStatus: 's.status', createdAt: 's.created_at', modifiedAt: 's.modified_at',
};

/** A data source as stored: configuration with its secrets sealed (`secrets.ts`), the datapools of a SPECIFIC scope. */
export interface DataSourceRow {
  id: string;
  name: string;
  description: string | null;
  connectorType: ConnectorType;
  configuration: Record<string, unknown>;
  dataStructureVersionId: string | null;
  scopeType: DatapoolScopeType;
  datapoolIds: string[];
  status: ReleaseStatus;
  createdAt: Date;
  modifiedAt: Date;
}

/** A configuration column as the driver hands it (PGlite may give the JSON text). */
const storedConfiguration = (value: unknown): Record<string, unknown> =>
  ((typeof value === 'string' ? JSON.parse(value) : value) ?? {}) as Record<string, unknown>;

/** Every data source's connector and configuration (start-up re-sealing of secrets); `lock` locks the rows FOR UPDATE. */
export async function loadAllConfigurations(db: Database, lock = false): Promise<{ id: string; connectorType: ConnectorType; configuration: Record<string, unknown> }[]> {
  let qb = db.selectFrom('data_sources').select(['id', 'connector_type', 'configuration']);
  if (lock) qb = qb.forUpdate();
  const rows = await qb.execute();
  return rows.map((row) => ({ id: row.id, connectorType: row.connector_type, configuration: storedConfiguration(row.configuration) }));
}

/** Replaces a data source's stored configuration only (`modified_at` stays: re-sealing changes nothing a client sees). */
export async function updateStoredConfiguration(db: Database, id: string, configuration: Record<string, unknown>): Promise<void> {
  await db.updateTable('data_sources').set({ configuration: JSON.stringify(configuration) }).where('id', '=', id).execute();
}

/** Stored data sources by id, in the order of `ids`; `lock` locks their rows FOR UPDATE. */
export async function loadSourceRows(db: Database, ids: readonly string[], lock = false): Promise<DataSourceRow[]> {
  if (ids.length === 0) return [];
  let qb = db.selectFrom('data_sources as s').selectAll('s').where('s.id', 'in', [...ids]);
  if (lock) qb = qb.forUpdate();
  const rows = await qb.execute();
  const pools = await db.selectFrom('data_source_datapools').select(['data_source_id', 'datapool_id']).where('data_source_id', 'in', [...ids])
    .orderBy('datapool_id').execute();
  return inIdOrder(ids, rows.map((row) => ({
    id: row.id,
    name: row.name,
    description: row.description,
    connectorType: row.connector_type,
    configuration: storedConfiguration(row.configuration),
    dataStructureVersionId: row.data_structure_version_id,
    scopeType: row.datapool_scope_type,
    datapoolIds: pools.filter((p) => p.data_source_id === row.id).map((p) => p.datapool_id),
    status: row.status,
    createdAt: row.created_at,
    modifiedAt: row.modified_at,
  })));
}

/** One page of the data sources matching the filters among those the caller may read (filtered in SQL). */
export async function findSourcePage(db: Database, query: DataSourceListQuery, request: ListRequest, readable: ReadableScope) {
  let qb = withSharedFilters(db.selectFrom('data_sources as s'), 's', query);
  // A data source lies in the datapools its SPECIFIC scope names (the join table holds no others).
  qb = withReadableScope(qb, 's', readable, (eb, datapoolIds) => eb.exists(eb.selectFrom('data_source_datapools as p').select('p.datapool_id')
    .whereRef('p.data_source_id', '=', 's.id').where('p.datapool_id', 'in', datapoolIds)));
  qb = withNameDescriptionFilters(qb, 's', query);
  if (query.dataSourceStatus) qb = qb.where('s.status', '=', query.dataSourceStatus);
  if (query.connectorType) qb = qb.where('s.connector_type', '=', query.connectorType);
  if (query.datapoolScopeType) qb = qb.where('s.datapool_scope_type', '=', query.datapoolScopeType);
  if (query.datapoolId) {
    const datapoolId = query.datapoolId;
    qb = qb.where((eb) => eb.or([
      eb('s.datapool_scope_type', '=', 'ALL'),
      eb.exists(eb.selectFrom('data_source_datapools as p').select('p.datapool_id').whereRef('p.data_source_id', '=', 's.id').where('p.datapool_id', '=', datapoolId)),
    ]));
  }
  return fetchPageIds(qb, 's', request, SOURCE_SORT_COLUMNS);
}

/** What a write sets: the row without its id, status and timestamps. */
export type SourceValues = Omit<DataSourceRow, 'id' | 'status' | 'createdAt' | 'modifiedAt'>;

async function setDatapools(db: Database, id: string, datapoolIds: readonly string[]): Promise<void> {
  await db.deleteFrom('data_source_datapools').where('data_source_id', '=', id).execute();
  if (datapoolIds.length > 0) await db.insertInto('data_source_datapools').values(datapoolIds.map((datapoolId) => ({ data_source_id: id, datapool_id: datapoolId }))).execute();
}

export async function insertSource(db: Database, id: string, v: SourceValues): Promise<void> {
  await db.insertInto('data_sources').values({
    id, name: v.name, description: v.description, connector_type: v.connectorType, configuration: JSON.stringify(v.configuration),
    data_structure_version_id: v.dataStructureVersionId, datapool_scope_type: v.scopeType,
  }).execute();
  await setDatapools(db, id, v.datapoolIds);
}

/**
 * `scopeChanged` false leaves the datapool rows alone: rewriting them would wait on a datapool a
 * concurrent delete holds while that delete waits on these rows (a deadlock). A changed scope has
 * its datapools locked first (`lockExistingDatapools`), so that cannot happen either.
 */
export async function updateSourceRow(db: Database, id: string, v: SourceValues, scopeChanged: boolean): Promise<void> {
  await db.updateTable('data_sources').set({
    name: v.name, description: v.description, connector_type: v.connectorType, configuration: JSON.stringify(v.configuration),
    data_structure_version_id: v.dataStructureVersionId, datapool_scope_type: v.scopeType, modified_at: sql`now()`,
  }).where('id', '=', id).execute();
  if (scopeChanged) await setDatapools(db, id, v.datapoolIds);
}

export const setSourceStatus = (db: Database, id: string, status: ReleaseStatus) =>
  db.updateTable('data_sources').set({ status, modified_at: sql`now()` }).where('id', '=', id).execute();

export const deleteSourceRow = (db: Database, id: string) => db.deleteFrom('data_sources').where('id', '=', id).execute();

/** The datapools among `ids` that exist, locked FOR KEY SHARE (a concurrent delete waits, then drops them from the scope). */
export async function lockExistingDatapools(db: Database, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom('datapools').select('id').where('id', 'in', [...ids]).forKeyShare().execute();
  return new Set(rows.map((row) => row.id));
}

/** Which of these ids name data sources: stage and release check pipelines' references with it. */
/** Which of these data sources are AVAILABLE (released). */
export async function availableDataSourceIds(db: Database, ids: readonly string[]): Promise<ReadonlySet<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom('data_sources').select('id').where('id', 'in', [...new Set(ids)]).where('status', '=', 'AVAILABLE').execute();
  return new Set(rows.map((row) => row.id));
}

export async function existingDataSourceIds(db: Database, ids: readonly string[]): Promise<ReadonlySet<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom('data_sources').select('id').where('id', 'in', [...new Set(ids)]).execute();
  return new Set(rows.map((row) => row.id));
}
