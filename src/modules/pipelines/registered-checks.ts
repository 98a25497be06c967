import { AppError } from '../../errors.js';
import type { DatasetPartCheck } from '../datasets/index.js';
import type { DataSourceReferrer } from '../datasources/index.js';
import type { MappingReferrer } from '../mappings/index.js';
import { dataSourcesReadByPipelines, pipelinesUsingDataSource, pipelinesWithMappingRef } from './pipelines.repo.js';
import { pipelineProblems } from './pipelines.service.js';

/**
 * What pipelines register with the modules they depend on (app.ts wires them): their problems for
 * the stage and release of their dataset, and the refusals that keep a data source or a mapping
 * they refer to from being deleted. Those modules ask through these and never import pipelines.
 */

/** Stage and release: every pipeline's mapping, data sources and named API (see pipelineProblems). */
export const pipelineReleaseCheck: DatasetPartCheck = {
  problems: (trx, dataset) => pipelineProblems(trx, dataset.id, dataset.namedApis.map((api) => api.slug)),
};

/** A data source stays while a pipeline reads from it; the refusal names the pipelines and their datasets. */
export const pipelinesReadingDataSources: DataSourceReferrer = {
  referenced: (db, ids) => dataSourcesReadByPipelines(db, ids),
  async refusal(db, id) {
    const pipelines = await pipelinesUsingDataSource(db, id);
    if (pipelines.length === 0) return null;
    return new AppError('RESOURCE_IN_USE', `Data source ${id} is read by the pipelines ${pipelines.map((p) => `"${p.name}" (${p.id}, dataset ${p.datasetId})`).join(', ')}; remove it from them first`, {
      extensions: { pipelineIds: pipelines.map((p) => p.id) },
    });
  },
};

/** A mapping (or one of its versions) stays while a pipeline's mappingRef names it; the refusal names the pipelines. */
export const pipelinesReferringToMappings: MappingReferrer = {
  async refusal(db, datasetId, urns) {
    const users = await pipelinesWithMappingRef(db, datasetId, urns);
    if (users.length === 0) return null;
    return new AppError('RESOURCE_IN_USE', `The mapping is referenced by ${users.map((p) => `pipeline "${p.name}" (${p.id}) as ${p.mapping_ref!}`).join(', ')}; change its mappingRef first`);
  },
};
