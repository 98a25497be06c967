import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../../http/authentication.js';
import { NoContent, responses } from '../../http/schemas.js';
import type { DatasetsContext } from '../datasets/index.js';
import {
  DatasetParams, MappingCreateInput, MappingDeleteQuery, MappingFetchAnswer, MappingFetchQuery, MappingPins, MappingVersionInput,
} from './mappings.schemas.js';
import { createMapping, deleteMapping, fetchMappings, versionMapping } from './mappings.service.js';
import type { MappingReferrer } from './references.js';

const tags = ['Mappings'];

/** `referrers`: what refers to mappings (pipelines), registered in app.ts. */
export const mappingRoutes: FastifyPluginAsyncTypebox<{ datasets: DatasetsContext; referrers: readonly MappingReferrer[] }> = async (app, { datasets: ctx, referrers }) => {
  app.get('/datasets/:dataSetId/mappings', {
    schema: {
      tags, summary: "List the dataset's mappings (without urn), or fetch a mapping's document (with a logical or versioned urn)",
      params: DatasetParams, querystring: MappingFetchQuery, response: responses({ 200: MappingFetchAnswer }, [400, 401, 403, 404]),
    },
  }, async (request) => fetchMappings(ctx, callerOf(request), request.params.dataSetId, request.query.urn));

  app.post('/datasets/:dataSetId/mappings', {
    schema: {
      tags, summary: 'Create a mapping (version 1) from a mapping document; answers its URN pins', params: DatasetParams, body: MappingCreateInput,
      response: responses({ 200: MappingPins }, [400, 401, 403, 404, 409, 413, 415]),
    },
  }, async (request) => createMapping(ctx, callerOf(request), request.params.dataSetId, request.body));

  app.put('/datasets/:dataSetId/mappings', {
    schema: {
      tags, summary: 'Version a mapping: the document (carrying logicalUrn) becomes version n + 1; answers its URN pins', params: DatasetParams,
      body: MappingVersionInput, response: responses({ 200: MappingPins }, [400, 401, 403, 404, 409, 413, 415]),
    },
  }, async (request) => versionMapping(ctx, callerOf(request), request.params.dataSetId, request.body));

  app.delete('/datasets/:dataSetId/mappings', {
    schema: {
      tags, summary: 'Delete a mapping (logical urn: every version) or one version (versioned urn); 409 while a pipeline refers to it',
      params: DatasetParams, querystring: MappingDeleteQuery, response: responses({ 204: NoContent }, [400, 401, 403, 404, 409]),
    },
  }, async (request, reply) => {
    await deleteMapping(ctx, referrers, callerOf(request), request.params.dataSetId, request.query.urn);
    return reply.code(204).send();
  });
};
