import { sql, type SqlBool } from 'kysely';
import type { Database } from '../../db/client.js';
import { fetchPageIds, inIdOrder, withNameDescriptionFilters, withSharedFilters, type ListRequest } from '../../db/list-query.js';
import { iso } from '../../http/resource.js';
import type { Pipeline, PipelineListQuery } from './pipelines.schemas.js';

export const PIPELINE_SORT_COLUMNS: Record<string, string> = {
  name: 'p.name', description: 'p.description', createdAt: 'p.created_at', modifiedAt: 'p.modified_at',
};

const parsed = <T>(value: unknown): T => (typeof value === 'string' ? JSON.parse(value) : value) as T;

/** Pipeline representations of a dataset, in the order of `ids`. */
export async function loadPipelines(db: Database, datasetId: string, ids: readonly string[]): Promise<Pipeline[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('pipelines as p')
    .select(['p.id', 'p.name', 'p.description', 'p.mapping_ref', 'p.named_api_slug', 'p.schedule', 'p.runtime_status', 'p.created_at', 'p.modified_at'])
    // As JSON: both drivers then read the uuid[] the same way.
    .select(sql<string[]>`to_jsonb(p.data_source_ids)`.as('data_source_ids'))
    .where('p.dataset_id', '=', datasetId).where('p.id', 'in', [...ids])
    .execute();
  return inIdOrder(ids, rows.map((row) => ({
    id: row.id,
    name: row.name,
    description: row.description,
    dataSourceIds: parsed<string[]>(row.data_source_ids),
    mappingRef: row.mapping_ref,
    namedApiSlug: row.named_api_slug,
    schedule: row.schedule,
    runtimeStatus: parsed<Pipeline['runtimeStatus']>(row.runtime_status ?? null),
    createdAt: iso(row.created_at),
    modifiedAt: iso(row.modified_at),
  })));
}

/** Every pipeline of a dataset, oldest first (the order stage and release number them in). */
export async function pipelineIdsOfDataset(db: Database, datasetId: string): Promise<string[]> {
  const rows = await db.selectFrom('pipelines').select('id').where('dataset_id', '=', datasetId).orderBy('created_at').orderBy('id').execute();
  return rows.map((row) => row.id);
}

/** One page of a dataset's pipelines (the caller may read them all: the dataset's scope covers them). */
export async function findPipelinePage(db: Database, datasetId: string, query: PipelineListQuery, request: ListRequest) {
  let qb = withSharedFilters(db.selectFrom('pipelines as p').where('p.dataset_id', '=', datasetId), 'p', query);
  qb = withNameDescriptionFilters(qb, 'p', query);
  return fetchPageIds(qb, 'p', request, PIPELINE_SORT_COLUMNS);
}

export interface PipelineValues {
  name: string; description: string; dataSourceIds: string[]; mappingRef: string | null; namedApiSlug: string | null; schedule: string | null;
}

// The ids are validated UUIDs: an array literal is safe and reads the same on both drivers.
const uuidArray = (ids: readonly string[]) => sql<string[]>`${`{${ids.join(',')}}`}::uuid[]`;

export const insertPipeline = (db: Database, datasetId: string, id: string, values: PipelineValues) =>
  db.insertInto('pipelines').values({
    id, dataset_id: datasetId, name: values.name, description: values.description, data_source_ids: uuidArray(values.dataSourceIds),
    mapping_ref: values.mappingRef, named_api_slug: values.namedApiSlug, schedule: values.schedule,
  }).execute();

export const updatePipelineRow = (db: Database, id: string, values: PipelineValues) =>
  db.updateTable('pipelines').set({
    name: values.name, description: values.description, data_source_ids: uuidArray(values.dataSourceIds),
    mapping_ref: values.mappingRef, named_api_slug: values.namedApiSlug, schedule: values.schedule, modified_at: sql`now()`,
  }).where('id', '=', id).execute();

export const deletePipelineRow = (db: Database, id: string) => db.deleteFrom('pipelines').where('id', '=', id).execute();

/** The pipelines (with their dataset ids) that read from a data source, by name. */
export async function pipelinesUsingDataSource(db: Database, dataSourceId: string): Promise<{ id: string; name: string; datasetId: string }[]> {
  const rows = await db.selectFrom('pipelines').select(['id', 'name', 'dataset_id'])
    .where(sql<SqlBool>`data_source_ids @> array[${dataSourceId}]::uuid[]`)
    .orderBy('name').execute();
  return rows.map((row) => ({ id: row.id, name: row.name, datasetId: row.dataset_id }));
}

/** Of these data sources, those that at least one pipeline reads from. */
export async function dataSourcesReadByPipelines(db: Database, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await sql<{ id: string }>`select distinct unnest(data_source_ids) as id from pipelines where data_source_ids && ${uuidArray(ids)}`.execute(db);
  const wanted = new Set(ids);
  return new Set(rows.map((row) => row.id).filter((id) => wanted.has(id)));
}

/** The pipelines of a dataset whose mappingRef is one of `urns`. */
export const pipelinesWithMappingRef = (db: Database, datasetId: string, urns: readonly string[]) =>
  urns.length === 0
    ? Promise.resolve([])
    : db.selectFrom('pipelines').select(['id', 'name', 'mapping_ref']).where('dataset_id', '=', datasetId).where('mapping_ref', 'in', [...urns])
      .orderBy('name').execute();

/** The pipelines that should run now (the `runnable_pipelines` view). */
export const runnablePipelineRows = (db: Database) =>
  db.selectFrom('runnable_pipelines').select(['id', 'restart_generation']).execute();

/**
 * Whether the pipeline may write a batch now, in one statement (it runs once per batch): its
 * dataset AVAILABLE with no saga under way, and every one of its data sources AVAILABLE (the rule
 * of `runnable_pipelines`). The dataset row is held FOR SHARE until the transaction ends, so an
 * unrelease waits for the batch; the status is read from the row as locked, so a batch that waited
 * for an unrelease's commit sees it.
 */
export async function mayStillRun(trx: Database, id: string): Promise<boolean> {
  const { rows } = await sql<{ runnable: boolean }>`
    select d.status = 'AVAILABLE' and d.pending_saga_type is null and not exists (
             select 1 from pipelines p cross join unnest(p.data_source_ids) as wanted (id)
             left join data_sources s on s.id = wanted.id
             where p.id = ${id} and s.status is distinct from 'AVAILABLE'
           ) as runnable
      from datasets d
     where d.id = (select dataset_id from pipelines where id = ${id})
       for share of d`.execute(trx);
  return rows[0]?.runnable === true;
}

/** One pipeline's stored definition, whatever its dataset (for the runtime). */
export async function pipelineDefinition(db: Database, id: string) {
  const row = await db.selectFrom('pipelines').select(['id', 'dataset_id', 'name', 'mapping_ref', 'named_api_slug', 'schedule', 'restart_generation'])
    .select(sql<string[]>`to_jsonb(data_source_ids)`.as('data_source_ids'))
    .where('id', '=', id).executeTakeFirst();
  return row && { ...row, data_source_ids: parsed<string[]>(row.data_source_ids) };
}

/** The runtime's status of a pipeline, written only while its dataset is AVAILABLE (else it reads null). */
export const saveRuntimeStatusRow = (db: Database, id: string, status: Record<string, unknown>) =>
  db.updateTable('pipelines').set({ runtime_status: JSON.stringify(status) })
    .where('id', '=', id)
    .where(sql<boolean>`exists (select 1 from datasets d where d.id = pipelines.dataset_id and d.status = 'AVAILABLE')`)
    .execute();

export const setRuntimeStatusOfPipelines = (db: Database, ids: readonly string[], status: Record<string, unknown> | null) =>
  ids.length === 0 ? Promise.resolve([]) : db.updateTable('pipelines').set({ runtime_status: status === null ? null : JSON.stringify(status) }).where('id', 'in', [...ids]).execute();

/** Asks whichever process runs the pipeline to start it again (it compares the generation at its next pass). */
export const bumpRestartGeneration = (db: Database, id: string) =>
  db.updateTable('pipelines').set({ restart_generation: sql`restart_generation + 1` }).where('id', '=', id).execute();
