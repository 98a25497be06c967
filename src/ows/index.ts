/** The feature store's public face: the gateway and runtime.ts (the store, the OWS server, the pipelines' feature writer) need nothing else. */
export { createFeatureStore, type FeatureStoreDeps } from './store.js';
export type { FeatureDownloadRequest, FeatureRequest, FeatureResponse, FeatureStore } from './types.js';
export { OwsServer, type OwsAnswer, type OwsRequest, type OwsRoute } from './ows-server.js';
export { isForm as isOwsForm, owsOperationOf, planOwsRequest, type OwsPlan } from './ows-request.js';
export { createFeatureWriter } from './pipeline-writes.js';
export { owsDataExtent, type OwsDataExtent } from './data-extent.js';
export { MatchCounts } from './ogc-api/match-counts.js';
// Bulk downloads: which paths they are, and the maker of GeoPackages that runtime.ts configures.
export { isFeatureDownloadPath } from './downloads.js';
export { GeoPackageMaker, type GeoPackageSettings } from './geopackage.js';
