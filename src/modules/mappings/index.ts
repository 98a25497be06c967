/** The mappings module's public face. */
export { mappingRoutes } from './mappings.routes.js';
export { resolveMapping } from './mappings.service.js';
export { mappingUrnProblem } from './mapping-urns.js';
export type { MappingReferrer } from './references.js';
