/** The users module's public face: what other modules may use. */
export { findUserActivity, lockUserState } from './users.repo.js';
export { userRoutes } from './users.routes.js';
