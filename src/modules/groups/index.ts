/** The groups module's public face. */
export { groupRoutes } from './groups.routes.js';
