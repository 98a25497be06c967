/** The feature store's public face: the gateway and runtime.ts need nothing else. */
export { createFeatureStore, type FeatureStoreDeps } from './store.js';
export type { FeatureRequest, FeatureResponse, FeatureStore } from './types.js';
