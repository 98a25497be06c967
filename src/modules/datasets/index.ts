/** The datasets module's public face: what other modules and the process wiring may use. */
export { datasetRoutes } from './datasets.routes.js';
export { datasetSagas, type DatasetSagaSteps } from './dataset-sagas.js';
export { datasetIdsOfDatapools, describeDatasetForOws, existingDatasetIds } from './datasets.repo.js';
export { authorizeDatasetPart, type DatasetsContext } from './datasets.service.js';
export type { DatasetPartCheck } from './part-checks.js';
export type { Dataset } from './datasets.schemas.js';
export { findDatasetState, namedApiStandardOf, namedApiStandardsOf, type DatasetState } from './datasets.repo.js';
export { storageSchemaOf } from './dataset-sagas.js';
export { datasetCatalogueSource } from './catalogue-source.js';
