import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { callerOf } from '../../http/authentication.js';
import { requireTenantPermission } from '../../access/check-access.js';
import { PageOf } from '../../http/page.js';
import { IdParams, NoContent, responses } from '../../http/schemas.js';
import { created, withEtag } from '../../http/resource.js';
import { Role, RoleInput, RoleListQuery, RolePatch } from './roles.schemas.js';
import { actorOf } from '../audit/index.js';
import { createRole, deleteRole, getRole, listRoles, updateRole } from './roles.service.js';

const tags = ['Roles'];
const WRITE_ERRORS = [400, 401, 403, 404, 409, 412, 413, 415];

export const roleRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get('/roles', {
    schema: { tags, summary: 'List all roles', querystring: RoleListQuery, response: responses({ 200: PageOf(Role, 'Role') }, [400, 401, 403]) },
  }, async (request) => {
    requireTenantPermission(callerOf(request), 'ROLE_READ');
    return listRoles(ctx.db, request.query);
  });

  app.post('/roles', {
    schema: { tags, summary: 'Create a role', body: RoleInput, response: responses({ 201: Role }, [400, 401, 403, 409, 413, 415]) },
  }, async (request, reply) => {
    requireTenantPermission(callerOf(request), 'ROLE_WRITE');
    return created(reply, ctx.config.api.baseUrl, '/v1/roles', await createRole(ctx.db, actorOf(request), request.body));
  });

  app.get('/roles/:id', {
    schema: { tags, summary: 'Get a role by id', params: IdParams, response: responses({ 200: Role }, [400, 401, 403, 404]) },
  }, async (request, reply) => {
    requireTenantPermission(callerOf(request), 'ROLE_READ');
    return withEtag(reply, await getRole(ctx.db, request.params.id));
  });

  app.put('/roles/:id', {
    schema: { tags, summary: 'Replace a role (read-only roles answer 409)', params: IdParams, body: RoleInput, response: responses({ 200: Role }, WRITE_ERRORS) },
  }, async (request, reply) => {
    const caller = callerOf(request);
    requireTenantPermission(caller, 'ROLE_WRITE');
    return withEtag(reply, await updateRole(ctx.db, caller, actorOf(request), request.params.id, request.body, 'replace', request.headers['if-match']));
  });

  app.patch('/roles/:id', {
    schema: { tags, summary: 'Partially update a role (read-only roles answer 409)', params: IdParams, body: RolePatch, response: responses({ 200: Role }, WRITE_ERRORS) },
  }, async (request, reply) => {
    const caller = callerOf(request);
    requireTenantPermission(caller, 'ROLE_WRITE');
    return withEtag(reply, await updateRole(ctx.db, caller, actorOf(request), request.params.id, request.body, 'patch', request.headers['if-match']));
  });

  app.delete('/roles/:id', {
    schema: { tags, summary: 'Delete a role (409 when read-only or still assigned)', params: IdParams, response: responses({ 204: NoContent }, [400, 401, 403, 404, 409, 412]) },
  }, async (request, reply) => {
    requireTenantPermission(callerOf(request), 'ROLE_WRITE');
    await deleteRole(ctx.db, actorOf(request), request.params.id, request.headers['if-match']);
    return reply.code(204).send();
  });
};
