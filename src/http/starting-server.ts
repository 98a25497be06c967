import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { FastifyServerFactory } from 'fastify';
import { AppError, problemOf } from '../errors.js';
import { PROBLEM_TYPE } from './problems.js';

/** What a request waits before it tries again while the process is starting (the database may take a while). */
const RETRY_AFTER_SECONDS = 1;

/**
 * An HTTP server that listens from the first moment of a start, before the database is reached,
 * migrated and the application built: probes then see a live process that is not ready yet, rather
 * than a refused connection (which Kubernetes' liveness probe would count as a dead one). Until
 * `serve()`, `/health/live` answers 200, `/health/ready` 503 and every other request 503 with
 * `Retry-After`; then the Fastify application given `factory` answers everything.
 */
export class StartingServer {
  readonly server: Server = createServer();
  private application: RequestListener | null = null;
  private answering: RequestListener = answerWhileStarting;

  constructor() {
    this.server.on('request', (request, response) => this.answering(request, response));
  }

  /** Fastify's `serverFactory`: the application routes its requests through this server. */
  readonly factory: FastifyServerFactory = (handler) => {
    this.application = handler as RequestListener;
    return this.server;
  };

  /** Hands every request from now on to the application (after its `ready()`). */
  serve(): void {
    if (!this.application) throw new Error('StartingServer.serve(): no application was built on this server');
    this.answering = this.application;
  }

  listen(host: string, port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen({ host, port }, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
  }
}

function answerWhileStarting(request: IncomingMessage, response: ServerResponse): void {
  const path = (request.url ?? '').split('?')[0];
  if (path === '/health/live') return send(response, 200, 'application/json', { status: 'UP' });
  if (path === '/health/ready') return send(response, 503, 'application/json', { status: 'DOWN', checks: { database: 'STARTING' } });
  response.setHeader('retry-after', String(RETRY_AFTER_SECONDS));
  const error = new AppError('SERVICE_UNAVAILABLE', 'The service is starting (waiting for its database, or migrating it); retry shortly');
  send(response, error.status, PROBLEM_TYPE, problemOf(error, path ?? '/'));
}

function send(response: ServerResponse, status: number, contentType: string, body: object): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  response.end(text);
}
