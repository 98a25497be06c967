import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { callerOf } from '../../http/authentication.js';
import { requireTenantPermission } from '../../access/check-access.js';
import { PageOf } from '../../http/page.js';
import { IdParams, NoContent, responses } from '../../http/schemas.js';
import { created, withEtag } from '../../http/resource.js';
import { Assignment, AssignmentInput, AssignmentListQuery } from './assignments.schemas.js';
import { createAssignment, deleteAssignment, getAssignment, listAssignments } from './assignments.service.js';
import { actorOf } from '../audit/index.js';

const tags = ['Assignments'];

export const assignmentRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get('/assignments', {
    schema: { tags, summary: 'List all assignments', querystring: AssignmentListQuery, response: responses({ 200: PageOf(Assignment, 'Assignment') }, [400, 401, 403]) },
  }, async (request) => {
    requireTenantPermission(callerOf(request), 'ASSIGNMENT_READ');
    return listAssignments(ctx.db, request.query);
  });

  app.post('/assignments', {
    schema: { tags, summary: 'Create an assignment', body: AssignmentInput, response: responses({ 201: Assignment }, [400, 401, 403, 409, 413, 415]) },
  }, async (request, reply) => {
    const caller = callerOf(request);
    requireTenantPermission(caller, 'ASSIGNMENT_WRITE');
    return created(reply, ctx.config.api.baseUrl, '/v1/assignments', await createAssignment(ctx.db, caller, actorOf(request), ctx.tenant.id, request.body));
  });

  app.get('/assignments/:id', {
    schema: { tags, summary: 'Get an assignment by id', params: IdParams, response: responses({ 200: Assignment }, [400, 401, 403, 404]) },
  }, async (request, reply) => {
    requireTenantPermission(callerOf(request), 'ASSIGNMENT_READ');
    return withEtag(reply, await getAssignment(ctx.db, request.params.id));
  });

  app.delete('/assignments/:id', {
    schema: { tags, summary: 'Delete an assignment', params: IdParams, response: responses({ 204: NoContent }, [400, 401, 403, 404, 409, 412]) },
  }, async (request, reply) => {
    requireTenantPermission(callerOf(request), 'ASSIGNMENT_WRITE');
    await deleteAssignment(ctx.db, actorOf(request), request.params.id, request.headers['if-match']);
    return reply.code(204).send();
  });
};
