/** The permissions module's public face. */
export { permissionRoutes } from './permissions.routes.js';
export { PermissionTypeSchema } from './permissions.schemas.js';
