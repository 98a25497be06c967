import { maxHeaderSize, STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { AppError, problemOf } from '../errors.js';
import { sendProblem } from './problems.js';

/**
 * Refusals that happen before a request reaches a route (and so before the error handler): the
 * router's and the HTTP parser's. Fastify and Node would answer them with their own JSON shape;
 * these answer problem objects like every other error of the service.
 */

// find-my-way's limit on one path parameter. Fastify's default; a UUID needs 36 characters, a slug
// fewer than this. Named here because the refusal quotes it.
export const MAX_PARAM_LENGTH = 100;

/** Fastify's `frameworkErrors`: what the router cannot route. */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  // The onRequest hooks did not run; the request id header is still promised on every answer.
  reply.header('x-request-id', request.id);
  return sendProblem(request, reply, routerRefusal(error));
}

function routerRefusal(error: FastifyError): AppError {
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      // MALFORMED_REQUEST, not VALIDATION_FAILED: the path cannot even be decoded, so there is no
      // parameter yet to name, as a body that is not JSON has no field yet to name.
      return new AppError('MALFORMED_REQUEST', 'The request path is not valid percent-encoded UTF-8');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new AppError('VALIDATION_FAILED', `A path parameter is longer than ${MAX_PARAM_LENGTH} characters`, {
        fieldErrors: [{ field: 'path', message: `a path parameter must not be longer than ${MAX_PARAM_LENGTH} characters` }],
      });
    default:
      return new AppError('INTERNAL', 'The request could not be routed');
  }
}

/**
 * Fastify's `clientErrorHandler`: the HTTP parser refused the bytes (a malformed Content-Length,
 * headers over Node's limit, 16 KiB unless --max-http-header-size says otherwise, ...), so there
 * is no request object, only the socket. The answer is written raw: a complete HTTP/1.1 response,
 * then the connection is closed, because the parser cannot tell where the next request would start.
 */
export const answerClientError: NonNullable<FastifyServerOptions['clientErrorHandler']> = function (this: FastifyInstance, error, socket) {
  // A reset connection, or one the client closed halfway through a request, has nobody left to
  // answer; the request it carried (if any) logs the abort.
  if (error.code === 'ECONNRESET' || error.code === 'HPE_INVALID_EOF_STATE' || socket.destroyed) return void socket.destroy();
  const refusal = parserRefusal(error.code);
  // Only the code: the error's raw packet holds the request's bytes, Authorization header included.
  this.log.info({ code: error.code }, 'HTTP parser refused a request');
  if (!socket.writable) return void socket.destroy();
  const body = JSON.stringify(problemOf(refusal, requestPathOf((error as { rawPacket?: unknown }).rawPacket)));
  socket.end(
    `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\n` +
    'Content-Type: application/problem+json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n\r\n' +
    body,
  );
  // end() lets the answer drain before the close; a client that never closes its side is cut off.
  setTimeout(() => socket.destroy(), 1000).unref();
};

function parserRefusal(code: string): AppError {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return new AppError('MALFORMED_REQUEST', `The request line and headers are larger than ${maxHeaderSize / 1024} KiB`, { status: 431 });
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return new AppError('MALFORMED_REQUEST', 'The request was not received in time', { status: 408 });
  }
  return new AppError('MALFORMED_REQUEST', 'The request is not valid HTTP/1.1 (request line, headers or framing)');
}

/** The path of the request line, for the problem's `instance`; empty when the bytes do not show one. */
function requestPathOf(rawPacket: unknown): string {
  if (!Buffer.isBuffer(rawPacket)) return '';
  const target = /^[A-Z]+ (\/[!-~]*) HTTP\/1\.[01]\r?\n/.exec(rawPacket.subarray(0, 4096).toString('latin1'))?.[1] ?? '';
  // The query string may hold anything, credentials included; the problem names the path only.
  return target.split('?')[0]!;
}
