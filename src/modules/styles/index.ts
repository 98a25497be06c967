/** The styles module's public face. */
export { styleRoutes } from './styles.routes.js';
export { stylesOfDataset } from './styles.repo.js';
