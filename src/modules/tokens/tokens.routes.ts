import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { callerOf } from '../../http/authentication.js';
import { requireTenantPermission } from '../../access/check-access.js';
import { PageOf } from '../../http/page.js';
import { IdParams, NoContent, responses } from '../../http/schemas.js';
import { actorOf } from '../audit/index.js';
import {
  CreatedPersonalAccessToken, PersonalAccessToken, PersonalAccessTokenInput, PersonalAccessTokenListQuery, UserTokenParams, UserTokensParams,
} from './tokens.schemas.js';
import { createToken, deleteToken, getToken, listOwnTokens, listTokensOfUser } from './tokens.service.js';

const tags = ['Personal access tokens'];
const USE = 'Accepted on the data API only (OWS, STA, MQTT): as `Authorization: Bearer pat_…`, as the password of HTTP Basic, or as the MQTT password (any user name).';

/**
 * Personal access tokens of the caller (`/users/me/tokens`) and, for administrators holding
 * USER_WRITE on the tenant, of any user. Static `me` paths win over `:userId` in the router.
 */
export const tokenRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.post('/users/me/tokens', {
    schema: {
      tags, summary: 'Create a personal access token for the current user (the secret is in this answer only)',
      description: `${USE} The token acts with its user's rights at the time of each request, narrowed to \`datasetIds\` when given. A caller whose token names no user of this service, or an inactive one, gets 403.`,
      body: PersonalAccessTokenInput, response: responses({ 201: CreatedPersonalAccessToken }, [400, 401, 403, 413, 415]),
    },
  }, async (request, reply) => {
    const token = await createToken(ctx.db, callerOf(request), actorOf(request), request.body);
    reply.code(201).header('location', `${ctx.config.api.baseUrl}/v1/users/me/tokens/${token.id}`);
    return token;
  });

  app.get('/users/me/tokens', {
    schema: {
      tags, summary: "List the current user's personal access tokens (never their secrets)",
      querystring: PersonalAccessTokenListQuery, response: responses({ 200: PageOf(PersonalAccessToken, 'PersonalAccessToken') }, [400, 401, 403]),
    },
  }, async (request) => listOwnTokens(ctx.db, callerOf(request), request.query));

  app.get('/users/me/tokens/:id', {
    schema: {
      tags, summary: "Get one of the current user's personal access tokens (never its secret)",
      params: IdParams, response: responses({ 200: PersonalAccessToken }, [400, 401, 403, 404]),
    },
  }, async (request) => getToken(ctx.db, callerOf(request).profile?.userId ?? null, request.params.id));

  app.delete('/users/me/tokens/:id', {
    schema: {
      tags, summary: "Delete one of the current user's personal access tokens (refused everywhere within a second)",
      params: IdParams, response: responses({ 204: NoContent }, [400, 401, 403, 404]),
    },
  }, async (request, reply) => {
    const caller = callerOf(request);
    await deleteToken(ctx.db, actorOf(request), caller.profile?.userId ?? null, request.params.id);
    return reply.code(204).send();
  });

  app.get('/users/:userId/tokens', {
    schema: {
      tags, summary: "List a user's personal access tokens (needs USER_WRITE at TENANT scope)",
      params: UserTokensParams, querystring: PersonalAccessTokenListQuery,
      response: responses({ 200: PageOf(PersonalAccessToken, 'PersonalAccessToken') }, [400, 401, 403, 404]),
    },
  }, async (request) => {
    requireTenantPermission(callerOf(request), 'USER_WRITE');
    return listTokensOfUser(ctx.db, request.params.userId, request.query);
  });

  app.get('/users/:userId/tokens/:id', {
    schema: {
      tags, summary: "Get a user's personal access token (needs USER_WRITE at TENANT scope)",
      params: UserTokenParams, response: responses({ 200: PersonalAccessToken }, [400, 401, 403, 404]),
    },
  }, async (request) => {
    requireTenantPermission(callerOf(request), 'USER_WRITE');
    return getToken(ctx.db, request.params.userId, request.params.id);
  });

  app.delete('/users/:userId/tokens/:id', {
    schema: {
      tags, summary: "Delete a user's personal access token (needs USER_WRITE at TENANT scope)",
      params: UserTokenParams, response: responses({ 204: NoContent }, [400, 401, 403, 404]),
    },
  }, async (request, reply) => {
    requireTenantPermission(callerOf(request), 'USER_WRITE');
    await deleteToken(ctx.db, actorOf(request), request.params.userId, request.params.id);
    return reply.code(204).send();
  });
};
