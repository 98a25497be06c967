import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../../http/authentication.js';
import { actorOf } from '../audit/index.js';
import { PageOf } from '../../http/page.js';
import { IdParams, NoContent, responses } from '../../http/schemas.js';
import { created, withEtag } from '../../http/resource.js';
import { Assignment } from '../assignments/index.js';
import {
  DataStructure, DataStructureInput, DataStructureListQuery, DataStructurePatch, DataStructureVersion, ReleasedMetaPatch, StructureParams,
  VersionInput, VersionParams, VersionPatch, VersionReleasedMetaPatch,
} from './datastructures.schemas.js';
import {
  changeStructureStatus, createStructure, deleteStructure, getStructure, listStructures, structureAssignments, updateReleasedStructure, updateStructure,
  type StructuresContext,
} from './datastructures.service.js';
import { changeVersionStatus, createVersion, deleteVersion, getVersion, updateReleasedVersion, updateVersion } from './versions.service.js';

const tags = ['Data structures'];
const WRITE_ERRORS = [400, 401, 403, 404, 409, 412, 413, 415];
const ACTION_ERRORS = [400, 401, 403, 404, 409];

export const dataStructureRoutes: FastifyPluginAsyncTypebox<{ structures: StructuresContext; baseUrl: string }> = async (app, { structures: ctx, baseUrl }) => {
  app.get('/datastructures', {
    schema: { tags, summary: 'List the data structures the caller may read', querystring: DataStructureListQuery, response: responses({ 200: PageOf(DataStructure, 'DataStructure') }, [400, 401, 403]) },
  }, async (request) => listStructures(ctx, callerOf(request), request.query));

  app.post('/datastructures', {
    schema: { tags, summary: 'Create a data structure (DRAFT)', body: DataStructureInput, response: responses({ 201: DataStructure }, [400, 401, 403, 409, 413, 415]) },
  }, async (request, reply) => created(reply, baseUrl, '/v1/datastructures', await createStructure(ctx, callerOf(request), actorOf(request), request.body)));

  app.get('/datastructures/:id', {
    schema: { tags, summary: 'Get a data structure by id', params: IdParams, response: responses({ 200: DataStructure }, [400, 401, 403, 404]) },
  }, async (request, reply) => withEtag(reply, await getStructure(ctx, callerOf(request), request.params.id)));

  app.put('/datastructures/:id', {
    schema: { tags, summary: 'Replace a DRAFT data structure', params: IdParams, body: DataStructureInput, response: responses({ 200: DataStructure }, WRITE_ERRORS) },
  }, async (request, reply) => withEtag(reply, await updateStructure(ctx, callerOf(request), actorOf(request), request.params.id, request.body, 'replace', request.headers['if-match'])));

  app.patch('/datastructures/:id', {
    schema: { tags, summary: 'Partially update a DRAFT data structure', params: IdParams, body: DataStructurePatch, response: responses({ 200: DataStructure }, WRITE_ERRORS) },
  }, async (request, reply) => withEtag(reply, await updateStructure(ctx, callerOf(request), actorOf(request), request.params.id, request.body, 'patch', request.headers['if-match'])));

  app.delete('/datastructures/:id', {
    schema: {
      tags, summary: 'Delete a DRAFT data structure with its versions (409 while a data source references one)', params: IdParams,
      response: responses({ 204: NoContent }, [400, 401, 403, 404, 409, 412]),
    },
  }, async (request, reply) => {
    await deleteStructure(ctx, callerOf(request), actorOf(request), request.params.id, request.headers['if-match']);
    return reply.code(204).send();
  });

  app.get('/datastructures/:id/assignments', {
    schema: { tags, summary: 'The assignments scoped to a data structure (plain array)', params: IdParams, response: responses({ 200: Type.Array(Assignment) }, [400, 401, 403, 404]) },
  }, async (request) => structureAssignments(ctx, callerOf(request), request.params.id));

  for (const operation of ['release', 'unrelease'] as const) {
    app.post(`/datastructures/:id/${operation}`, {
      schema: {
        tags, params: IdParams, response: responses({ 200: DataStructure }, ACTION_ERRORS),
        summary: operation === 'release' ? 'Release a DRAFT data structure (needs one AVAILABLE version)' : 'Return an AVAILABLE data structure to DRAFT (409 while referenced)',
      },
    }, async (request, reply) => withEtag(reply, await changeStructureStatus(ctx, callerOf(request), request.params.id, operation)));
  }

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method, url: '/datastructures/:id/released/meta',
      schema: { tags, summary: 'Update name and description of an AVAILABLE data structure (merge semantics; PUT accepted)', params: IdParams, body: ReleasedMetaPatch, response: responses({ 200: DataStructure }, WRITE_ERRORS) },
      handler: async (request, reply) => withEtag(reply, await updateReleasedStructure(ctx, callerOf(request), request.params.id, request.body, request.headers['if-match'])),
    });
  }

  app.post('/datastructures/:dataStructureId/versions', {
    schema: { tags, summary: 'Create a version of a data structure (DRAFT)', params: StructureParams, body: VersionInput, response: responses({ 201: DataStructureVersion }, [400, 401, 403, 404, 409, 413, 415]) },
  }, async (request, reply) => {
    const { dataStructureId } = request.params;
    return created(reply, baseUrl, `/v1/datastructures/${dataStructureId}/versions`, await createVersion(ctx, callerOf(request), dataStructureId, request.body));
  });

  app.get('/datastructures/:dataStructureId/versions/:versionId', {
    schema: { tags, summary: 'Get a version of a data structure', params: VersionParams, response: responses({ 200: DataStructureVersion }, [400, 401, 403, 404]) },
  }, async (request, reply) => withEtag(reply, await getVersion(ctx, callerOf(request), request.params.dataStructureId, request.params.versionId)));

  app.put('/datastructures/:dataStructureId/versions/:versionId', {
    schema: { tags, summary: 'Replace a DRAFT version', params: VersionParams, body: VersionInput, response: responses({ 200: DataStructureVersion }, WRITE_ERRORS) },
  }, async (request, reply) => withEtag(reply, await updateVersion(ctx, callerOf(request), request.params.dataStructureId, request.params.versionId, request.body, 'replace', request.headers['if-match'])));

  app.patch('/datastructures/:dataStructureId/versions/:versionId', {
    schema: { tags, summary: 'Partially update a DRAFT version', params: VersionParams, body: VersionPatch, response: responses({ 200: DataStructureVersion }, WRITE_ERRORS) },
  }, async (request, reply) => withEtag(reply, await updateVersion(ctx, callerOf(request), request.params.dataStructureId, request.params.versionId, request.body, 'patch', request.headers['if-match'])));

  app.delete('/datastructures/:dataStructureId/versions/:versionId', {
    schema: { tags, summary: 'Delete a DRAFT version (409 while a data source references it)', params: VersionParams, response: responses({ 204: NoContent }, [400, 401, 403, 404, 409, 412]) },
  }, async (request, reply) => {
    await deleteVersion(ctx, callerOf(request), request.params.dataStructureId, request.params.versionId, request.headers['if-match']);
    return reply.code(204).send();
  });

  for (const operation of ['release', 'unrelease'] as const) {
    app.post(`/datastructures/:dataStructureId/versions/:versionId/${operation}`, {
      schema: {
        tags, params: VersionParams, response: responses({ 200: DataStructureVersion }, ACTION_ERRORS),
        summary: operation === 'release' ? 'Release a DRAFT version (needs its model)' : 'Return an AVAILABLE version to DRAFT (409 while referenced)',
      },
    }, async (request, reply) => withEtag(reply, await changeVersionStatus(ctx, callerOf(request), request.params.dataStructureId, request.params.versionId, operation)));
  }

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method, url: '/datastructures/:dataStructureId/versions/:versionId/released/meta',
      schema: { tags, summary: 'Update description and modelName of an AVAILABLE version (merge semantics; PUT accepted)', params: VersionParams, body: VersionReleasedMetaPatch, response: responses({ 200: DataStructureVersion }, WRITE_ERRORS) },
      handler: async (request, reply) =>
        withEtag(reply, await updateReleasedVersion(ctx, callerOf(request), request.params.dataStructureId, request.params.versionId, request.body, request.headers['if-match'])),
    });
  }
};
