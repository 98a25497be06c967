import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { AppContext } from './context.js';
import { baseServerOptions } from './http/common-plumbing.js';
import { installProblemHandlers } from './http/problems.js';
import { registerHealthRoutes } from './http/health.js';
import { registerMetricsRoute } from './metrics/http.js';
import { runBackgroundWork } from './jobs/background-work.js';
import { renderCommits } from './data-api/mqtt/render-commits.js';

/**
 * A `worker` process's only listener (on PORT): `/health/live`, `/health/ready` and `/metrics`, for
 * its probes and its scraper. The process itself runs the sagas and the pipelines, so that they
 * scale apart from the replicas that answer requests. Never listens (the entry decides).
 */
export async function buildWorkerApp(ctx: AppContext, logger?: FastifyServerOptions['loggerInstance'], serverFactory?: FastifyServerOptions['serverFactory']): Promise<FastifyInstance> {
  const app = Fastify({ ...baseServerOptions(ctx, logger), ...(serverFactory ? { serverFactory } : {}) });
  installProblemHandlers(app);
  registerHealthRoutes(app, ctx.db);
  registerMetricsRoute(app, ctx.metrics, ctx.config.metrics.token);
  runBackgroundWork(app, ctx);
  // Its pipelines write SensorThings: their changes are rendered here for the brokers of the gateways.
  renderCommits(app, ctx, 'ownRoutes');
  return app;
}
