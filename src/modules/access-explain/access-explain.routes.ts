import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { callerOf } from '../../http/authentication.js';
import { IdParams, responses } from '../../http/schemas.js';
import { AccessExplanation, AccessExplanationQuery } from './access-explain.schemas.js';
import { explainDatasetAccess } from './access-explain.service.js';

export const accessExplainRoutes: FastifyPluginAsyncTypebox<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get('/datasets/:id/access', {
    schema: {
      tags: ['Datasets'],
      summary: "Explain a user's access to a dataset: every permission held on it and every assignment granting it",
      description: 'Without `userId`, the caller. Another user needs ASSIGNMENT_READ on a scope covering the dataset; one\'s own access needs only reading the dataset.',
      params: IdParams,
      querystring: AccessExplanationQuery,
      response: responses({ 200: AccessExplanation }, [400, 401, 403, 404]),
    },
  }, async (request) => explainDatasetAccess(ctx.db, callerOf(request), request.params.id, request.query.userId));
};
