import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../../http/authentication.js';
import { PageOf } from '../../http/page.js';
import { NoContent, responses } from '../../http/schemas.js';
import { created, withEtag } from '../../http/resource.js';
import type { DatasetsContext } from '../datasets/index.js';
import { DatasetParams, Pipeline, PipelineInput, PipelineListQuery, PipelineParams, PipelinePatch, Rejection, RejectionListQuery } from './pipelines.schemas.js';
import { createPipeline, deletePipeline, getPipeline, listPipelines, listRejections, restartPipeline, updatePipeline } from './pipelines.service.js';

const tags = ['Pipelines'];
const WRITE_ERRORS = [400, 401, 403, 404, 409, 412, 413, 415];

export const pipelineRoutes: FastifyPluginAsyncTypebox<{ datasets: DatasetsContext; baseUrl: string; pipelinesChanged?: () => void }> = async (app, { datasets: ctx, baseUrl, pipelinesChanged = () => {} }) => {
  app.get('/datasets/:dataSetId/pipelines', {
    schema: {
      tags, summary: "List a dataset's pipelines", params: DatasetParams, querystring: PipelineListQuery,
      response: responses({ 200: PageOf(Pipeline, 'Pipeline') }, [400, 401, 403, 404]),
    },
  }, async (request) => listPipelines(ctx, callerOf(request), request.params.dataSetId, request.query));

  app.post('/datasets/:dataSetId/pipelines', {
    schema: {
      tags, summary: 'Create a pipeline of a DRAFT dataset', params: DatasetParams, body: PipelineInput,
      response: responses({ 201: Pipeline }, [400, 401, 403, 404, 409, 413, 415]),
    },
  }, async (request, reply) => {
    const { dataSetId } = request.params;
    return created(reply, baseUrl, `/v1/datasets/${dataSetId}/pipelines`, await createPipeline(ctx, callerOf(request), dataSetId, request.body));
  });

  app.get('/datasets/:dataSetId/pipelines/:id', {
    schema: { tags, summary: 'Get a pipeline by id', params: PipelineParams, response: responses({ 200: Pipeline }, [400, 401, 403, 404]) },
  }, async (request, reply) => withEtag(reply, await getPipeline(ctx, callerOf(request), request.params.dataSetId, request.params.id)));

  for (const [method, mode, summary, body] of [
    ['PUT', 'replace', 'Replace a pipeline of a DRAFT dataset', PipelineInput],
    ['PATCH', 'patch', 'Partially update a pipeline of a DRAFT dataset', PipelinePatch],
  ] as const) {
    app.route({
      method, url: '/datasets/:dataSetId/pipelines/:id',
      schema: { tags, summary, params: PipelineParams, body, response: responses({ 200: Pipeline }, WRITE_ERRORS) },
      handler: async (request, reply) => withEtag(reply, await updatePipeline(
        ctx, callerOf(request), request.params.dataSetId, request.params.id, request.body, mode, request.headers['if-match'],
      )),
    });
  }

  app.delete('/datasets/:dataSetId/pipelines/:id', {
    schema: { tags, summary: 'Delete a pipeline of a DRAFT dataset', params: PipelineParams, response: responses({ 204: NoContent }, [400, 401, 403, 404, 409, 412]) },
  }, async (request, reply) => {
    await deletePipeline(ctx, callerOf(request), request.params.dataSetId, request.params.id, request.headers['if-match']);
    return reply.code(204).send();
  });

  app.post('/datasets/:dataSetId/pipelines/:id/restart', {
    schema: {
      tags, summary: 'Restart a pipeline of an AVAILABLE dataset (counters from zero; mapping and data sources read anew)', params: PipelineParams,
      response: responses({ 202: Pipeline }, [400, 401, 403, 404, 409]),
    },
  }, async (request, reply) => reply.code(202).send(await restartPipeline(ctx, callerOf(request), request.params.dataSetId, request.params.id, pipelinesChanged)));

  app.get('/datasets/:dataSetId/pipelines/:id/rejections', {
    schema: {
      tags, summary: "A pipeline's rejected records, newest first (kept 7 days or 10,000 per pipeline)", params: PipelineParams, querystring: RejectionListQuery,
      response: responses({ 200: PageOf(Rejection, 'PipelineRejection') }, [400, 401, 403, 404]),
    },
  }, async (request) => listRejections(ctx, callerOf(request), request.params.dataSetId, request.params.id, request.query));
};
