import { sql, type SqlBool } from 'kysely';
import type { Database } from '../../db/client.js';
import { pipelinesWithMappingRef } from './pipelines.repo.js';

/** The pipelines module's public face. */
export { pipelineRoutes } from './pipelines.routes.js';
export { pipelineProblems } from './pipelines.service.js';
export { pipelineCatalog, pipelineSagaSteps } from './pipeline-runtime.js';

/** The names of the pipelines (with their dataset ids) that read from a data source: it is in use while there is one. */
export async function pipelinesUsingDataSource(db: Database, dataSourceId: string): Promise<{ id: string; name: string; datasetId: string }[]> {
  const rows = await db.selectFrom('pipelines').select(['id', 'name', 'dataset_id'])
    .where(sql<SqlBool>`data_source_ids @> array[${dataSourceId}]::uuid[]`)
    .orderBy('name').execute();
  return rows.map((row) => ({ id: row.id, name: row.name, datasetId: row.dataset_id }));
}

/** The pipelines of a dataset whose mappingRef is one of these URNs: the mapping is in use while there is one. */
export async function pipelinesReferencingMapping(db: Database, datasetId: string, urns: readonly string[]): Promise<{ id: string; name: string; mappingRef: string }[]> {
  const rows = await pipelinesWithMappingRef(db, datasetId, urns);
  return rows.map((row) => ({ id: row.id, name: row.name, mappingRef: row.mapping_ref! }));
}
