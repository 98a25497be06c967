/** Explain access: why a user holds what they hold on a dataset. */
export { accessExplainRoutes } from './access-explain.routes.js';
