/** The roles module's public face. */
export { roleRoutes } from './roles.routes.js';
