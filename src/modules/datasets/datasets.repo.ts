import { sql } from 'kysely';
import { jsonArrayFrom, jsonObjectFrom } from 'kysely/helpers/postgres';
import type { Database } from '../../db/client.js';
import type { DatasetStatus, SagaType } from '../../db/schema.js';
import { userRefOf } from '../../db/user-ref.js';
import { fetchPageIds, inIdOrder, withNameDescriptionFilters, withSharedFilters, splitIds, type ListRequest } from '../../db/list-query.js';
import { withReadableScope } from '../../access/readable-scope.js';
import { iso } from '../../http/resource.js';
import type { ReadableScope } from '../../access/check-access.js';
import type { Dataset, DatasetListQuery, NamedApi, NamedApiInput } from './datasets.schemas.js';
import { catalogueMetadataOf, type CatalogueMetadata } from '../../catalogue/index.js';

export const DATASET_SORT_COLUMNS: Record<string, string> = {
  name: 'd.name', description: 'd.description', dataSetStatus: 'd.status', createdAt: 'd.created_at', modifiedAt: 'd.modified_at',
};

/** Full dataset representations (datapool, creator, named APIs), in one query. */
export async function loadDatasets(db: Database, ids: readonly string[], dataApiUrl: string): Promise<Dataset[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('datasets as d')
    .selectAll('d')
    .select((eb) => [
      jsonObjectFrom(eb.selectFrom('datapools as p').select(['p.id', 'p.name']).whereRef('p.id', '=', 'd.datapool_id')).as('datapool'),
      userRefOf(eb, 'd.created_by').as('creator'),
      jsonArrayFrom(eb.selectFrom('dataset_named_apis as n').select(['n.name', 'n.description', 'n.slug', 'n.standard', 'n.version', 'n.upstream_url as upstreamUrl'])
        .whereRef('n.dataset_id', '=', 'd.id').orderBy('n.position')).as('named_apis'),
      // Oldest first: the order in which stage and release name them (pipelines[i]).
      jsonArrayFrom(eb.selectFrom('pipelines as pl').select(['pl.id', 'pl.name', 'pl.description', 'pl.runtime_status as runtimeStatus'])
        .whereRef('pl.dataset_id', '=', 'd.id').orderBy('pl.created_at').orderBy('pl.id')).as('pipelines'),
    ])
    .where('d.id', 'in', [...ids])
    .execute();
  return inIdOrder(ids, rows.map((row) => ({
    id: row.id,
    name: row.name,
    description: row.description,
    dataSetStatus: row.status,
    datapool: row.datapool ?? null,
    createdBy: row.creator ?? null,
    openDataAccess: row.open_data_access,
    namedApis: row.named_apis as NamedApi[],
    pendingSagaType: row.pending_saga_type,
    provisioned: row.provisioned,
    sagaError: (typeof row.saga_error === 'string' ? JSON.parse(row.saga_error) : row.saga_error) as Dataset['sagaError'],
    pipelines: row.pipelines as Dataset['pipelines'],
    publicUrl: row.status === 'AVAILABLE' ? `${dataApiUrl}/v1/datasets/${row.id}` : null,
    catalogue: catalogueMetadataOf(typeof row.catalogue === 'string' ? JSON.parse(row.catalogue) : row.catalogue),
    createdAt: iso(row.created_at),
    modifiedAt: iso(row.modified_at),
  })));
}

/** One page of the datasets matching the filters among those the caller may read (filtered in SQL). */
export async function findDatasetPage(db: Database, query: DatasetListQuery, request: ListRequest, readable: ReadableScope) {
  let qb = withSharedFilters(db.selectFrom('datasets as d'), 'd', query);
  qb = withReadableScope(qb, 'd', readable, (eb, datapoolIds) => eb('d.datapool_id', 'in', datapoolIds));
  qb = withNameDescriptionFilters(qb, 'd', query);
  const datapoolIds = splitIds(query.datapoolIds);
  if (datapoolIds) qb = qb.where('d.datapool_id', 'in', datapoolIds);
  if (!query.includePendingDelete) qb = qb.where((eb) => eb.or([eb('d.pending_saga_type', 'is', null), eb('d.pending_saga_type', '!=', 'DELETE')]));
  return fetchPageIds(qb, 'd', request, DATASET_SORT_COLUMNS);
}

export interface DatasetState { id: string; status: DatasetStatus; pendingSagaType: SagaType | null; provisioned: boolean; datapoolId: string | null }

const stateOf = (row: { id: string; status: DatasetStatus; pending_saga_type: SagaType | null; provisioned: boolean; datapool_id: string | null }): DatasetState =>
  ({ id: row.id, status: row.status, pendingSagaType: row.pending_saga_type, provisioned: row.provisioned, datapoolId: row.datapool_id });

const STATE_COLUMNS = ['id', 'status', 'pending_saga_type', 'provisioned', 'datapool_id'] as const;

/** The lifecycle state of a dataset, its row locked for the rest of the transaction. */
export async function lockDataset(db: Database, id: string): Promise<DatasetState | undefined> {
  const row = await db.selectFrom('datasets').select(STATE_COLUMNS).where('id', '=', id).forUpdate().executeTakeFirst();
  return row && stateOf(row);
}

/** The state without a lock: authorization needs the datapool before any write. */
export async function findDatasetState(db: Database, id: string): Promise<DatasetState | undefined> {
  const row = await db.selectFrom('datasets').select(STATE_COLUMNS).where('id', '=', id).executeTakeFirst();
  return row && stateOf(row);
}

export interface DatasetValues { name: string; description: string; datapoolId: string | null; openDataAccess: boolean; catalogue: CatalogueMetadata }

export const insertDataset = (db: Database, id: string, values: DatasetValues, createdBy: string | null) =>
  db.insertInto('datasets').values({
    id, name: values.name, description: values.description, datapool_id: values.datapoolId, open_data_access: values.openDataAccess,
    catalogue: JSON.stringify(values.catalogue), created_by: createdBy, pending_saga_type: 'CREATE',
  }).execute();

/** A metadata change: it moves the catalogue record's `dct:modified` too. */
export const updateDatasetRow = (db: Database, id: string, values: DatasetValues) =>
  db.updateTable('datasets').set({
    name: values.name, description: values.description, datapool_id: values.datapoolId, open_data_access: values.openDataAccess,
    catalogue: JSON.stringify(values.catalogue), modified_at: sql`now()`, record_modified_at: sql`now()`,
  }).where('id', '=', id).execute();

/** A release ended: the catalogue record was issued now if never before, and changed now. */
export const markReleased = (db: Database, id: string) =>
  db.updateTable('datasets').set({ first_released_at: sql`coalesce(first_released_at, now())`, record_modified_at: sql`now()` }).where('id', '=', id).execute();

export const setDatasetState = (db: Database, id: string, changes: { status?: DatasetStatus; pendingSagaType?: SagaType | null; provisioned?: boolean }) =>
  db.updateTable('datasets').set({
    ...(changes.status !== undefined ? { status: changes.status } : {}),
    ...(changes.pendingSagaType !== undefined ? { pending_saga_type: changes.pendingSagaType } : {}),
    ...(changes.provisioned !== undefined ? { provisioned: changes.provisioned } : {}),
    ...(changes.pendingSagaType ? { saga_error: null } : {}),
    modified_at: sql`now()`,
  }).where('id', '=', id).execute();

export const recordSagaError = (db: Database, id: string, error: { sagaType: SagaType; message: string }) =>
  db.updateTable('datasets').set({
    pending_saga_type: null,
    saga_error: JSON.stringify({ ...error, occurredAt: new Date().toISOString() }),
    modified_at: sql`now()`,
  }).where('id', '=', id).execute();

export async function setNamedApis(db: Database, datasetId: string, apis: readonly NamedApiInput[]): Promise<void> {
  await db.deleteFrom('dataset_named_apis').where('dataset_id', '=', datasetId).execute();
  if (apis.length === 0) return;
  await db.insertInto('dataset_named_apis').values(apis.map((api, position) => ({
    dataset_id: datasetId, position, slug: api.slug, name: api.name, standard: api.standard, version: api.version ?? null, description: api.description ?? null,
    upstream_url: api.upstreamUrl?.replace(/\/+$/, '') ?? null,
  }))).execute();
}

/** The standards of a dataset's named APIs (what a release must provision), without duplicates. */
/** What the OWS capabilities say of a dataset (its title, abstract and the named API's name), or undefined when gone. */
export async function describeDatasetForOws(db: Database, datasetId: string, slug: string): Promise<{ name: string; description: string | null; apiName: string | null } | undefined> {
  const row = await db.selectFrom('datasets as d')
    .leftJoin('dataset_named_apis as n', (join) => join.onRef('n.dataset_id', '=', 'd.id').on('n.slug', '=', slug))
    .select(['d.name', 'd.description', 'n.name as apiName'])
    .where('d.id', '=', datasetId).executeTakeFirst();
  return row ? { name: row.name, description: row.description ?? null, apiName: row.apiName ?? null } : undefined;
}

export async function namedApiStandardsOf(db: Database, datasetId: string): Promise<Array<'OWS' | 'STA'>> {
  const rows = await db.selectFrom('dataset_named_apis').select('standard').distinct().where('dataset_id', '=', datasetId).execute();
  return rows.map((row) => row.standard);
}

/** The standard of the dataset's named API with that slug, if it has one. */
export async function namedApiStandardOf(db: Database, datasetId: string, slug: string): Promise<'OWS' | 'STA' | undefined> {
  const row = await db.selectFrom('dataset_named_apis').select('standard').where('dataset_id', '=', datasetId).where('slug', '=', slug).executeTakeFirst();
  return row?.standard;
}

export const deleteDatasetRow = (db: Database, id: string) => db.deleteFrom('datasets').where('id', '=', id).execute();

/** The ids of the datasets each datapool holds, oldest first, in one query. */
export async function datasetIdsOfDatapools(db: Database, datapoolIds: readonly string[]): Promise<Map<string, string[]>> {
  const byPool = new Map<string, string[]>(datapoolIds.map((id) => [id, []]));
  if (datapoolIds.length === 0) return byPool;
  const rows = await db.selectFrom('datasets').select(['id', 'datapool_id']).where('datapool_id', 'in', [...datapoolIds])
    .orderBy('created_at').orderBy('id').execute();
  for (const row of rows) byPool.get(row.datapool_id!)?.push(row.id);
  return byPool;
}

/** Which of the dataset ids exist, locked FOR KEY SHARE (as the scopes of assignments are) until the transaction ends. */
export async function existingDatasetIds(db: Database, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await sql<{ id: string }>`select id from datasets where id in (${sql.join([...ids])}) for key share`.execute(db);
  return new Set(rows.map((row) => row.id));
}

/** A record the catalogue changed outside a metadata write (an unrelease takes the dataset out of it). */
export const markRecordChanged = (db: Database, id: string) =>
  db.updateTable('datasets').set({ record_modified_at: sql`now()` }).where('id', '=', id).execute();

/** The datasets the open-data catalogue lists: released (no saga under way) and open. */
const inCatalogue = sql<boolean>`d.status = 'AVAILABLE' and d.pending_saga_type is null and d.open_data_access`;

export interface CatalogueRow {
  id: string; name: string; description: string; catalogue: unknown; first_released_at: Date | null; record_modified_at: Date;
  apis: Array<{ slug: string; standard: 'OWS' | 'STA'; name: string; description: string | null; upstream: boolean }>;
}

const catalogueColumns = sql`d.id, d.name, d.description, d.catalogue, d.first_released_at, d.record_modified_at,
  coalesce((select json_agg(json_build_object('slug', n.slug, 'standard', n.standard, 'name', n.name, 'description', n.description, 'upstream', n.upstream_url is not null) order by n.position)
              from dataset_named_apis n where n.dataset_id = d.id), '[]'::json) as apis`;

/** A page of the catalogue's datasets in the order of their first release (a new release comes last). */
export async function findCataloguePage(db: Database, query: { offset: number; limit: number; modifiedSince: Date | null }): Promise<CatalogueRow[]> {
  const since = query.modifiedSince ? sql`and d.record_modified_at > ${query.modifiedSince}` : sql``;
  // The page's ids first (the index walks past the offset), then the details of those alone: the
  // named APIs' subquery ran for every skipped row too (83 ms for page 51 of 10,000 datasets).
  const { rows } = await sql<CatalogueRow>`with page as (
      select d.id from datasets d where ${inCatalogue} ${since} order by d.first_released_at, d.id limit ${query.limit} offset ${query.offset})
    select ${catalogueColumns} from page join datasets d on d.id = page.id order by d.first_released_at, d.id`.execute(db);
  return rows;
}

/** How many datasets the catalogue lists (whose record changed after `modifiedSince`). */
export async function countCatalogue(db: Database, modifiedSince: Date | null): Promise<number> {
  const since = modifiedSince ? sql`and d.record_modified_at > ${modifiedSince}` : sql``;
  const { rows } = await sql<{ total: number }>`select count(*)::int as total from datasets d where ${inCatalogue} ${since}`.execute(db);
  return rows[0]?.total ?? 0;
}

export async function findCatalogueRow(db: Database, id: string): Promise<CatalogueRow | undefined> {
  const { rows } = await sql<CatalogueRow>`select ${catalogueColumns} from datasets d where d.id = ${id} and ${inCatalogue}`.execute(db);
  return rows[0];
}

/** The latest change of a record the catalogue holds or held: every dataset ever released counts (an unrelease moves it too). */
export async function catalogueLastModified(db: Database): Promise<Date | null> {
  const { rows } = await sql<{ last: Date | null }>`select max(record_modified_at) as last from datasets where first_released_at is not null`.execute(db);
  return rows[0]?.last ? new Date(rows[0].last) : null;
}
