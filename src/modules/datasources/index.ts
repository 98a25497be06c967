/** The data sources module's public face. */
export { dataSourceRoutes } from './datasources.routes.js';
export type { SourcesContext } from './datasources.service.js';
export { availableDataSourceIds, existingDataSourceIds } from './datasources.repo.js';
export { openedSourceConfiguration, resealDataSourceSecrets, DataSourceSecretError } from './secrets.js';
export type { DataSourceReferrer } from './references.js';
