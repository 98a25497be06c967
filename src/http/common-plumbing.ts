import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { Config } from '../config.js';
import type { CallerCache } from '../access/caller-cache.js';
import type { TokenVerifier } from './token-verifier.js';
import { validatorCompiler } from './validation.js';
import { installProblemHandlers } from './problems.js';
import { installJsonBodies } from './json-body.js';
import { answerClientError, answerFrameworkError, MAX_PARAM_LENGTH } from './framework-errors.js';
import { authentication, type AuthenticationOptions } from './authentication.js';
import { requestIdOf } from './request-id.js';
import { proxyTrustOf } from './trusted-proxies.js';
import { accessLogOptions } from './access-log.js';

/**
 * What every listener of the process shares (the management API, the data API gateway, a worker's
 * probes): Fastify's options and the plumbing installed before any route. Here rather than in
 * app.ts, so that the gateway does not import the management API to get them.
 */

export const BODY_LIMIT_BYTES = 1024 * 1024;

/** Fastify options shared by the management API and the data API gateway. */
export function baseServerOptions(ctx: { config: Config }, logger: FastifyServerOptions['loggerInstance'] | undefined): FastifyServerOptions {
  return {
    ...(logger ? { loggerInstance: logger } : { logger: false }),
    ...accessLogOptions(),
    bodyLimit: BODY_LIMIT_BYTES,
    genReqId: requestIdOf,
    // Behind trusted proxies (TRUST_PROXY) request.ip is the client they forwarded, not the proxy.
    trustProxy: proxyTrustOf(ctx.config.trustProxy) ?? false,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
    ajv: { customOptions: { removeAdditional: false } },
  };
}

/** Installs what every listener shares: request ids, JSON-only bodies, problem answers, token checks. */
export async function installCommonPlumbing(
  app: FastifyInstance, ctx: { config: Config; verifier: TokenVerifier; callers: CallerCache }, options: Pick<AuthenticationOptions, 'mayBeAnonymous' | 'acceptPersonalAccessTokens'> = {},
) {
  app.setValidatorCompiler(validatorCompiler);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  // A client that gives up (a closed tab, a timeout on its side) is routine, not a service error.
  app.addHook('onRequestAbort', async (request) => {
    request.log.info('client closed the connection before the answer');
  });
  // The management API takes the data API's JSON depth too: no body of either needs more.
  installJsonBodies(app, { maxDepth: ctx.config.dataApi.limits.jsonMaxDepth });
  installProblemHandlers(app);
  await app.register(authentication, { verifier: ctx.verifier, callers: ctx.callers, ...options });
}
