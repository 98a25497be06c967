/** The data structures module's public face: its routes, and what data sources need of versions. */
export { dataStructureRoutes } from './datastructures.routes.js';
export type { StructuresContext } from './datastructures.service.js';
export { assertUsableVersion, versionSummaries } from './versions.service.js';
export { VersionSummary } from './datastructures.schemas.js';
