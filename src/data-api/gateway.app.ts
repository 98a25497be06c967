import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import cors from '@fastify/cors';
import replyFrom from '@fastify/reply-from';
import type { GatewayContext } from './gateway-context.js';
import { baseServerOptions, installCommonPlumbing } from '../http/common-plumbing.js';
import { AppError } from '../errors.js';
import { registerHealthRoutes } from '../http/health.js';
import { countRequests } from '../metrics/http.js';
import { rejectToken } from '../http/authentication.js';
import { publicBaseOf, RouteTable } from './route-table.js';
import { decidePayloadAccess, type PayloadDecision, type PayloadOperation } from './payload-access.js';
import { decideCaching, installCacheHeaders } from './cache-headers.js';
import { isPayloadPath, payloadAddressOf, type PayloadAddress } from './payload-request.js';
import type { PayloadRoute } from './route-table.js';
import { isMultipartMixed, isStaDownloadPath, multipartAnswer, multipartElsewhere } from '../sta/index.js';
import { multipartBatchOf } from './multipart-batch.js';
import { renderCommits } from './mqtt/render-commits.js';
import { installMqtt } from './mqtt/index.js';
import { forwardToUpstream } from './sta-upstream.js';
import { isBatchPath } from './upstream-path.js';
import type { FeatureStore } from '../ows/types.js';
import { unavailable as featureStoreUnavailable } from '../ows/store.js';
import { isFeatureDownloadPath, isOwsForm, owsOperationOf, planOwsRequest, type OwsPlan } from '../ows/index.js';
import { fileStemOf, sendDownload } from './downloads.js';
import { isCataloguePath, registerCatalogueRoutes } from './catalogue-routes.js';

/** Payload bodies (observations in bulk, features) may be far larger than management bodies. */
export const PAYLOAD_BODY_LIMIT_BYTES = 32 * 1024 * 1024;

const PAYLOAD_METHODS = ['GET', 'HEAD', 'POST', 'PATCH', 'PUT', 'DELETE'] as const;

export interface DataApiOptions {
  logger?: FastifyServerOptions['loggerInstance'];
  /** How often the route table polls for changes (tests shorten it). */
  routePollMs?: number;
  /** Whether the route table LISTENs for changes on PostgreSQL (default true; a test turns it off to prove the other paths). */
  routeNotifications?: boolean;
  /** The SensorThings MQTT broker's TCP port (MQTT_PORT); absent or null: MQTT over WebSocket only. */
  mqttPort?: number | null;
  /** The HTTP server the entry already listens on (a StartingServer's factory); absent: Fastify's own. */
  serverFactory?: FastifyServerOptions['serverFactory'];
}

/**
 * The data API gateway (DATA_API_URL): `/v1/datasets/{id}/{slug}[/…]` for every published named
 * API. It looks the route up in its cached route table, authorizes the payload operation, and hands
 * the request to the downstream of the API's standard: our SensorThings server for STA, MapServer
 * for OWS. Never listens (the entry or a test decides).
 */
export async function buildDataApiApp(ctx: GatewayContext, options: DataApiOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({ ...baseServerOptions(ctx, options.logger), ...(options.serverFactory ? { serverFactory: options.serverFactory } : {}) });
  // Counted here, served by the management API's GET /metrics.
  countRequests(app, ctx.metrics, 'data');
  // Browsers call the data API from the portal's and partners' origins; preflights need no token.
  if (ctx.config.dataApi.corsOrigins.length > 0) {
    await app.register(cors, {
      origin: ctx.config.dataApi.corsOrigins,
      methods: [...PAYLOAD_METHODS],
      allowedHeaders: ['Authorization', 'Content-Type', 'Prefer', 'X-Allowed-Scope-Ids', 'X-Request-Id'],
      exposedHeaders: ['Location', 'WWW-Authenticate', 'X-Request-Id', 'X-Caller-Unknown'],
      maxAge: 600,
    });
  }
  // Payload clients may present personal access tokens too (QGIS, sensors, scripts).
  await installCommonPlumbing(app, ctx, { mayBeAnonymous: (request) => isPayloadPath(request.url) || isCataloguePath(request.url), acceptPersonalAccessTokens: true });
  registerHealthRoutes(app, ctx.db);
  // Cache-Control (and a validator) on every payload answer, OWS and SensorThings alike.
  installCacheHeaders(app);
  // Upstream mode's proxy: undici with kept-alive connections per upstream origin.
  await app.register(replyFrom, { undici: { connections: 32, pipelining: 1, keepAliveTimeout: 30_000 } });

  // OGC requests arrive as XML documents or forms; MapServer gets their bytes as they came.
  app.addContentTypeParser(['text/xml', 'application/xml', 'application/x-www-form-urlencoded'], { parseAs: 'buffer', bodyLimit: PAYLOAD_BODY_LIMIT_BYTES },
    (_request, body, done) => done(null, body));
  // The SensorThings multipart `$batch` (its parts are HTTP messages): read whole, parsed when served.
  app.addContentTypeParser('multipart/mixed', { parseAs: 'buffer', bodyLimit: PAYLOAD_BODY_LIMIT_BYTES }, (_request, body, done) => done(null, body));

  const routes = new RouteTable(ctx.db, {
    listenUrl: options.routeNotifications === false ? null : ctx.databaseUrl, pollMs: options.routePollMs, log: app.log,
    onReload: (published) => ctx.ows.routesChanged(published.filter((route) => route.standard === 'OWS').map((route) => owsRouteOf(ctx, route))),
  });
  app.addHook('onReady', async () => {
    ctx.ows.start(app.log);
    await routes.start();
  });
  app.addHook('onClose', async () => {
    await routes.stop();
    await ctx.ows.stop();
  });
  renderCommits(app, ctx, routes);
  installMqtt(app, ctx, routes, { port: options.mqttPort ?? null, host: ctx.config.host });

  registerCatalogueRoutes(app, ctx.catalogue);
  const serve = (request: FastifyRequest, reply: FastifyReply) => servePayload(request, reply, routes, ctx);
  for (const url of ['/v1/datasets/:id/:slug', '/v1/datasets/:id/:slug/*']) {
    app.route({ method: [...PAYLOAD_METHODS], url, exposeHeadRoute: false, bodyLimit: PAYLOAD_BODY_LIMIT_BYTES, handler: serve });
  }
  return app;
}

async function servePayload(request: FastifyRequest, reply: FastifyReply, routes: RouteTable, ctx: GatewayContext) {
  const address = payloadAddressOf(request);
  const routeNow = () => (address ? routes.lookup(address.datasetId, address.slug) : undefined);
  let decided = decideRequest(request, routeNow(), address, ctx);
  // A refusal made on the table's copy is checked against the route version first: a release or an
  // opening that committed before this request is served even before its NOTIFY or the next poll.
  if (address && decided.outcome !== 'allow') {
    await routes.catchUp();
    decided = decideRequest(request, routeNow(), address, ctx);
  }
  switch (decided.outcome) {
    case 'multipart-elsewhere':
      throw multipartElsewhere();
    case 'unauthenticated':
      return rejectToken(reply, {});
    case 'not-found':
      throw new AppError('NOT_FOUND', 'No published API at this path');
    case 'forbidden':
      throw new AppError('ACCESS_DENIED', `Reading or writing this dataset's payload needs the permission ${decided.permission}`);
  }
  const { route, operation, rights, owsPlan } = decided;
  // Allowed implies an address.
  decideCaching(request, route, operation);
  if (route.standard === 'OWS') return serveOws(request, reply, ctx, route, address!, rights, owsPlan?.plan);
  const upstreamUrl = route.upstreamUrl ?? ctx.config.staUpstream.url;
  if (isStaDownloadPath(address!.rest)) {
    if (upstreamUrl) throw new AppError('NOT_FOUND', 'Bulk downloads are served for the SensorThings APIs this platform stores, not for those an upstream server answers');
    assertDownloadMethod(request);
    return sendDownload(request, reply, ctx.db, route.storageSchema, async () => ctx.sta.download(route.storageSchema, address!.rest, fileStemOf(route)));
  }
  if (upstreamUrl) {
    const publicBase = publicBaseOf(ctx.config.dataApi.baseUrl, route);
    return forwardToUpstream(request, reply, {
      upstreamUrl, publicBase, address: address!, rights, limits: ctx.config.dataApi.limits, timeoutMs: ctx.config.staUpstream.timeoutMs,
    });
  }
  return forwardToSta(request, reply, ctx, route, address!, rights);
}

type RequestDecision =
  | { outcome: 'multipart-elsewhere' }
  | Exclude<PayloadDecision, { outcome: 'allow' }>
  | { outcome: 'allow'; route: PayloadRoute; operation: PayloadOperation; rights: { read: boolean; write: boolean }; owsPlan: ReturnType<typeof ogcPlanOf> };

/** What a payload request gets on this route (undefined: none published at its address). */
function decideRequest(request: FastifyRequest, route: PayloadRoute | undefined, address: PayloadAddress | null, ctx: GatewayContext): RequestDecision {
  // Only a SensorThings `$batch` takes multipart (see multipartBatchOf); elsewhere it stays the 415 it was.
  if (route?.standard !== 'STA' && isMultipartMixed(request.headers['content-type'])) return { outcome: 'multipart-elsewhere' };
  const owsPlan = ogcPlanOf(request, route, address, ctx.config.ows.maxBodyBytes);
  const operation = owsPlan ? owsPlan.operation : operationOf(request, route, address);
  const decision = decidePayloadAccess(request.caller, route, operation);
  // Allowed implies a route.
  return decision.outcome === 'allow' ? { outcome: 'allow', route: route!, operation, rights: decision.rights, owsPlan } : decision;
}

/**
 * OWS: the feature collections (`{base}/collections…`) are ours; OGC requests on the base itself go
 * to MapServer. Without PostGIS neither can work, without MapServer only the collections can; the
 * 503 says what is missing.
 */
async function serveOws(
  request: FastifyRequest, reply: FastifyReply, ctx: GatewayContext, route: PayloadRoute, address: PayloadAddress, rights: { read: boolean; write: boolean }, plan: OwsPlan | undefined,
) {
  if (!ctx.features.available) throw featureStoreUnavailable();
  if (isFeatureDownloadPath(address.rest)) {
    assertDownloadMethod(request);
    const download = { schema: route.storageSchema, path: address.rest, fileStem: fileStemOf(route) };
    return sendDownload(request, reply, ctx.db, route.storageSchema, (version) => ctx.features.download({ ...download, version }));
  }
  if (isFeaturesApiPath(address, request.method)) return forwardToFeatureStore(request, reply, ctx.features, ctx.config.dataApi.baseUrl, route, address, rights);
  if (address.rest !== '') throw new AppError('NOT_FOUND', 'OGC requests go to the API\'s base itself: {base}?SERVICE=WFS&REQUEST=GetCapabilities');
  if (!['GET', 'HEAD', 'POST'].includes(request.method)) throw new AppError('MALFORMED_REQUEST', 'OGC requests are GETs, or POSTs of an XML document or a form', { status: 405 });
  const clientGone = new AbortController();
  reply.raw.once('close', () => { if (!reply.raw.writableFinished) clientGone.abort(); });
  const answer = await ctx.ows.handle({
    route: owsRouteOf(ctx, route),
    // MapServer's work is shared per caller: the token's subject, else the client's address.
    caller: request.caller ? `sub:${request.caller.subject}` : `ip:${request.ip}`,
    signal: clientGone.signal,
    method: request.method,
    query: address.query,
    body: Buffer.isBuffer(request.body) ? request.body : undefined,
    contentType: request.headers['content-type'],
    ...(plan ? { plan } : {}),
  });
  return reply.code(answer.status).headers(answer.headers).send(answer.body);
}

/**
 * OGC API – Features and the feature collections, ours: `{base}/collections…`, `/conformance`,
 * `/api`, and a GET of the base itself without the OGC key-value parameters (the landing page).
 * With `SERVICE` or `REQUEST` the base is WFS/WMS, MapServer's.
 */
function isFeaturesApiPath(address: PayloadAddress | null, method: string): boolean {
  if (address === null) return false;
  const { rest } = address;
  if (rest === '/collections' || rest.startsWith('/collections/') || rest === '/conformance' || rest === '/api' || isFeatureDownloadPath(rest)) return true;
  if (rest !== '' || !(method === 'GET' || method === 'HEAD')) return false;
  return ![...new URLSearchParams(address.query).keys()].some((name) => /^(service|request)$/i.test(name));
}

/** Downloads are read: GET and HEAD. */
function assertDownloadMethod(request: FastifyRequest): void {
  if (request.method !== 'GET' && request.method !== 'HEAD') throw new AppError('MALFORMED_REQUEST', 'A download takes GET or HEAD', { status: 405 });
}

const owsRouteOf = (ctx: GatewayContext, route: PayloadRoute) => ({
  datasetId: route.datasetId, slug: route.slug, schema: route.storageSchema, publicBase: publicBaseOf(ctx.config.dataApi.baseUrl, route),
});

async function forwardToFeatureStore(
  request: FastifyRequest, reply: FastifyReply, features: FeatureStore, dataApiUrl: string, route: PayloadRoute, address: PayloadAddress, rights: { read: boolean },
) {
  const answer = await features.handle({
    callerMayRead: rights.read,
    method: request.method as 'GET',
    path: address.rest,
    query: address.query,
    body: request.body,
    baseUrl: publicBaseOf(dataApiUrl, route),
    schema: route.storageSchema,
    datasetId: route.datasetId,
    slug: route.slug,
    ...(request.headers.accept ? { accept: request.headers.accept } : {}),
  });
  reply.code(answer.status);
  if (answer.headers) reply.headers(answer.headers);
  return answer.body === undefined ? reply.send() : reply.send(answer.body);
}


/**
 * An OGC request on an OWS API's base says itself what it does (an XML POST of GetMap reads, a
 * WFS-T Transaction writes): it is read once here, and the plan goes on to the OWS server. Null
 * for every other payload request.
 */
function ogcPlanOf(request: FastifyRequest, route: PayloadRoute | undefined, address: PayloadAddress | null, maxOwsBodyBytes: number):
  { operation: PayloadOperation; plan?: OwsPlan } | null {
  const method = request.method;
  if (route?.standard !== 'OWS' || !address || isFeaturesApiPath(address, method) || !(method === 'GET' || method === 'HEAD' || method === 'POST')) return null;
  const message = { method, query: address.query, body: Buffer.isBuffer(request.body) ? request.body : undefined, contentType: request.headers['content-type'] };
  // A body beyond its bound is not read before authorization (OwsServer.handle refuses it with
  // 400 once the caller may know the API exists). Unread, an XML body counts as a write; a form
  // is a key-value request, which MapServer serves for reads only.
  if (message.body && message.body.length > maxOwsBodyBytes) return { operation: isOwsForm(message.contentType) ? 'read' : 'write' };
  const plan = planOwsRequest(message);
  return { operation: owsOperationOf(plan), plan };
}

/** What any other payload request does: a GET reads, a `$batch` holds both, anything else writes. */
function operationOf(request: FastifyRequest, route: PayloadRoute | undefined, address: PayloadAddress | null): PayloadOperation {
  if (request.method === 'GET' || request.method === 'HEAD') return 'read';
  return isBatch(route, address) ? 'read-or-write' : 'write';
}

/**
 * A `$batch` carries requests authorized one by one. Decided on the normalised path, any case, so
 * that no spelling of it (`/Things/%2e%2e/$batch`, `/$BATCH`) is authorized as a single write
 * while an upstream serves it as a batch of reads.
 */
const isBatch = (route: PayloadRoute | undefined, address: PayloadAddress | null) =>
  route?.standard === 'STA' && address !== null && isBatchPath(address.rawPath);

async function forwardToSta(request: FastifyRequest, reply: FastifyReply, ctx: GatewayContext, route: PayloadRoute, address: PayloadAddress, rights: { read: boolean; write: boolean }) {
  const baseUrl = publicBaseOf(ctx.config.dataApi.baseUrl, route);
  const multipart = multipartBatchOf(request, address.rawPath, baseUrl, ctx.config.dataApi.limits);
  const answer = await ctx.sta.handle({
    method: request.method as 'GET',
    path: address.rest,
    query: address.query,
    body: multipart ? multipart.envelope : request.body,
    preferMinimal: /\breturn=minimal\b/i.test(String(request.headers['prefer'] ?? '')),
    baseUrl,
    schema: route.storageSchema,
    rights,
    answerAsText: true,
  });
  if (multipart && answer.status === 200) {
    const { contentType, text } = multipartAnswer(multipart, (answer.body as { responses: unknown[] }).responses);
    return reply.code(200).type(contentType).send(text);
  }
  reply.code(answer.status);
  if (answer.headers) reply.headers(answer.headers);
  if (answer.body === undefined) return reply.send();
  const typed = answer.headers?.['content-type'] !== undefined;
  // An object without a type of its own is JSON, as Fastify would write it (JSON.stringify).
  const json = typeof answer.body === 'object' && answer.body !== null && !Buffer.isBuffer(answer.body) && !typed;
  if (!json && typeof answer.body !== 'string') return reply.send(answer.body);
  if (!typed) reply.type(json ? 'application/json; charset=utf-8' : 'text/plain; charset=utf-8');
  // As bytes: Fastify measures a string's length in one pass over it and Node encodes it in another
  // (a page of 100 Observations is 76 KB held as a rope of pieces, an $expand page of 100
  // Datastreams 214 KB; measured 50 µs a page saved).
  return reply.send(Buffer.from(json ? JSON.stringify(answer.body) : answer.body as string));
}
