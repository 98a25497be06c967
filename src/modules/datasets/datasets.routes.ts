import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../../http/authentication.js';
import { PageOf } from '../../http/page.js';
import { IdParams, NoContent, responses } from '../../http/schemas.js';
import { created, withEtag } from '../../http/resource.js';
import { Assignment } from '../assignments/index.js';
import { actorOf } from '../audit/index.js';
import { Dataset, DatasetInput, DatasetListQuery, DatasetMetadataPatch, DatasetPatch, PublishedApi } from './datasets.schemas.js';
import {
  changeStatus, createDataset, datasetAssignments, deleteDataset, getDataset, listDatasets, publishedApisOf, updateDataset,
  updateDatasetMetadata, type DatasetsContext,
} from './datasets.service.js';

const tags = ['Datasets'];
const WRITE_ERRORS = [400, 401, 403, 404, 409, 412, 413, 415];

export const datasetRoutes: FastifyPluginAsyncTypebox<{ datasets: DatasetsContext; baseUrl: string }> = async (app, { datasets: ctx, baseUrl }) => {
  app.get('/datasets', {
    schema: { tags, summary: 'List the datasets the caller may read', querystring: DatasetListQuery, response: responses({ 200: PageOf(Dataset, 'Dataset') }, [400, 401, 403]) },
  }, async (request) => listDatasets(ctx, callerOf(request), request.query));

  app.post('/datasets', {
    schema: {
      tags, summary: 'Create a dataset (DRAFT; its CREATE saga provisions the storage)', body: DatasetInput,
      response: responses({ 201: Dataset }, [400, 401, 403, 409, 413, 415]),
    },
  }, async (request, reply) => created(reply, baseUrl, '/v1/datasets', await createDataset(ctx, callerOf(request), actorOf(request), request.body)));

  app.get('/datasets/:id', {
    schema: { tags, summary: 'Get a dataset by id', params: IdParams, response: responses({ 200: Dataset }, [400, 401, 403, 404]) },
  }, async (request, reply) => withEtag(reply, await getDataset(ctx, callerOf(request), request.params.id)));

  app.put('/datasets/:id', {
    schema: { tags, summary: 'Replace a DRAFT dataset', params: IdParams, body: DatasetInput, response: responses({ 200: Dataset }, WRITE_ERRORS) },
  }, async (request, reply) =>
    withEtag(reply, await updateDataset(ctx, callerOf(request), actorOf(request), request.params.id, request.body, 'replace', request.headers['if-match'])));

  app.patch('/datasets/:id', {
    schema: { tags, summary: 'Partially update a DRAFT dataset', params: IdParams, body: DatasetPatch, response: responses({ 200: Dataset }, WRITE_ERRORS) },
  }, async (request, reply) =>
    withEtag(reply, await updateDataset(ctx, callerOf(request), actorOf(request), request.params.id, request.body, 'patch', request.headers['if-match'])));

  app.delete('/datasets/:id', {
    schema: {
      tags, summary: 'Delete a dataset (at once when never provisioned; else by its DELETE saga)', params: IdParams,
      response: responses({ 204: NoContent }, [400, 401, 403, 404, 409, 412]),
    },
  }, async (request, reply) => {
    await deleteDataset(ctx, callerOf(request), actorOf(request), request.params.id, request.headers['if-match']);
    return reply.code(204).send();
  });

  app.get('/datasets/:id/apis', {
    schema: {
      tags, summary: 'The published named APIs with their previewUrl (empty unless AVAILABLE)', params: IdParams,
      response: responses({ 200: Type.Array(PublishedApi) }, [400, 401, 403, 404]),
    },
  }, async (request) => publishedApisOf(ctx, callerOf(request), request.params.id));

  app.get('/datasets/:id/assignments', {
    schema: { tags, summary: 'The assignments scoped to a dataset (plain array)', params: IdParams, response: responses({ 200: Type.Array(Assignment) }, [400, 401, 403, 404]) },
  }, async (request) => datasetAssignments(ctx, callerOf(request), request.params.id));

  for (const [path, operation, summary] of [
    ['ready/meta', 'readyMeta', 'Update the metadata of a READY dataset (merge semantics)'],
    ['released/meta', 'releasedMeta', 'Update the metadata of a READY or AVAILABLE dataset (merge semantics; PUT accepted for older clients)'],
  ] as const) {
    for (const method of ['PUT', 'PATCH'] as const) {
      app.route({
        method, url: `/datasets/:id/${path}`,
        schema: { tags, summary, params: IdParams, body: DatasetMetadataPatch, response: responses({ 200: Dataset }, [...WRITE_ERRORS, 422]) },
        handler: async (request, reply) =>
          withEtag(reply, await updateDatasetMetadata(ctx, callerOf(request), actorOf(request), request.params.id, request.body, operation, request.headers['if-match'])),
      });
    }
  }

  const VALIDATION_DESCRIPTION = 'Every problem is listed at once in a 422 VALIDATION_FAILED (fieldErrors): each pipeline\'s mappingRef must name a '
    + 'mapping of the dataset whose `fields` (target path → JSONata expression) and optional `filter` compile (one entry per fault on '
    + '`pipelines[i].mappingRef`, its message starting with the target path and giving the position: "fields.result: expected an expression '
    + 'at position 9"), its dataSourceIds must exist and its namedApiSlug must be one of the dataset\'s named APIs.';
  for (const [operation, status, summary] of [
    ['stage', 200, 'Stage a DRAFT dataset (validates it)'],
    ['unstage', 200, 'Return a READY dataset to DRAFT'],
    ['release', 202, 'Release a DRAFT or READY dataset (validates it; its RELEASE saga publishes the named APIs)'],
    ['unrelease', 202, 'Return an AVAILABLE dataset to DRAFT (its UNRELEASE saga withdraws the named APIs)'],
  ] as const) {
    const validates = operation === 'stage' || operation === 'release';
    app.post(`/datasets/:id/${operation}`, {
      schema: {
        tags, summary, params: IdParams, response: responses({ [status]: Dataset }, [400, 401, 403, 404, 409, 422]),
        ...(validates ? { description: VALIDATION_DESCRIPTION } : {}),
      },
    }, async (request, reply) => withEtag(reply.code(status), await changeStatus(ctx, callerOf(request), actorOf(request), request.params.id, operation)));
  }
};
