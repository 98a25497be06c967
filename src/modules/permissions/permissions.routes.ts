import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { callerOf } from '../../http/authentication.js';
import { requireTenantPermission } from '../../access/check-access.js';
import { IdParams, responses } from '../../http/schemas.js';
import { withEtag } from '../../http/resource.js';
import { Permission, PermissionListQuery } from './permissions.schemas.js';
import { getPermission, listPermissions } from './permissions.service.js';

const tags = ['Permissions'];

export const permissionRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get('/permissions', {
    schema: {
      tags, summary: 'List all permissions (plain array, not paginated)', querystring: PermissionListQuery,
      response: responses({ 200: Type.Array(Permission) }, [400, 401, 403]),
    },
  }, async (request) => {
    requireTenantPermission(callerOf(request), 'PERMISSION_READ');
    return listPermissions(ctx.db, request.query);
  });

  app.get('/permissions/:id', {
    schema: { tags, summary: 'Get a permission by id', params: IdParams, response: responses({ 200: Permission }, [400, 401, 403, 404]) },
  }, async (request, reply) => {
    requireTenantPermission(callerOf(request), 'PERMISSION_READ');
    return withEtag(reply, await getPermission(ctx.db, request.params.id));
  });
};
