import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { callerOf } from '../../http/authentication.js';
import { requireTenantPermission } from '../../access/check-access.js';
import { PageOf } from '../../http/page.js';
import { IdParams, NoContent, responses } from '../../http/schemas.js';
import { created, withEtag } from '../../http/resource.js';
import { CurrentUser, User, UserGroupsInput, UserInput, UserListQuery, UserParams, UserPatch } from './users.schemas.js';
import { actorOf } from '../audit/index.js';
import { createUser, currentUserOf, deleteUser, getUser, listUsers, replaceGroupsOfUser, updateUser } from './users.service.js';

const tags = ['Users'];
const WRITE_ERRORS = [400, 401, 403, 404, 409, 412, 413, 415];

export const userRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get('/users', {
    schema: { tags, summary: 'List all users', querystring: UserListQuery, response: responses({ 200: PageOf(User, 'User') }, [400, 401, 403]) },
  }, async (request) => {
    requireTenantPermission(callerOf(request), 'USER_READ');
    return listUsers(ctx.db, request.query);
  });

  app.post('/users', {
    schema: { tags, summary: 'Create a user', body: UserInput, response: responses({ 201: User }, [400, 401, 403, 409, 413, 415]) },
  }, async (request, reply) => {
    const caller = callerOf(request);
    requireTenantPermission(caller, 'USER_WRITE');
    return created(reply, ctx.config.api.baseUrl, '/v1/users', await createUser(ctx.db, caller, actorOf(request), request.body));
  });

  // A static path: the router matches it before /users/:id, whatever the order of registration.
  app.get('/users/me', {
    schema: {
      tags, summary: 'Get the current user: profile and what they hold per scope (needs only a valid token)',
      description: 'A valid token that names no user of the service (neither by `sub` nor by email) answers 200 with `id` null, the token\'s names and no assignments, '
        + 'and the header `X-Caller-Unknown` (as every /v1 answer to such a token): an administrator must create the user (`POST /v1/users`) before it holds anything.',
      response: responses({ 200: CurrentUser }, [400, 401, 403]),
    },
  }, async (request, reply) => withEtag(reply, currentUserOf(callerOf(request))));

  app.get('/users/:id', {
    schema: { tags, summary: 'Get a user by id', params: IdParams, response: responses({ 200: User }, [400, 401, 403, 404]) },
  }, async (request, reply) => {
    requireTenantPermission(callerOf(request), 'USER_READ');
    return withEtag(reply, await getUser(ctx.db, request.params.id));
  });

  app.put('/users/:id', {
    schema: { tags, summary: 'Replace a user', params: IdParams, body: UserInput, response: responses({ 200: User }, WRITE_ERRORS) },
  }, async (request, reply) => {
    const caller = callerOf(request);
    requireTenantPermission(caller, 'USER_WRITE');
    return withEtag(reply, await updateUser(ctx.db, caller, actorOf(request), request.params.id, request.body, 'replace', request.headers['if-match']));
  });

  app.patch('/users/:id', {
    schema: { tags, summary: 'Partially update a user', params: IdParams, body: UserPatch, response: responses({ 200: User }, WRITE_ERRORS) },
  }, async (request, reply) => {
    const caller = callerOf(request);
    requireTenantPermission(caller, 'USER_WRITE');
    return withEtag(reply, await updateUser(ctx.db, caller, actorOf(request), request.params.id, request.body, 'patch', request.headers['if-match']));
  });

  app.put('/users/:userId/groups', {
    schema: {
      tags, summary: "Replace the user's group memberships (in one transaction)",
      params: UserParams, body: UserGroupsInput, response: responses({ 200: User }, [400, 401, 403, 404, 412, 413, 415]),
    },
  }, async (request, reply) => {
    const caller = callerOf(request);
    requireTenantPermission(caller, 'USER_WRITE');
    return withEtag(reply, await replaceGroupsOfUser(ctx.db, caller, actorOf(request), request.params.userId, request.body, request.headers['if-match']));
  });

  app.delete('/users/:id', {
    schema: {
      tags, summary: 'Delete a user with their memberships (groups and datapools naming them as contact keep existing)',
      params: IdParams, response: responses({ 204: NoContent }, [400, 401, 403, 404, 412]),
    },
  }, async (request, reply) => {
    requireTenantPermission(callerOf(request), 'USER_WRITE');
    await deleteUser(ctx.db, actorOf(request), request.params.id, request.headers['if-match']);
    return reply.code(204).send();
  });
};
