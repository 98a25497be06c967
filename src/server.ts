import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Server as NetServer, type Socket } from 'node:net';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import dotenv from 'dotenv';
import type { Logger } from 'pino';
import { createLogger } from './logger.js';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { StartingServer } from './http/starting-server.js';
import { buildWorkerApp } from './worker.app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createContext } from './runtime.js';
import { StartRefusedError } from './db/start-errors.js';
import { DataSourceSecretError } from './modules/datasources/index.js';
import { buildApp } from './app.js';
import { buildDataApiApp } from './data-api/gateway.app.js';
import { buildIdpApp } from './idp/idp.app.js';
import { docsOrigins } from './http/docs-login.js';
import type { AppContext } from './context.js';

/**
 * The program: `node dist/server.js api|data-api|idp|worker|all` (default all). Loads the
 * configuration once, listens at once (answering "starting" until the database is migrated), opens
 * what the mode needs, and closes with grace on SIGTERM/SIGINT.
 */

const MODES = ['api', 'data-api', 'idp', 'worker', 'all'] as const;
type Mode = (typeof MODES)[number];

const SHUTDOWN_TIMEOUT_MS = 10_000;
// How long, once a shutdown began, a connection with no request in flight may still send one.
const DRAIN_GRACE_MS = 2_000;
// Once a shutdown began, new connections are still accepted until none came for ACCEPT_QUIET_MS
// (at most ACCEPT_WINDOW_MAX_MS), and answered with Connection: close.
const ACCEPT_QUIET_MS = 100;
const ACCEPT_WINDOW_MAX_MS = 1_000;
// Twice Node's default listen backlog (511): the most turns spent taking connections already queued.
const ACCEPT_QUEUE_MAX_TURNS = 1_024;

/** A listener of the API ports: its server listens from the start; its application exists once the database is ready. */
interface Listener { name: string; url: string; starting: StartingServer; app: FastifyInstance | null; drain: () => Promise<void> }
interface IdpListener { name: string; url: string; app: FastifyInstance; drain: () => Promise<void> }

/** Everything this process has opened, so that a shutdown at any moment closes exactly that. */
const state: {
  logger: Logger | null; listeners: Listener[]; idp: IdpListener | null; ctx: AppContext | null;
  starting: Promise<void> | null; stopping: boolean;
} = { logger: null, listeners: [], idp: null, ctx: null, starting: null, stopping: false };

function fatal(message: string, err?: unknown): never {
  if (state.logger) state.logger.fatal({ err }, message);
  else console.error(err ? `${message}: ${(err as Error)?.stack ?? String(err)}` : message);
  process.exit(1);
}

// An ignored rejection means some state is unknown; crashing (and being restarted) is safer.
process.on('unhandledRejection', (reason) => fatal('unhandled promise rejection', reason));
process.on('uncaughtException', (err) => fatal('uncaught exception', err));

function parseMode(argument: string | undefined): Mode {
  const mode = argument ?? 'all';
  if (!(MODES as readonly string[]).includes(mode)) {
    console.error(`Unknown mode "${mode}": use one of ${MODES.join(', ')}`);
    process.exit(1);
  }
  return mode as Mode;
}

function readConfig(): Config {
  // An absent .env is normal (production sets the environment); dotenv would only say so.
  if (existsSync('.env')) dotenv.config({ path: '.env', quiet: true });
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
}

/** Where the data lives, without the credentials a DATABASE_URL may carry. */
function describeDatabase(config: Config): string {
  if (!config.database.url) return `PGlite in ${config.database.dataDir}`;
  const url = new URL(config.database.url);
  return `PostgreSQL ${url.hostname}:${url.port || 5432}${url.pathname}`;
}

/** A listener of the mode: its port, public URL, and how its application is built once the context exists. */
interface ListenerPlan {
  name: string; url: string; port: number;
  build: (ctx: AppContext, serverFactory: FastifyServerOptions['serverFactory']) => Promise<FastifyInstance>;
}

function listenersOf(mode: Mode, config: Config, logger: Logger): ListenerPlan[] {
  const plans: ListenerPlan[] = [];
  if (mode === 'api' || mode === 'all') {
    plans.push({ name: 'api', url: config.api.baseUrl, port: config.api.port, build: (ctx, factory) => buildApp(ctx, logger.child({ listener: 'api' }), factory) });
  }
  if (mode === 'data-api' || mode === 'all') {
    plans.push({
      name: 'data-api', url: config.dataApi.baseUrl, port: config.dataApi.port,
      build: (ctx, factory) => buildDataApiApp(ctx, { logger: logger.child({ listener: 'data-api' }), mqttPort: config.mqtt.port, serverFactory: factory }),
    });
  }
  // A worker answers its probes and its scraper on the management API's port.
  if (mode === 'worker') {
    plans.push({ name: 'worker', url: config.api.baseUrl, port: config.api.port, build: (ctx, factory) => buildWorkerApp(ctx, logger.child({ listener: 'worker' }), factory) });
  }
  return plans;
}

async function start(mode: Mode, config: Config, logger: Logger) {
  const wantsIdp = mode === 'idp' || mode === 'all';
  if (mode === 'idp' && !config.idp.enabled) {
    fatal('The development identity provider is disabled (NODE_ENV=production or DEV_IDP=off); nothing to run in mode idp');
  }

  // The IdP first: the API fetches its keys to verify tokens.
  if (wantsIdp && config.idp.enabled) {
    const app = await buildIdpApp({
      idpUrl: config.idp.url,
      password: config.idp.password,
      tokenTtlSeconds: config.idp.tokenTtlSeconds,
      corsOrigins: docsOrigins(config),
      loggerInstance: logger.child({ listener: 'idp' }),
    });
    state.idp = { name: 'idp', url: config.idp.url, app, drain: trackConnections(app.server) };
    await app.listen({ host: config.host, port: config.idp.port });
  } else if (mode === 'all') {
    logger.info('development identity provider not started (NODE_ENV=production or DEV_IDP=off)');
  }
  if (state.stopping || mode === 'idp') return;

  // Listen before the database is reached: /health/live answers from now on, /health/ready (and
  // every other request) 503 until the database is migrated and the applications are built.
  const plans = listenersOf(mode, config, logger);
  for (const plan of plans) {
    const starting = new StartingServer();
    state.listeners.push({ name: plan.name, url: plan.url, starting, app: null, drain: trackConnections(starting.server) });
    await starting.listen(config.host, plan.port);
    if (state.stopping) return;
  }

  // One context (database, migrations, token verifier) shared by every listener of the process.
  state.ctx = await createContext(config, undefined, logger.child({ component: 'database' }), logger.child({ component: 'pipelines' }));
  if (state.stopping) return;
  const ctx = state.ctx;
  for (const [index, plan] of plans.entries()) {
    const listener = state.listeners[index]!;
    listener.app = await plan.build(ctx, listener.starting.factory);
    await listener.app.ready();
    if (state.stopping) return;
    listener.starting.serve();
  }
}

/**
 * Follows a listener's connections so that a shutdown loses no request: returns `drain`, which
 * stops accepting (after a quiet moment), lets every request in flight finish, answers requests
 * still arriving on open connections (for a short grace) with `Connection: close`, and resolves
 * once every connection is closed. Node's http.Server.close() (and Fastify's close) would instead
 * destroy connections accepted but whose request was not parsed yet, and Fastify answers 503 while
 * closing; so Fastify is closed only after this.
 */
function trackConnections(server: HttpServer): () => Promise<void> {
  const inFlight = new Map<Socket, number>();
  let draining = false;
  let accepted = 0;
  const served = new WeakSet<Socket>();
  server.on('connection', (socket: Socket) => {
    accepted++;
    inFlight.set(socket, 0);
    socket.once('close', () => inFlight.delete(socket));
  });
  // Prepended, so that the header is set before Fastify's handler may answer.
  server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    served.add(socket);
    if (draining && !response.headersSent) response.setHeader('connection', 'close');
    response.once('close', () => {
      if (!inFlight.has(socket)) return; // the connection is already gone
      const left = inFlight.get(socket)! - 1;
      inFlight.set(socket, left);
      if (draining && left === 0) socket.end();
    });
  });
  return async () => {
    draining = true;
    // Clients may still connect for a moment after the signal (a balancer that has not yet seen
    // this process go): keep accepting until none arrived for a while.
    const until = Date.now() + ACCEPT_WINDOW_MAX_MS;
    for (let before = -1; before !== accepted && Date.now() < until;) {
      before = accepted;
      await sleep(ACCEPT_QUIET_MS);
    }
    await acceptQueued();
    await new Promise<void>(stopAccepting);
  };
  /**
   * Takes every connection the kernel has completed but Node has not accepted yet, since closing
   * the listening socket would reset them. libuv accepts one connection per turn of the event
   * loop, so after a stall (PGlite's work, a busy machine pausing the process) many may still wait
   * when the window above ends. Each turn polls the listening socket, so a turn that accepts
   * nothing means the queue is empty; the bound only stops a flood from holding the shutdown.
   */
  async function acceptQueued() {
    for (let turns = 0, before = -1; before !== accepted && turns < ACCEPT_QUEUE_MAX_TURNS; turns++) {
      before = accepted;
      await new Promise(setImmediate);
    }
  }
  function stopAccepting(resolve: () => void) {
    // net's close stops accepting and waits for the open connections; http's would cut idle ones.
    NetServer.prototype.close.call(server, () => resolve());
    // An idle keep-alive connection has had its answers: it is closed now, as Node would. One that
    // has not sent its first request yet is given the grace to send it.
    for (const [socket, count] of inFlight) if (count === 0 && served.has(socket)) socket.end();
    setTimeout(() => {
      // Not at once: after a busy stretch (PGlite's work blocks the event loop) the timers run
      // before the poll phase reads what the sockets received meanwhile, so a request sent within
      // the grace would be cut unread. setImmediate runs after that poll phase.
      setImmediate(() => {
        for (const [socket, count] of inFlight) if (count === 0) socket.destroy();
      });
    }, DRAIN_GRACE_MS).unref();
  }
}

/** Stop accepting, let in-flight requests finish, then close the database; the IdP last, as the API may still need its keys. */
async function shutdown(signal: string) {
  const logger = state.logger!;
  if (state.stopping) {
    logger.warn({ signal }, 'second signal: exiting at once');
    process.exit(1);
  }
  state.stopping = true;
  logger.info({ signal }, 'shutting down');
  setTimeout(() => {
    logger.error(`shutdown took longer than ${SHUTDOWN_TIMEOUT_MS / 1000} s: exiting`);
    process.exit(1);
  }, SHUTDOWN_TIMEOUT_MS).unref();
  try {
    // A start under way (migrations, say) is let finish, so that its database is closed too;
    // it opens no listener once `stopping` is set.
    await state.starting?.catch(() => undefined);
    for (const listener of state.listeners) if (!listener.app) listener.starting.refuseHeld();
    await Promise.all(state.listeners.map((listener) => listener.drain()));
    await Promise.all(state.listeners.map((listener) => listener.app?.close()));
    await state.idp?.drain();
    await state.idp?.app.close();
    await state.ctx?.db.destroy();
  } catch (err) {
    fatal('shutdown failed', err);
  }
  logger.info('stopped');
  process.exit(0);
}

async function main() {
  const mode = parseMode(process.argv[2]);
  const config = readConfig();
  const logger = createLogger(config.logLevel);
  state.logger = logger;
  // The first signal closes with grace; a second one (of either kind) exits at once.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void shutdown(signal));

  const startedAt = performance.now();
  try {
    state.starting = start(mode, config, logger);
    await state.starting;
  } catch (err) {
    if (state.stopping) return; // a shutdown is under way and reports on its own
    // Both name what to change (the database, a key setting) in one line; a stack would only bury it.
    if (err instanceof StartRefusedError || err instanceof DataSourceSecretError) logger.fatal(err.message);
    else logger.fatal({ err }, 'start failed');
    await Promise.allSettled([...state.listeners, ...(state.idp ? [state.idp] : [])].map((listener) => listener.app?.close()));
    for (const listener of state.listeners) listener.starting.server.close();
    await state.ctx?.db.destroy().catch(() => undefined);
    process.exit(1);
  }
  if (state.stopping) return;

  const urls = Object.fromEntries([...(state.idp ? [state.idp] : []), ...state.listeners].map((listener) => [listener.name, listener.url]));
  const summary = [
    state.listeners.find((l) => l.name === 'api') && `management API ${config.api.baseUrl} (docs ${config.api.baseUrl}/docs)`,
    state.listeners.find((l) => l.name === 'data-api') && `data API ${config.dataApi.baseUrl}`,
    state.listeners.find((l) => l.name === 'worker') && `worker (sagas and pipelines; probes on port ${config.api.port})`,
    mode !== 'idp' && !config.backgroundWork && mode !== 'worker' && 'no sagas or pipelines here (BACKGROUND_WORK=off)',
    state.idp && `identity provider ${config.idp.url}/realms/platform`,
    mode !== 'idp' && `database ${describeDatabase(config)}`,
    mode !== 'idp' && `token issuer ${config.oidc.issuer}`,
  ].filter(Boolean).join(', ');
  logger.info({ mode, urls, startMs: Math.round(performance.now() - startedAt) }, `ready: ${summary}`);
}

await main();
