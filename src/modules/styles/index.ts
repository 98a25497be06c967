/** The styles module's public face. */
export { styleRoutes } from './styles.routes.js';
