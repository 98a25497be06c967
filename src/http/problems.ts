import { randomUUID } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, problemOf } from '../errors.js';
import { isApiPath } from './authentication.js';
import { isForeignKeyViolation, isTransactionConflict } from '../db/constraint-errors.js';
import { isDatabaseUnavailable } from '../db/connection-errors.js';

export const PROBLEM_TYPE = 'application/problem+json';
// What a 503 for an unreachable database asks the client to wait before retrying.
const DATABASE_RETRY_AFTER_SECONDS = 2;

export function sendProblem(request: FastifyRequest, reply: FastifyReply, error: AppError) {
  const instance = request.url.split('?')[0] ?? request.url;
  if (error.options.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.options.retryAfterSeconds));
  return reply.code(error.status).type(PROBLEM_TYPE).send(problemOf(error, instance));
}

/** Fastify's own errors (parsing, limits, media types) mapped to the contract's codes. */
function fromFastifyError(error: FastifyError, request: FastifyRequest): AppError | null {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('MALFORMED_REQUEST', 'The request body is not valid JSON');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('PAYLOAD_TOO_LARGE', `The request body is larger than ${mebibytes(request.routeOptions.bodyLimit)}`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('UNSUPPORTED_MEDIA_TYPE', 'The request body must be JSON (Content-Type: application/json)');
  }
  // The client went away while sending its body (Node's "aborted"); the answer reaches nobody,
  // and this is no fault of the service: the onRequestAbort hook logs it, at info.
  if (error.code === 'ECONNRESET') return new AppError('MALFORMED_REQUEST', 'The client closed the connection before the request body was complete');
  // secure-json-parse refuses __proto__ and constructor.prototype keys with a SyntaxError.
  if (error.statusCode === 400 && error instanceof SyntaxError) return new AppError('MALFORMED_REQUEST', 'The request body is not valid JSON or carries a forbidden key (__proto__, constructor.prototype)');
  return null;
}

const mebibytes = (bytes: number | undefined) => `${(bytes ?? 1024 * 1024) / (1024 * 1024)} MiB`;

/**
 * The one place where errors become answers: domain errors and validation errors as problem
 * objects; anything unexpected as a 500 that carries a correlation id and no internals.
 */
export function installProblemHandlers(app: FastifyInstance) {
  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    // Validation errors arrive here as the AppError our validator compiler returned.
    if (error instanceof AppError) return sendProblem(request, reply, error);
    if (isForeignKeyViolation(error)) {
      // The services check references first; this is a concurrent delete slipping in between.
      return sendProblem(request, reply, new AppError('INVALID_STATE', 'An object this request refers to was changed or deleted at the same time; retry', { status: 409 }));
    }
    if (isTransactionConflict(error)) {
      // Two writes locked the same rows in opposite orders (a deadlock PostgreSQL broke): transient.
      return sendProblem(request, reply, new AppError('INVALID_STATE', 'This write collided with a concurrent one and was undone; retry', { status: 409 }));
    }
    if (isDatabaseUnavailable(error)) {
      // The database dropped or refused the connection: transient, so the process carries on and
      // tells the client when to try again.
      request.log.warn({ err: error }, 'database unavailable');
      return sendProblem(request, reply, new AppError('SERVICE_UNAVAILABLE', 'The database is not reachable at the moment; retry later', { retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS }));
    }
    const mapped = fromFastifyError(error as FastifyError, request);
    if (mapped) return sendProblem(request, reply, mapped);
    const correlationId = randomUUID();
    request.log.error({ err: error, correlationId }, 'unhandled error');
    return sendProblem(request, reply, new AppError('INTERNAL', `An unexpected error occurred; correlation id ${correlationId}`, {
      extensions: { correlationId },
    }));
  });

  app.setNotFoundHandler((request, reply) => {
    // The gateway answers 403 for paths under /v1 that the API does not have, 404 for any other.
    if (isApiPath(request.url)) {
      return sendProblem(request, reply, new AppError('ACCESS_DENIED', `${request.method} ${request.url.split('?')[0]} is not an operation of this API`));
    }
    return sendProblem(request, reply, new AppError('NOT_FOUND', `${request.url.split('?')[0]} does not exist`));
  });
}
