import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { callerOf } from '../../http/authentication.js';
import { requireTenantPermission } from '../../access/check-access.js';
import { PageOf } from '../../http/page.js';
import { IdParams, NoContent, responses } from '../../http/schemas.js';
import { created, withEtag } from '../../http/resource.js';
import { Group, GroupAssignmentsInput, GroupInput, GroupListQuery, GroupParams, GroupPatch } from './groups.schemas.js';
import { actorOf } from '../audit/index.js';
import { createGroup, deleteGroup, getGroup, listGroups, replaceAssignmentsOfGroup, updateGroup } from './groups.service.js';

const tags = ['Groups'];
const WRITE_ERRORS = [400, 401, 403, 404, 409, 412, 413, 415];

export const groupRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get('/groups', {
    schema: { tags, summary: 'List all groups', querystring: GroupListQuery, response: responses({ 200: PageOf(Group, 'Group') }, [400, 401, 403]) },
  }, async (request) => {
    requireTenantPermission(callerOf(request), 'GROUP_READ');
    return listGroups(ctx.db, request.query);
  });

  app.post('/groups', {
    schema: { tags, summary: 'Create a group', body: GroupInput, response: responses({ 201: Group }, [400, 401, 403, 409, 413, 415]) },
  }, async (request, reply) => {
    const caller = callerOf(request);
    requireTenantPermission(caller, 'GROUP_WRITE');
    return created(reply, ctx.config.api.baseUrl, '/v1/groups', await createGroup(ctx.db, caller, actorOf(request), request.body));
  });

  app.get('/groups/:id', {
    schema: { tags, summary: 'Get a group by id', params: IdParams, response: responses({ 200: Group }, [400, 401, 403, 404]) },
  }, async (request, reply) => {
    requireTenantPermission(callerOf(request), 'GROUP_READ');
    return withEtag(reply, await getGroup(ctx.db, request.params.id));
  });

  app.put('/groups/:id', {
    schema: { tags, summary: 'Replace a group', params: IdParams, body: GroupInput, response: responses({ 200: Group }, WRITE_ERRORS) },
  }, async (request, reply) => {
    const caller = callerOf(request);
    requireTenantPermission(caller, 'GROUP_WRITE');
    return withEtag(reply, await updateGroup(ctx.db, caller, actorOf(request), request.params.id, request.body, 'replace', request.headers['if-match']));
  });

  app.patch('/groups/:id', {
    schema: { tags, summary: 'Partially update a group', params: IdParams, body: GroupPatch, response: responses({ 200: Group }, WRITE_ERRORS) },
  }, async (request, reply) => {
    const caller = callerOf(request);
    requireTenantPermission(caller, 'GROUP_WRITE');
    return withEtag(reply, await updateGroup(ctx.db, caller, actorOf(request), request.params.id, request.body, 'patch', request.headers['if-match']));
  });

  app.put('/groups/:groupId/assignments', {
    schema: {
      tags, summary: 'Replace every role assignment of a group (by difference, in one transaction)',
      params: GroupParams, body: GroupAssignmentsInput, response: responses({ 200: Group }, [400, 401, 403, 404, 409, 412, 413, 415]),
    },
  }, async (request, reply) => {
    const caller = callerOf(request);
    requireTenantPermission(caller, 'GROUP_WRITE');
    requireTenantPermission(caller, 'ASSIGNMENT_WRITE');
    return withEtag(reply, await replaceAssignmentsOfGroup(ctx.db, caller, actorOf(request), ctx.tenant.id, request.params.groupId, request.body, request.headers['if-match']));
  });

  app.delete('/groups/:id', {
    schema: { tags, summary: 'Delete a group with its memberships and assignments (409 while it has subgroups)', params: IdParams, response: responses({ 204: NoContent }, [400, 401, 403, 404, 409, 412]) },
  }, async (request, reply) => {
    requireTenantPermission(callerOf(request), 'GROUP_WRITE');
    await deleteGroup(ctx.db, actorOf(request), request.params.id, request.headers['if-match']);
    return reply.code(204).send();
  });
};
