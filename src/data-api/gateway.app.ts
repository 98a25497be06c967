import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { AppContext } from '../context.js';
import { baseServerOptions, installCommonPlumbing } from '../app.js';
import { AppError } from '../errors.js';
import { registerHealthRoutes } from '../http/health.js';

/**
 * The data API gateway (DATA_API_URL). Until datasets can publish named APIs, every payload path
 * answers 404, as an unpublished one will; the token check still runs first (the common plumbing
 * authenticates every /v1 request), so a caller without a valid token gets the gateway's 401.
 * Never listens (the entry or a test decides).
 */
export async function buildDataApiApp(ctx: AppContext, logger?: FastifyServerOptions['loggerInstance']): Promise<FastifyInstance> {
  const app = Fastify(baseServerOptions(ctx, logger));
  await installCommonPlumbing(app, ctx);

  registerHealthRoutes(app, ctx.db);

  const noPublishedApi = async () => {
    throw new AppError('NOT_FOUND', 'No published API at this path');
  };
  app.all('/v1/datasets/:id/:slug', noPublishedApi);
  app.all('/v1/datasets/:id/:slug/*', noPublishedApi);

  return app;
}
