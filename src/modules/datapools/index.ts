/** The datapools module's public face. */
export { datapoolRoutes } from './datapools.routes.js';
