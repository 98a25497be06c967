import { AppError } from '../errors.js';
import type { Database } from '../db/client.js';
import { collectionExtents, listCollections } from './collections.repo.js';
import { advertisedExtent } from './advertised-extent.js';
import { MapDirectory } from './map-directory.js';
import { PLACEHOLDER_NAME, renderLayerTemplate, renderMapfile, TEMPLATE_FOOTER, TEMPLATE_HEADER, withoutPlaceholder } from './mapfile.js';
import { locateMapServer, MapServerBusyError, MapServerPool, MapServerQueueTimeoutError, MapServerTimeoutError } from './mapserver-pool.js';
import type { CgiResponse } from './fastcgi.js';
import { datasetStyles, type DatasetStyles, type StoredStyle } from './sld-styles.js';
import { checkBodySize, checkImageSize, mapServerQuery, planOwsRequest, type OwsMessage, type OwsPlan } from './ows-request.js';
import { libpqEnvironmentOf } from './libpq-environment.js';
import { isExceptionReport, refusal, rewriteExceptionReport, rewriteMessagePage } from './exception-report.js';
import { rewriteXmlAnswer, type XmlAnswerContext } from './xml-answers.js';
import { rewriteJsonFeatures } from './json-answers.js';

/** The part of a payload route the OWS server needs. */
export interface OwsRoute {
  datasetId: string;
  slug: string;
  /** The dataset's storage schema (its collections' tables). */
  schema: string;
  /** The route's public base: every URL MapServer advertises starts with it. */
  publicBase: string;
}

export interface OwsRequest extends OwsMessage {
  route: OwsRoute;
  /** Whose request this is (token subject, else client address): MapServer's work is shared fairly between callers. */
  caller: string;
  /** Aborted when the client goes away: a request still queued for MapServer is then dropped. */
  signal?: AbortSignal;
  /** The request as the gateway already read it to authorize it (`planOwsRequest`), so it is parsed once. */
  plan?: OwsPlan;
}

export interface OwsAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export interface OwsServerDeps {
  db: Database;
  postgis: boolean;
  /** The PostgreSQL server MapServer reads the collections from (null: PGlite, no OWS). */
  databaseUrl: string | null;
  settings: {
    workers: number; mapDir: string | null; timeoutMs: number; maxPerCaller: number; queueTimeoutMs: number; maxImageSize: number; maxBodyBytes: number;
    contact: { organization: string | null; email: string | null };
    /** How old a map's layer extents may grow before a GetCapabilities request computes them again. */
    extentRefreshMs: number;
  };
  /** The dataset's SLD styles (supplied by the datasets module through runtime.ts). */
  stylesOf(datasetId: string): Promise<StoredStyle[]>;
  /** The dataset's name and description, and the named API's name: the capabilities' title, abstract and keywords (runtime.ts). */
  describe(datasetId: string, slug: string): Promise<{ name: string; description: string | null; apiName: string | null } | undefined>;
}

/** 503 with Retry-After for a request that waited its caller's queue timeout, or found the queue full. */
const busy = (detail: string, retryAfterSeconds: number) => new AppError('SERVICE_UNAVAILABLE', detail, { retryAfterSeconds });

/**
 * MapServer fetches an SLD by URL (and an SLD's external graphics) with libcurl, which takes its
 * proxy from these variables when the request names none: pointed at port 0 every such fetch
 * fails at once, without a packet sent. The gateway never passes a caller's SLD; this holds even
 * if something did.
 */
export const NO_NETWORK: Record<string, string> = Object.fromEntries(
  ['http_proxy', 'https_proxy', 'HTTPS_PROXY', 'all_proxy', 'ALL_PROXY', 'ftp_proxy'].map((name) => [name, 'http://127.0.0.1:0']),
);

export interface OwsLog { info(obj: object, msg: string): void; warn(obj: object, msg: string): void; error(obj: object, msg: string): void }

/**
 * The OGC side of OWS named APIs (WFS, WMS): MapServer 8 as a FastCGI pool this process supervises,
 * reading one generated mapfile per published OWS API. Maps are written when first requested and
 * rewritten after any route or collection change (`invalidate`), so that every gateway process
 * derives its own from the database; an unpublished API's map is removed (`routesChanged`).
 */
export class OwsServer {
  private pool: MapServerPool | null = null;
  private starting: Promise<MapServerPool> | null = null;
  private started = false;
  private reloading: Promise<unknown> = Promise.resolve();
  private directory: MapDirectory | null = null;
  private generation = 0;
  private readonly maps = new Map<string, { generation: number; writtenAt: number; ready: Promise<PublishedMap> }>();
  /** Why OGC requests cannot be served here (null: they can, once started). */
  readonly unavailableReason: string | null;
  private readonly binaries = locateMapServer();
  private requestEnvironment: Record<string, string> = {};
  private log: OwsLog = { info: () => {}, warn: () => {}, error: () => {} };

  constructor(private readonly deps: OwsServerDeps) {
    this.unavailableReason = !deps.postgis || !deps.databaseUrl
      ? 'OWS named APIs need PostgreSQL with PostGIS: set DATABASE_URL to a PostgreSQL server with the postgis extension'
      : !this.binaries
        ? 'WFS and WMS need MapServer 8: install the Debian packages cgi-mapserver, mapserver-bin and spawn-fcgi (or set MAPSERV_PATH and SPAWN_FCGI_PATH)'
        : null;
  }

  get available(): boolean {
    return this.unavailableReason === null;
  }

  /**
   * Readies the server for the data API (logs go to `log`). MapServer's pool itself starts with the
   * first OGC request, so that a process serving no OWS API never runs it.
   */
  start(log: OwsLog): void {
    this.log = log;
    this.started = true;
  }

  async stop(): Promise<void> {
    this.started = false;
    const starting = this.starting;
    this.starting = null;
    this.pool = null;
    const pool = await starting?.catch(() => null);
    await pool?.stop();
    await this.directory?.dispose();
    this.directory = null;
    this.maps.clear();
  }

  private poolReady(): Promise<MapServerPool> {
    this.starting ??= (async () => {
      this.directory = await MapDirectory.open(this.deps.settings.mapDir);
      this.requestEnvironment = { MAPSERVER_CONFIG_FILE: this.directory.configFile, ...NO_NETWORK, ...libpqEnvironmentOf(this.deps.databaseUrl!) };
      const pool = new MapServerPool({
        size: this.deps.settings.workers,
        runtimeDir: this.directory.root,
        mapserv: this.binaries!.mapserv,
        spawnFcgi: this.binaries!.spawnFcgi,
        env: this.requestEnvironment,
        requestTimeoutMs: this.deps.settings.timeoutMs,
        maxQueue: 1000,
        maxPerCaller: this.deps.settings.maxPerCaller,
        queueTimeoutMs: this.deps.settings.queueTimeoutMs,
        log: this.log,
      });
      await pool.start();
      this.pool = pool;
      return pool;
    })();
    // A failed start is tried again by the next request.
    this.starting.catch(() => { this.starting = null; });
    return this.starting;
  }

  /** MapServer's worker processes (for tests and health checks). */
  workerPids(): number[] {
    return this.pool?.pids() ?? [];
  }

  /** Requests waiting for a MapServer worker (for tests and health checks). */
  waitingRequests(): number {
    return this.pool?.waiting ?? 0;
  }

  /** MapServer's config file (null until the first OGC request started the pool). */
  configFile(): string | null {
    return this.directory?.configFile ?? null;
  }

  /** Something a map is made of changed (a collection, a route): every map is rewritten on its next request. */
  invalidate(): void {
    this.generation += 1;
  }

  /** The published routes after a route table reload: maps of routes that are gone are removed. */
  routesChanged(live: OwsRoute[]): void {
    this.invalidate();
    const liveAliases = new Set(live.flatMap((route) => [aliasOf(route), jsonAliasOf(aliasOf(route))]));
    for (const alias of this.directory?.registered() ?? []) {
      if (liveAliases.has(alias)) continue;
      this.maps.delete(alias);
      void this.directory!.remove(alias).catch((error: Error) => this.log.warn({ err: { message: error.message }, alias }, 'ows: could not remove a map'));
    }
  }

  async handle(request: OwsRequest): Promise<OwsAnswer> {
    if (!this.available) throw new AppError('SERVICE_UNAVAILABLE', this.unavailableReason!);
    if (!this.started) throw new AppError('SERVICE_UNAVAILABLE', 'The data API is stopping');
    checkBodySize(request, this.deps.settings.maxBodyBytes);
    const plan = request.plan ?? planOwsRequest(request);
    if (plan.kind === 'refused') return headless(refusal(plan.service, plan.code, plan.locator, plan.text), request.method === 'HEAD');
    checkImageSize(plan, this.deps.settings.maxImageSize);
    const pool = await this.poolReady().catch((error: Error) => {
      this.log.error({ err: { message: error.message } }, 'ows: MapServer did not start');
      throw new AppError('SERVICE_UNAVAILABLE', 'MapServer did not start; see the data API log');
    });
    const { alias, jsonAlias, styles, empty, server, booleans, extents } = await this.mapFor(request.route, plan.request === 'getcapabilities');
    const query = mapServerQuery(plan, asksForJson(plan) ? jsonAlias : alias, styles);
    // A POSTed form is a GET in disguise; an XML body (checked by planOwsRequest) goes to MapServer as it came.
    const xmlBody = plan.kind === 'xml' ? plan.body : undefined;
    // Only what the gateway sets: no HTTP_* variable (MapServer would read HTTP_COOKIE as parameters).
    const params: Record<string, string> = {
      // libfcgi swaps a worker's environment for each request's parameters: libpq reads the database from these.
      ...this.requestEnvironment,
      REQUEST_METHOD: xmlBody ? 'POST' : 'GET',
      QUERY_STRING: query,
      CONTENT_LENGTH: String(xmlBody?.length ?? 0),
      SERVER_PROTOCOL: 'HTTP/1.1',
      ...server,
    };
    if (xmlBody) params.CONTENT_TYPE = 'text/xml';
    let response: CgiResponse;
    try {
      response = await pool.run(params, xmlBody, undefined, request.signal, request.caller);
    } catch (error) {
      if (error instanceof MapServerQueueTimeoutError) {
        const waited = this.deps.settings.queueTimeoutMs;
        throw busy(`Your map requests wait for MapServer: this one waited ${waited} ms behind your others (at most ${this.deps.settings.maxPerCaller} run at once per caller); try again later`, Math.max(1, Math.ceil(waited / 1000)));
      }
      if (error instanceof MapServerBusyError) throw busy('MapServer is busy; try again', 1);
      if (error instanceof MapServerTimeoutError) throw new AppError('UPSTREAM_TIMEOUT', `MapServer did not answer within ${this.deps.settings.timeoutMs} ms`);
      if (request.signal?.aborted) throw new AppError('UPSTREAM_UNAVAILABLE', 'The client went away before MapServer answered');
      this.log.warn({ err: { message: (error as Error).message } }, 'ows: MapServer failed on a request');
      throw new AppError('UPSTREAM_UNAVAILABLE', 'MapServer failed on this request');
    }
    if (empty && isXml(response) && response.body.includes(PLACEHOLDER_NAME)) response = { ...response, body: Buffer.from(withoutPlaceholder(response.body.toString('utf8'))) };
    return headless(this.answerOf(response, plan, { booleans, extents }), request.method === 'HEAD');
  }

  /**
   * MapServer's answer as the client gets it. Its errors never pass as MapServer wrote them: an
   * exception report is rewritten by the gateway (a 400; storage failures are ours to hide, a
   * 503), its HTML message page and any other text where a map, a document or features were due
   * become the gateway's exception report, and the version banner it puts in XML documents is cut.
   */
  private answerOf(response: CgiResponse, plan: Extract<OwsPlan, { kind: 'kvp' | 'xml' }>, features: Pick<XmlAnswerContext, 'extents'> & { booleans: readonly string[] }): OwsAnswer {
    const contentType = response.headers['content-type'] ?? '';
    if (isXml(response) && isExceptionReport(response.body)) {
      const text = response.body.toString('utf8');
      // A layer that cannot reach its table is a server fault; its message may name the database.
      if (/msPostGIS|database|connect/i.test(text)) {
        this.log.error({ mapserver: text.slice(0, 2000), stderr: response.stderr.slice(0, 2000) }, 'ows: MapServer could not read the storage');
        throw new AppError('SERVICE_UNAVAILABLE', 'The map server could not read this dataset\'s storage; try again later');
      }
      return rewriteExceptionReport(response.body);
    }
    const textual = /^text\/(?:html|plain)\b/i.test(contentType);
    const featureInfo = plan.kind === 'kvp' && plan.request === 'getfeatureinfo';
    if (response.status >= 300 || contentType === '' || (textual && (!featureInfo || response.body.subarray(0, 4096).includes('MapServer Message')))) {
      this.log.warn({ status: response.status, contentType, mapserver: response.body.subarray(0, 500).toString('utf8') }, 'ows: MapServer answered an error page');
      return rewriteMessagePage(response.body, plan.service);
    }
    // Cache-Control is the gateway's to decide (it knows whether the dataset is open data).
    const headers: Record<string, string> = { 'content-type': contentType };
    if (response.headers['content-disposition']) headers['content-disposition'] = response.headers['content-disposition'];
    const body = isXml(response)
      ? rewriteXmlAnswer(response.body, { service: plan.service, request: plan.request, version: plan.version, extents: features.extents })
      : /json/i.test(contentType) ? rewriteJsonFeatures(response.body, features.booleans) : response.body;
    return { status: 200, headers, body };
  }

  /** New aliases reach MapServer with fresh workers; reloads run one after another, never two at once. */
  private reloadWorkers(): Promise<void> {
    const reload = this.reloading.then(() => this.pool?.reload());
    this.reloading = reload.catch(() => undefined);
    return reload;
  }

  /**
   * The route's map, its mapfile written for the current generation. Feature writes do not rewrite
   * it: a GetCapabilities request rewrites a map written more than `extentRefreshMs` ago, so that
   * its layer extents follow the data at the cost of one ST_Extent per collection at most that often.
   */
  private mapFor(route: OwsRoute, capabilities: boolean): Promise<PublishedMap> {
    const alias = aliasOf(route);
    const cached = this.maps.get(alias);
    const fresh = !capabilities || Date.now() - (cached?.writtenAt ?? 0) < this.deps.settings.extentRefreshMs;
    if (cached && cached.generation === this.generation && fresh) return cached.ready;
    const ready = (cached?.ready ?? Promise.resolve()).catch(() => undefined).then(() => this.writeMap(route, alias));
    this.maps.set(alias, { generation: this.generation, writtenAt: Date.now(), ready });
    ready.catch(() => { if (this.maps.get(alias)?.ready === ready) this.maps.delete(alias); });
    return ready;
  }

  private async writeMap(route: OwsRoute, alias: string): Promise<PublishedMap> {
    const [collections, stored, dataset] = await Promise.all([
      listCollections(this.deps.db, route.schema), this.deps.stylesOf(route.datasetId), this.deps.describe(route.datasetId, route.slug),
    ]);
    // What capabilities advertise: the data's extents grown a little (advertised-extent.ts).
    const sridOf = new Map(collections.map((collection) => [collection.name, collection.srid]));
    const extents = new Map([...await collectionExtents(this.deps.db, route.schema, collections)]
      .map(([name, extent]) => [name, extent && advertisedExtent(extent, sridOf.get(name) ?? 4326)] as const));
    const styles = datasetStyles(stored);
    const title = dataset?.name ?? route.slug;
    const keywords = [title, ...(dataset?.apiName ? [dataset.apiName] : []), ...collections.map((collection) => collection.title ?? collection.name)];
    const templates: Record<string, string> = { 'header.html': TEMPLATE_HEADER, 'footer.html': TEMPLATE_FOOTER };
    for (const collection of collections) templates[`${collection.name}.html`] = renderLayerTemplate(collection);
    const input = {
      alias, slug: route.slug, publicBase: route.publicBase, schema: route.schema, collections, extents,
      service: { title, abstract: dataset?.description || null, keywords }, contact: this.deps.settings.contact,
      stylesByLayer: styles.namesByLayer, maxImageSize: this.deps.settings.maxImageSize,
      templates: { header: 'header.html', footer: 'footer.html', layer: (name: string) => `${name}.html` },
    };
    const booleans = [...new Set(collections.flatMap((collection) => Object.keys(collection.properties).filter((name) => collection.properties[name] === 'boolean')))];
    // GeoJSON answers come from a twin map with boolean attributes as text (mapfile.ts), when there are any.
    const jsonAlias = booleans.length > 0 ? jsonAliasOf(alias) : alias;
    const added = await this.directory!.write(alias, renderMapfile(input), templates);
    const jsonAdded = jsonAlias !== alias && await this.directory!.write(jsonAlias, renderMapfile({ ...input, alias: jsonAlias, booleansAsText: true }), templates);
    if (added || jsonAdded) await this.reloadWorkers();
    const publicBase = new URL(route.publicBase);
    const server = { SCRIPT_NAME: publicBase.pathname, SERVER_NAME: publicBase.hostname, SERVER_PORT: publicBase.port || (publicBase.protocol === 'https:' ? '443' : '80') };
    const wgs84 = new Map([...extents].map(([name, extent]) => [name, extent?.wgs84 ?? null] as const));
    return { alias, jsonAlias, styles, empty: collections.length === 0, server, booleans, extents: wgs84 };
  }
}

/** A map as written: its alias, and the styles its layers are drawn with (they change only while a dataset is DRAFT). */
interface PublishedMap {
  alias: string;
  /** The map GeoJSON answers are drawn from (the alias itself when no attribute is boolean). */
  jsonAlias: string; styles: DatasetStyles; empty: boolean; server: Record<'SCRIPT_NAME' | 'SERVER_NAME' | 'SERVER_PORT', string>;
  /** The names of boolean attributes in any collection (GeoJSON answers turn their text into JSON booleans). */
  booleans: string[];
  /** Each collection's WGS 84 extent when the map was written (WFS capabilities advertise it). */
  extents: ReadonlyMap<string, readonly [number, number, number, number] | null>;
}

/** The alias of a map's GeoJSON twin (booleans as text, see mapfile.ts). */
const jsonAliasOf = (alias: string) => `${alias}_json`;

/**
 * Whether MapServer answers this request in GeoJSON: a GetFeature (or GetPropertyValue) with a
 * JSON OUTPUTFORMAT, a GetFeatureInfo with a JSON INFO_FORMAT, an XML GetFeature asking for JSON.
 */
function asksForJson(plan: Extract<OwsPlan, { kind: 'kvp' | 'xml' }>): boolean {
  if (plan.kind === 'xml') return /\boutputFormat\s*=\s*["'][^"']*json/i.test(plan.body.subarray(0, 4096).toString('utf8'));
  const key = plan.request === 'getfeatureinfo' ? 'info_format' : 'outputformat';
  return /json/i.test(plan.params.find((pair) => pair.name.toLowerCase() === key)?.value ?? '');
}

/** A map's alias: unique per dataset and slug, and a plain word for the config file. */
export const aliasOf = (route: Pick<OwsRoute, 'datasetId' | 'slug'>) => `ds_${route.datasetId.replaceAll('-', '')}_${route.slug.replaceAll('-', '_')}`;

const isXml = (response: CgiResponse) => /xml/i.test(response.headers['content-type'] ?? '');

const headless = (answer: OwsAnswer, head: boolean): OwsAnswer => (head ? { ...answer, body: Buffer.alloc(0) } : answer);
