/** The pipelines module's public face. */
export { pipelineRoutes } from './pipelines.routes.js';
export { pipelineCatalog, pipelineSagaSteps } from './pipeline-runtime.js';
export { pipelineReleaseCheck, pipelinesReadingDataSources, pipelinesReferringToMappings } from './registered-checks.js';
export { pipelinesUsingDataSource } from './pipelines.repo.js';
