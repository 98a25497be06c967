import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { FastifyServerFactory } from 'fastify';
import { AppError, problemOf } from '../errors.js';
import { PROBLEM_TYPE } from './problems.js';

/** What a 503 while starting asks the client to wait before it tries again. */
const RETRY_AFTER_SECONDS = 1;
/**
 * How long a request that arrives while the process starts is held for the application, and how
 * many are held at most: a balancer without health checks (nginx OSS) sends requests to a replica
 * as soon as it accepts connections, and a rolling restart would otherwise turn them into 503s for
 * the second or so a start takes. Beyond either bound the answer is 503 with Retry-After.
 */
const HOLD_MS = 10_000;
const MAX_HELD = 1_000;

/**
 * An HTTP server that listens from the first moment of a start, before the database is reached,
 * migrated and the application built: probes then see a live process that is not ready yet, rather
 * than a refused connection (which Kubernetes' liveness probe would count as a dead one). Until
 * `serve()`, `/health/live` answers 200 and `/health/ready` 503; every other request is held (at
 * most HOLD_MS) and handed to the application once it serves, or answered 503 with `Retry-After`.
 * Then the Fastify application given `factory` answers everything.
 */
export class StartingServer {
  readonly server: Server = createServer();
  private application: RequestListener | null = null;
  private answering: RequestListener = (request, response) => this.answerWhileStarting(request, response);
  private readonly held = new Map<IncomingMessage, { response: ServerResponse; timer: NodeJS.Timeout }>();

  constructor() {
    this.server.on('request', (request, response) => this.answering(request, response));
  }

  /** Fastify's `serverFactory`: the application routes its requests through this server. */
  readonly factory: FastifyServerFactory = (handler) => {
    this.application = handler as RequestListener;
    return this.server;
  };

  /** Hands every request from now on, and those held, to the application (after its `ready()`). */
  serve(): void {
    const application = this.application;
    if (!application) throw new Error('StartingServer.serve(): no application was built on this server');
    this.answering = application;
    for (const [request, { response, timer }] of this.held) {
      clearTimeout(timer);
      application(request, response);
    }
    this.held.clear();
  }

  /** A shutdown before the application served: the held requests are answered 503 now, not after their hold. */
  refuseHeld(): void {
    for (const [request, { response, timer }] of this.held) {
      clearTimeout(timer);
      answerUnavailable(request, response);
    }
    this.held.clear();
  }

  private answerWhileStarting(request: IncomingMessage, response: ServerResponse): void {
    const path = (request.url ?? '').split('?')[0];
    if (path === '/health/live') return send(response, 200, 'application/json', { status: 'UP' });
    if (path === '/health/ready') return send(response, 503, 'application/json', { status: 'DOWN', checks: { database: 'STARTING' } });
    if (this.held.size >= MAX_HELD) return answerUnavailable(request, response);
    const timer = setTimeout(() => {
      this.held.delete(request);
      answerUnavailable(request, response);
    }, HOLD_MS);
    this.held.set(request, { response, timer });
    // A client that gives up is not held any longer.
    response.once('close', () => {
      const entry = this.held.get(request);
      if (entry?.response !== response) return;
      clearTimeout(entry.timer);
      this.held.delete(request);
    });
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

function answerUnavailable(request: IncomingMessage, response: ServerResponse): void {
  const path = (request.url ?? '').split('?')[0] ?? '/';
  response.setHeader('retry-after', String(RETRY_AFTER_SECONDS));
  const error = new AppError('SERVICE_UNAVAILABLE', 'The service is starting (waiting for its database, or migrating it); retry shortly');
  send(response, error.status, PROBLEM_TYPE, problemOf(error, path));
}

function send(response: ServerResponse, status: number, contentType: string, body: object): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  response.end(text);
}
