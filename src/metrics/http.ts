import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import type { Listener, Metrics } from './registry.js';

/**
 * Counts every answered request of a listener under its route pattern (`/v1/datasets/:id`), never
 * its raw path, so that the series stay as few as the routes. Add it before any route or plugin.
 */
export function countRequests(app: FastifyInstance, metrics: Metrics, listener: Listener) {
  app.addHook('onResponse', (request, reply, done) => {
    metrics.countRequest(listener, request.routeOptions.url, request.method, reply.statusCode, reply.elapsedTime);
    done();
  });
}

/**
 * GET /metrics in Prometheus's text format: open like /health/* unless a token is configured
 * (METRICS_TOKEN), then only with `Authorization: Bearer <token>`. Outside /v1 and the OpenAPI document.
 */
export function registerMetricsRoute(app: FastifyInstance, metrics: Metrics, token: string | null) {
  const expected = token === null ? null : digestOf(token);
  app.get('/metrics', { schema: { hide: true } }, async (request: FastifyRequest, reply: FastifyReply) => {
    if (expected && !presentsToken(request.headers.authorization, expected)) {
      reply.header('www-authenticate', 'Bearer realm="metrics"');
      throw new AppError('UNAUTHORIZED', 'GET /metrics needs the bearer token METRICS_TOKEN');
    }
    return reply.type(metrics.contentType).send(await metrics.text());
  });
}

// Both sides are hashed first, so the comparison takes the same time whatever the lengths.
const digestOf = (text: string) => createHash('sha256').update(text).digest();

function presentsToken(header: string | undefined, expected: Buffer): boolean {
  const match = header === undefined ? null : /^Bearer +(.+?) *$/i.exec(header);
  return match !== null && timingSafeEqual(digestOf(match[1]!), expected);
}
