/** Personal access tokens over REST; turning one into a caller is src/access/credentials.ts. */
export { tokenRoutes } from './tokens.routes.js';
