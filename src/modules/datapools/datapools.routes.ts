import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import type { Caller } from '../../access/caller.js';
import { callerOf } from '../../http/authentication.js';
import { hasPermissionOn, mayReadDatapool, readableDatapools, requireTenantPermission } from '../../access/check-access.js';
import { accessDenied, notFound } from '../../errors.js';
import { PageOf } from '../../http/page.js';
import { IdParams, NoContent, responses } from '../../http/schemas.js';
import { created, withEtag } from '../../http/resource.js';
import { Assignment } from '../assignments/index.js';
import { Datapool, DatapoolInput, DatapoolListQuery, DatapoolPatch } from './datapools.schemas.js';
import { actorOf } from '../audit/index.js';
import { createDatapool, deleteDatapool, getDatapool, listDatapoolAssignments, listDatapools, updateDatapool } from './datapools.service.js';

const tags = ['Datapools'];
const WRITE_ERRORS = [400, 401, 403, 404, 409, 412, 413, 415];

/** Datapools are data objects: one the caller may not read does not exist for them (404, no existence leak). */
function requireReadable(caller: Caller, id: string): void {
  if (!mayReadDatapool(caller, id)) throw notFound('Datapool', id);
}

/** One the caller may read but not change answers 403. */
function requireWritable(caller: Caller, id: string): void {
  requireReadable(caller, id);
  if (!hasPermissionOn(caller, 'DATAPOOL_WRITE', { scopeType: 'DATAPOOL', id })) throw accessDenied('DATAPOOL_WRITE');
}

export const datapoolRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get('/datapools', {
    schema: {
      tags, summary: 'List the datapools the caller may read', querystring: DatapoolListQuery,
      response: responses({ 200: PageOf(Datapool, 'Datapool') }, [400, 401, 403]),
    },
  }, async (request) => listDatapools(ctx.db, request.query, readableDatapools(callerOf(request))));

  app.post('/datapools', {
    schema: { tags, summary: 'Create a datapool', body: DatapoolInput, response: responses({ 201: Datapool }, [400, 401, 403, 409, 413, 415]) },
  }, async (request, reply) => {
    const caller = callerOf(request);
    requireTenantPermission(caller, 'DATAPOOL_WRITE');
    return created(reply, ctx.config.api.baseUrl, '/v1/datapools', await createDatapool(ctx.db, caller, actorOf(request), request.body));
  });

  app.get('/datapools/:id', {
    schema: { tags, summary: 'Get a datapool by id', params: IdParams, response: responses({ 200: Datapool }, [400, 401, 403, 404]) },
  }, async (request, reply) => {
    const id = request.params.id;
    requireReadable(callerOf(request), id);
    return withEtag(reply, await getDatapool(ctx.db, id));
  });

  app.put('/datapools/:id', {
    schema: { tags, summary: 'Replace a datapool', params: IdParams, body: DatapoolInput, response: responses({ 200: Datapool }, WRITE_ERRORS) },
  }, async (request, reply) => {
    const id = request.params.id;
    const caller = callerOf(request);
    requireWritable(caller, id);
    return withEtag(reply, await updateDatapool(ctx.db, caller, actorOf(request), id, request.body, 'replace', request.headers['if-match']));
  });

  app.patch('/datapools/:id', {
    schema: { tags, summary: 'Partially update a datapool', params: IdParams, body: DatapoolPatch, response: responses({ 200: Datapool }, WRITE_ERRORS) },
  }, async (request, reply) => {
    const id = request.params.id;
    const caller = callerOf(request);
    requireWritable(caller, id);
    return withEtag(reply, await updateDatapool(ctx.db, caller, actorOf(request), id, request.body, 'patch', request.headers['if-match']));
  });

  app.delete('/datapools/:id', {
    schema: {
      tags, summary: 'Delete a datapool with its assignments (409 while it holds datasets)', params: IdParams,
      response: responses({ 204: NoContent }, [400, 401, 403, 404, 409, 412]),
    },
  }, async (request, reply) => {
    const id = request.params.id;
    requireWritable(callerOf(request), id);
    await deleteDatapool(ctx.db, actorOf(request), id, request.headers['if-match']);
    return reply.code(204).send();
  });

  app.get('/datapools/:id/assignments', {
    schema: {
      tags, summary: 'The assignments scoped to a datapool (plain array)', params: IdParams,
      response: responses({ 200: Type.Array(Assignment) }, [400, 401, 403, 404]),
    },
  }, async (request) => {
    const id = request.params.id;
    requireReadable(callerOf(request), id);
    return listDatapoolAssignments(ctx.db, id);
  });
};
