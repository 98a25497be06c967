import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../../http/authentication.js';
import { PageOf } from '../../http/page.js';
import { NoContent, responses } from '../../http/schemas.js';
import { created, withEtag } from '../../http/resource.js';
import type { DatasetsContext } from '../datasets/index.js';
import { DatasetParams, Style, StyleInput, StyleListQuery, StyleParams, StylePatch } from './styles.schemas.js';
import { createStyle, deleteStyle, getStyle, listStyles, updateStyle } from './styles.service.js';

const tags = ['Styles'];
const WRITE_ERRORS = [400, 401, 403, 404, 409, 412, 413, 415];

export const styleRoutes: FastifyPluginAsyncTypebox<{ datasets: DatasetsContext; baseUrl: string }> = async (app, { datasets: ctx, baseUrl }) => {
  app.get('/datasets/:dataSetId/styles', {
    schema: {
      tags, summary: "List a dataset's styles", params: DatasetParams, querystring: StyleListQuery,
      response: responses({ 200: PageOf(Style, 'Style') }, [400, 401, 403, 404]),
    },
  }, async (request) => listStyles(ctx, callerOf(request), request.params.dataSetId, request.query));

  app.post('/datasets/:dataSetId/styles', {
    schema: {
      tags, summary: 'Create a style (an SLD document) of a DRAFT dataset', params: DatasetParams, body: StyleInput,
      response: responses({ 201: Style }, [400, 401, 403, 404, 409, 413, 415]),
    },
  }, async (request, reply) => {
    const { dataSetId } = request.params;
    return created(reply, baseUrl, `/v1/datasets/${dataSetId}/styles`, await createStyle(ctx, callerOf(request), dataSetId, request.body));
  });

  app.get('/datasets/:dataSetId/styles/:id', {
    schema: { tags, summary: 'Get a style by id', params: StyleParams, response: responses({ 200: Style }, [400, 401, 403, 404]) },
  }, async (request, reply) => withEtag(reply, await getStyle(ctx, callerOf(request), request.params.dataSetId, request.params.id)));

  for (const [method, summary, body] of [
    ['PUT', 'Replace a style of a DRAFT dataset', StyleInput],
    ['PATCH', 'Partially update a style of a DRAFT dataset', StylePatch],
  ] as const) {
    app.route({
      method, url: '/datasets/:dataSetId/styles/:id',
      schema: { tags, summary, params: StyleParams, body, response: responses({ 200: Style }, WRITE_ERRORS) },
      handler: async (request, reply) =>
        withEtag(reply, await updateStyle(ctx, callerOf(request), request.params.dataSetId, request.params.id, request.body, request.headers['if-match'])),
    });
  }

  app.delete('/datasets/:dataSetId/styles/:id', {
    schema: { tags, summary: 'Delete a style of a DRAFT dataset', params: StyleParams, response: responses({ 204: NoContent }, [400, 401, 403, 404, 409, 412]) },
  }, async (request, reply) => {
    await deleteStyle(ctx, callerOf(request), request.params.dataSetId, request.params.id, request.headers['if-match']);
    return reply.code(204).send();
  });
};
