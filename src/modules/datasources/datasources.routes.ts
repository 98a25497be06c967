import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../../http/authentication.js';
import { actorOf } from '../audit/index.js';
import { PageOf } from '../../http/page.js';
import { IdParams, NoContent, responses } from '../../http/schemas.js';
import { created, withEtag } from '../../http/resource.js';
import { Assignment } from '../assignments/index.js';
import type { DatasetsContext } from '../datasets/index.js';
import {
  DatasetParams, DataSource, DataSourceInput, DataSourceListQuery, DataSourcePatch, DataSourceReleasedMetaPatch, UsableDataSourceQuery,
} from './datasources.schemas.js';
import {
  changeSourceStatus, createSource, deleteSource, getSource, listSources, listUsableSources, sourceAssignments, updateReleasedSource, updateSource, type SourcesContext,
} from './datasources.service.js';

const tags = ['Data sources'];
const WRITE_ERRORS = [400, 401, 403, 404, 409, 412, 413, 415];

export const dataSourceRoutes: FastifyPluginAsyncTypebox<{ sources: SourcesContext; datasets: DatasetsContext; baseUrl: string }> = async (app, { sources: ctx, datasets, baseUrl }) => {
  app.get('/datasources', {
    schema: { tags, summary: 'List the data sources the caller may read', querystring: DataSourceListQuery, response: responses({ 200: PageOf(DataSource, 'DataSource') }, [400, 401, 403]) },
  }, async (request) => listSources(ctx, callerOf(request), request.query));

  app.get('/datasets/:dataSetId/usable-datasources', {
    schema: {
      tags, params: DatasetParams, querystring: UsableDataSourceQuery, response: responses({ 200: PageOf(DataSource, 'DataSource') }, [400, 401, 403, 404]),
      summary: 'The data sources a pipeline of this dataset may read: AVAILABLE, scope ALL or SPECIFIC naming its datapool, readable by the caller',
    },
  }, async (request) => listUsableSources(ctx, datasets, callerOf(request), request.params.dataSetId, request.query));

  app.post('/datasources', {
    schema: { tags, summary: 'Create a data source (DRAFT)', body: DataSourceInput, response: responses({ 201: DataSource }, [400, 401, 403, 409, 413, 415]) },
  }, async (request, reply) => created(reply, baseUrl, '/v1/datasources', await createSource(ctx, callerOf(request), actorOf(request), request.body)));

  app.get('/datasources/:id', {
    schema: { tags, summary: 'Get a data source by id', params: IdParams, response: responses({ 200: DataSource }, [400, 401, 403, 404]) },
  }, async (request, reply) => withEtag(reply, await getSource(ctx, callerOf(request), request.params.id)));

  app.put('/datasources/:id', {
    schema: { tags, summary: 'Replace a DRAFT data source (configuration whole)', params: IdParams, body: DataSourceInput, response: responses({ 200: DataSource }, WRITE_ERRORS) },
  }, async (request, reply) => withEtag(reply, await updateSource(ctx, callerOf(request), actorOf(request), request.params.id, request.body, 'replace', request.headers['if-match'])));

  app.patch('/datasources/:id', {
    schema: { tags, summary: 'Partially update a DRAFT data source (configuration member by member)', params: IdParams, body: DataSourcePatch, response: responses({ 200: DataSource }, WRITE_ERRORS) },
  }, async (request, reply) => withEtag(reply, await updateSource(ctx, callerOf(request), actorOf(request), request.params.id, request.body, 'patch', request.headers['if-match'])));

  app.delete('/datasources/:id', {
    schema: { tags, summary: 'Delete a DRAFT data source (409 while a pipeline reads from it)', params: IdParams, response: responses({ 204: NoContent }, [400, 401, 403, 404, 409, 412]) },
  }, async (request, reply) => {
    await deleteSource(ctx, callerOf(request), actorOf(request), request.params.id, request.headers['if-match']);
    return reply.code(204).send();
  });

  app.get('/datasources/:id/assignments', {
    schema: { tags, summary: 'The assignments scoped to a data source (plain array)', params: IdParams, response: responses({ 200: Type.Array(Assignment) }, [400, 401, 403, 404]) },
  }, async (request) => sourceAssignments(ctx, callerOf(request), request.params.id));

  for (const operation of ['release', 'unrelease'] as const) {
    app.post(`/datasources/:id/${operation}`, {
      schema: {
        tags, params: IdParams, response: responses({ 200: DataSource }, [400, 401, 403, 404, 409]),
        summary: operation === 'release' ? 'Release a DRAFT data source (checks what a draft may leave out, every problem at once)' : 'Return an AVAILABLE data source to DRAFT',
      },
    }, async (request, reply) => withEtag(reply, await changeSourceStatus(ctx, callerOf(request), request.params.id, operation)));
  }

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method, url: '/datasources/:id/released/meta',
      schema: { tags, summary: 'Update name and description of an AVAILABLE data source (merge semantics; PUT accepted)', params: IdParams, body: DataSourceReleasedMetaPatch, response: responses({ 200: DataSource }, WRITE_ERRORS) },
      handler: async (request, reply) => withEtag(reply, await updateReleasedSource(ctx, callerOf(request), request.params.id, request.body, request.headers['if-match'])),
    });
  }
};
