import { isIP } from 'node:net';
import { Type, type Static } from 'typebox';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { parseRedisAddress, RedisAddressError, type RedisAddress } from './util/redis-address.js';

// ajv-formats ships CommonJS; under NodeNext its default export is the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

const Port = Type.Integer({ minimum: 0, maximum: 65535 });
const HttpUrl = Type.String({ pattern: '^https?://[^\\s/]+(/[^\\s]*)?$' });

/** The environment the program reads, as the contract lists it. Unknown variables are ignored. */
const EnvSchema = Type.Object({
  NODE_ENV: Type.String({ default: 'development' }),
  HOST: Type.String({ default: '0.0.0.0', minLength: 1 }),
  PORT: Type.Optional(Port),
  BASE_URL: Type.Optional(HttpUrl),
  DATA_PORT: Type.Optional(Port),
  DATA_API_URL: Type.Optional(HttpUrl),
  // A port or `off`; checked below, where the message can say both.
  MQTT_PORT: Type.String({ default: '1884' }),
  IDP_PORT: Type.Optional(Port),
  IDP_URL: Type.Optional(HttpUrl),
  DEV_IDP: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  DEV_IDP_PASSWORD: Type.String({ default: 'dev', minLength: 1 }),
  DEV_IDP_TTL: Type.Integer({ default: 300, minimum: 10, maximum: 86_400 }),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  DATA_DIR: Type.String({ default: './data', minLength: 1 }),
  DATABASE_STARTUP_TIMEOUT: Type.Integer({ default: 60, minimum: 0, maximum: 3600 }),
  // Pooled PostgreSQL connections per process (LISTEN, lease and SQL-source connections come on top).
  DATABASE_POOL_SIZE: Type.Integer({ default: 10, minimum: 1, maximum: 500 }),
  DATABASE_PREPARED_STATEMENTS: Type.Integer({ default: 200, minimum: 0, maximum: 10_000 }),
  OIDC_ISSUER: Type.Optional(HttpUrl),
  // The issuer's signing keys at another address than its discovery document names (an in-cluster URL).
  OIDC_JWKS_URL: Type.Optional(HttpUrl),
  // A comma-separated list: a deployment may accept its portal's client and `api-access` alike.
  OIDC_CLIENT_ID: Type.String({ default: 'api-access', minLength: 1 }),
  BOOTSTRAP_ADMIN_EMAIL: Type.String({ default: 'admin@example.com', format: 'email' }),
  TENANT_ID: Type.Optional(Type.String({ format: 'uuid' })),
  TENANT_NAME: Type.String({ default: 'default', minLength: 1, maxLength: 255 }),
  CORS_ORIGINS: Type.String({ default: '' }),
  // SensorThings upstream mode: an existing FROST-Server answers STA named APIs instead of ours.
  STA_UPSTREAM_URL: Type.Optional(HttpUrl),
  STA_UPSTREAM_ORIGINS: Type.String({ default: '' }),
  UPSTREAM_TIMEOUT_MS: Type.Integer({ default: 30_000, minimum: 100, maximum: 600_000 }),
  // MapServer, the OWS downstream: its FastCGI pool, where its mapfiles go, how long a request may take.
  OWS_WORKERS: Type.Integer({ default: 2, minimum: 1, maximum: 64 }),
  OWS_MAP_DIR: Type.Optional(Type.String({ minLength: 1 })),
  OWS_TIMEOUT_MS: Type.Integer({ default: 30_000, minimum: 100, maximum: 600_000 }),
  // Limits of the data API (the contract's "Limits of the data API"): a request beyond one answers 400.
  DATA_API_JSON_MAX_DEPTH: Type.Integer({ default: 64, minimum: 1, maximum: 1024 }),
  // The expression maxima are what the database takes: PGlite's stack gives out near 300 nested
  // levels, and a query holds at most 65,535 bound parameters (every literal is one).
  STA_EXPRESSION_MAX_BYTES: Type.Integer({ default: 8192, minimum: 64, maximum: 65_536 }),
  STA_EXPRESSION_MAX_DEPTH: Type.Integer({ default: 64, minimum: 1, maximum: 200 }),
  STA_EXPAND_MAX_DEPTH: Type.Integer({ default: 8, minimum: 1, maximum: 64 }),
  STA_EXPAND_MAX_BYTES: Type.Integer({ default: 8192, minimum: 64, maximum: 65_536 }),
  STA_BATCH_MAX_REQUESTS: Type.Integer({ default: 1000, minimum: 1, maximum: 100_000 }),
  // Fair map work: MapServer requests running per caller while another waits (idle workers take any), how long one may wait, the largest image side.
  OWS_MAX_PER_CALLER: Type.Integer({ default: 2, minimum: 1, maximum: 64 }),
  OWS_QUEUE_TIMEOUT_MS: Type.Integer({ default: 10_000, minimum: 100, maximum: 600_000 }),
  OWS_MAX_IMAGE_SIZE: Type.Integer({ default: 4096, minimum: 64, maximum: 16_384 }),
  // An OGC request POSTed as a form or an XML document (a GET's query string is bounded by the HTTP header limit).
  OWS_MAX_BODY_BYTES: Type.Integer({ default: 1_048_576, minimum: 1024, maximum: 33_554_432 }),
  // The contact every OWS capabilities document names (WMS ContactInformation, WFS ServiceProvider).
  OWS_CONTACT_ORGANIZATION: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  OWS_CONTACT_EMAIL: Type.Optional(Type.String({ minLength: 3, maxLength: 200, pattern: '^[^\\s@]+@[^\\s@]+$' })),
  // How old a map's layer extents may grow before a capabilities request computes them again.
  OWS_EXTENT_REFRESH_MS: Type.Integer({ default: 30_000, minimum: 0, maximum: 3_600_000 }),
  // The DCAT-AP catalogue of the released open datasets (GET {DATA_API_URL}/v1/catalogue): what it
  // says of itself and its defaults for the datasets' records. Defaults come from TENANT_NAME.
  CATALOGUE_TITLE: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
  CATALOGUE_DESCRIPTION: Type.Optional(Type.String({ minLength: 1, maxLength: 4000 })),
  CATALOGUE_PUBLISHER_NAME: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
  CATALOGUE_PUBLISHER_URI: Type.Optional(HttpUrl),
  CATALOGUE_CONTACT_EMAIL: Type.Optional(Type.String({ minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$' })),
  CATALOGUE_LANGUAGE: Type.String({ default: 'ENG', pattern: '^[A-Z0-9_]{2,20}$' }),
  CATALOGUE_HOMEPAGE: Type.Optional(HttpUrl),
  CATALOGUE_PAGE_SIZE: Type.Integer({ default: 100, minimum: 1, maximum: 1000 }),
  CATALOGUE_DEFAULT_LICENSE: Type.String({ default: 'CC_BY_4_0', pattern: '^[A-Za-z0-9_.-]{1,64}$' }),
  // How old a dataset's spatial and temporal extent (from its data) may grow before the catalogue computes it again.
  CATALOGUE_EXTENT_REFRESH_MS: Type.Integer({ default: 60_000, minimum: 0, maximum: 86_400_000 }),
  // Bulk downloads: GeoPackages made at once per process (ogr2ogr runs; more wait up to a minute, then 503),
  // how long one may take, and where their files are made (default: the system's temporary folder).
  DOWNLOAD_GPKG_CONCURRENCY: Type.Integer({ default: 2, minimum: 1, maximum: 64 }),
  DOWNLOAD_GPKG_TIMEOUT_MS: Type.Integer({ default: 600_000, minimum: 1000, maximum: 86_400_000 }),
  // observations.csv streamed by COPY at once per process, each on a database connection of its own
  // for as long as its client reads (PostgreSQL only); more are read in keyset batches. 0: never COPY.
  DOWNLOAD_COPY_CONCURRENCY: Type.Integer({ default: 4, minimum: 0, maximum: 64 }),
  DOWNLOAD_TEMP_DIR: Type.Optional(Type.String({ minLength: 1 })),
  // The MQTT broker: packet sizes before and after CONNACK, the CONNECT deadline, connection caps.
  MQTT_MAX_CONNECT_BYTES: Type.Integer({ default: 65_536, minimum: 1024, maximum: 16_777_216 }),
  MQTT_MAX_PACKET_BYTES: Type.Integer({ default: 1_048_576, minimum: 1024, maximum: 268_435_455 }),
  MQTT_CONNECT_TIMEOUT_MS: Type.Integer({ default: 10_000, minimum: 100, maximum: 600_000 }),
  MQTT_MAX_CONNECTIONS: Type.Integer({ default: 10_000, minimum: 1, maximum: 1_000_000 }),
  MQTT_MAX_CONNECTIONS_PER_ADDRESS: Type.Integer({ default: 1000, minimum: 1, maximum: 1_000_000 }),
  // Messages kept for a persistent session (clean session 0) while its client is away: its memory is the process's.
  MQTT_MAX_QUEUED_MESSAGES: Type.Integer({ default: 1000, minimum: 0, maximum: 1_000_000 }),
  // The brokers of all replicas as one, through Redis (contract "MQTT across replicas"); unset: PostgreSQL alone.
  MQTT_CLUSTER: Type.Optional(Type.String({ minLength: 1 })),
  // Pipelines: how often each process looks for pipelines to start, stop or take over (with the lease
  // timeout it bounds a takeover after a process died).
  PIPELINE_RECONCILE_MS: Type.Integer({ default: 1000, minimum: 50, maximum: 60_000 }),
  // Whether `api` and `all` processes run the saga workers and the pipeline runtime (`worker` always
  // does): `off` where worker replicas do it, so that request-serving replicas scale apart.
  BACKGROUND_WORK: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  // The reverse proxies whose X-Forwarded-* headers are believed: a hop count or addresses/CIDRs; checked below.
  TRUST_PROXY: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  // GET /metrics: open like /health/* unless set; then scrapers send it as a bearer token.
  // No bound that could fail: a rejected value would be echoed in the error line, and this one is a secret.
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 1 })),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)),
    { default: 'info' },
  ),
});
type Env = Static<typeof EnvSchema>;

export interface Config {
  production: boolean;
  host: string;
  api: { port: number; baseUrl: string };
  /** `limits`: what one payload request may hold (JSON nesting, OData expressions, `$expand`, `$batch`). */
  dataApi: { port: number; baseUrl: string; corsOrigins: string[]; limits: DataApiLimits };
  /**
   * The SensorThings MQTT broker's TCP port (null: MQTT_PORT=off; the WebSocket path stays), and its
   * limits: packet bytes before CONNACK (`maxConnectBytes`) and after, the CONNECT deadline, and the
   * connections it accepts in all and per client address; `cluster`: the Redis its brokers cluster
   * on (MQTT_CLUSTER: a server, or a master found through Sentinel), null on PostgreSQL alone.
   */
  mqtt: { port: number | null; maxConnectBytes: number; maxPacketBytes: number; connectTimeoutMs: number; maxConnections: number; maxConnectionsPerAddress: number; maxQueuedMessages: number; cluster: RedisAddress | null };
  /**
   * `upstreamUrl`: the SensorThings service every STA named API without its own upstream proxies to
   * (null: our own server). `upstreamOrigins`: the origins a named API's `upstreamUrl` may name
   * (with the global one's): a data steward cannot point the gateway at an arbitrary host.
   */
  staUpstream: { url: string | null; origins: string[]; timeoutMs: number };
  idp: { enabled: boolean; port: number; url: string; password: string; tokenTtlSeconds: number };
  /**
   * MapServer's FastCGI workers per data-API process, its mapfile folder (null: a fresh temp folder), its
   * request timeout; fair map work: requests running per caller, how long one may queue, the largest
   * WIDTH or HEIGHT.
   */
  ows: { workers: number; mapDir: string | null; timeoutMs: number; maxPerCaller: number; queueTimeoutMs: number; maxImageSize: number; maxBodyBytes: number;
    contact: { organization: string | null; email: string | null }; extentRefreshMs: number };
  /** The DCAT-AP catalogue: what it says of itself, its page size, the defaults of its records, how long a dataset's data extent is kept. */
  catalogue: {
    title: string; description: string; publisher: { name: string; uri: string | null }; contactEmail: string; language: string;
    homepage: string; pageSize: number; defaultLicense: string; extentRefreshMs: number;
  };
  /**
   * Bulk downloads: GeoPackages made at once per process, how long one may take, where their files
   * are made (null: the system's temporary folder); CSV downloads streamed by COPY at once.
   */
  downloads: { gpkgConcurrency: number; gpkgTimeoutMs: number; tempDir: string | null; copyConcurrency: number };
  /** startupTimeoutSeconds: how long a start waits for an unreachable database (0: not at all); poolSize: pooled connections per process; preparedStatements: statement texts run as named statements (0: none). */
  database: { url: string | null; dataDir: string; startupTimeoutSeconds: number; poolSize: number; preparedStatements: number };
  /**
   * The keys that seal data source secrets at rest: `key` (SECRETS_KEY) seals and opens,
   * `previousKey` (SECRETS_KEY_PREVIOUS) still opens during a rotation. Null `key`: a key generated
   * at the first start and kept with the database.
   */
  secrets: { key: Buffer | null; previousKey: Buffer | null };
  /** `clientIds`: every client whose tokens are accepted (OIDC_CLIENT_ID); `clientId`: the first of them. */
  /** `jwksUrl`: where the signing keys are fetched (OIDC_JWKS_URL); null: the `jwks_uri` of `{issuer}/.well-known/openid-configuration`. */
  oidc: { issuer: string; clientId: string; clientIds: string[]; jwksUrl: string | null };
  bootstrap: { adminEmail: string; tenantId: string | null; tenantName: string };
  /** `token`: the bearer token GET /metrics requires (METRICS_TOKEN); null: open like /health/*. */
  metrics: { token: string | null };
  pipelines: { reconcileMs: number };
  /** Whether `api` and `all` processes run the sagas and pipelines (BACKGROUND_WORK); `worker` always does. */
  backgroundWork: boolean;
  /**
   * The reverse proxies in front (TRUST_PROXY) whose X-Forwarded-For/-Proto/-Host are believed: the
   * number of hops, or the addresses and CIDRs of the proxies; null: none (the TCP peer is the client).
   */
  trustProxy: TrustedProxies | null;
  logLevel: string;
}

/** The contract's "Limits of the data API" for payload requests; each is a setting. */
export interface DataApiLimits {
  /** JSON bodies nest at most this many levels (DATA_API_JSON_MAX_DEPTH). */
  jsonMaxDepth: number;
  /** A `$filter`, `$orderby` or `$select` value: bytes and nesting levels. */
  expressionMaxBytes: number;
  expressionMaxDepth: number;
  /** `$expand`: nesting levels and bytes. */
  expandMaxDepth: number;
  expandMaxBytes: number;
  /** Requests in one `$batch`. */
  batchMaxRequests: number;
}

export type TrustedProxies = { hops: number } | { addresses: string[] };

export class ConfigError extends Error {}

const listOf = (commaSeparated: string) => commaSeparated.split(',').map((item) => item.trim()).filter(Boolean);

const withoutTrailingSlash = (url: string) => url.replace(/\/+$/, '');

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    throw new ConfigError(`Invalid configuration: STA_UPSTREAM_ORIGINS must list URLs (got ${JSON.stringify(url)})`);
  }
}

/**
 * Validates the environment once and derives every default that depends on another setting.
 * Throws ConfigError with one line naming the offending setting.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const ajv = new Ajv({ coerceTypes: true, useDefaults: true, allErrors: false, strict: false });
  addFormats(ajv);
  const validate = ajv.compile<Env>(EnvSchema);
  const candidate: Record<string, unknown> = {};
  for (const key of Object.keys(EnvSchema.properties)) {
    const value = env[key];
    if (value !== undefined && value !== '') candidate[key] = value;
  }
  if (!validate(candidate)) {
    const error = validate.errors![0]!;
    const setting = error.instancePath.replace(/^\//, '') || String(error.params['missingProperty'] ?? '');
    throw new ConfigError(`Invalid configuration: ${setting} ${error.message} (got ${JSON.stringify(String(candidate[setting]).replace(/\/\/[^/@\s]*@/, '//***@'))})`); // credentials in a URL stay out of the message
  }
  const e = candidate as Env;
  const clientIds = listOf(e.OIDC_CLIENT_ID);
  if (clientIds.length === 0) throw new ConfigError(`Invalid configuration: OIDC_CLIENT_ID must name at least one client (got ${JSON.stringify(e.OIDC_CLIENT_ID)})`);
  const port = e.PORT ?? 8080;
  const dataPort = e.DATA_PORT ?? 8081;
  const idpPort = e.IDP_PORT ?? 8090;
  const idpUrl = withoutTrailingSlash(e.IDP_URL ?? `http://localhost:${idpPort}`);
  const production = e.NODE_ENV === 'production';
  const mqttPort = parseMqttPort(e.MQTT_PORT);
  return {
    production,
    host: e.HOST,
    api: { port, baseUrl: withoutTrailingSlash(e.BASE_URL ?? `http://localhost:${port}`) },
    dataApi: {
      port: dataPort,
      baseUrl: withoutTrailingSlash(e.DATA_API_URL ?? `http://localhost:${dataPort}`),
      corsOrigins: listOf(e.CORS_ORIGINS),
      limits: {
        jsonMaxDepth: e.DATA_API_JSON_MAX_DEPTH,
        expressionMaxBytes: e.STA_EXPRESSION_MAX_BYTES,
        expressionMaxDepth: e.STA_EXPRESSION_MAX_DEPTH,
        expandMaxDepth: e.STA_EXPAND_MAX_DEPTH,
        expandMaxBytes: e.STA_EXPAND_MAX_BYTES,
        batchMaxRequests: e.STA_BATCH_MAX_REQUESTS,
      },
    },
    mqtt: {
      port: mqttPort,
      maxConnectBytes: e.MQTT_MAX_CONNECT_BYTES,
      maxPacketBytes: e.MQTT_MAX_PACKET_BYTES,
      connectTimeoutMs: e.MQTT_CONNECT_TIMEOUT_MS,
      maxConnections: e.MQTT_MAX_CONNECTIONS,
      maxConnectionsPerAddress: e.MQTT_MAX_CONNECTIONS_PER_ADDRESS,
      maxQueuedMessages: e.MQTT_MAX_QUEUED_MESSAGES,
      cluster: parseMqttCluster(e.MQTT_CLUSTER),
    },
    staUpstream: {
      url: e.STA_UPSTREAM_URL ? withoutTrailingSlash(e.STA_UPSTREAM_URL) : null,
      origins: [...new Set([...listOf(e.STA_UPSTREAM_ORIGINS).map(originOf), ...(e.STA_UPSTREAM_URL ? [originOf(e.STA_UPSTREAM_URL)] : [])])],
      timeoutMs: e.UPSTREAM_TIMEOUT_MS,
    },
    idp: {
      enabled: !production && e.DEV_IDP === 'on',
      port: idpPort,
      url: idpUrl,
      password: e.DEV_IDP_PASSWORD,
      tokenTtlSeconds: e.DEV_IDP_TTL,
    },
    ows: {
      workers: e.OWS_WORKERS, mapDir: e.OWS_MAP_DIR ?? null, timeoutMs: e.OWS_TIMEOUT_MS,
      maxPerCaller: e.OWS_MAX_PER_CALLER, queueTimeoutMs: e.OWS_QUEUE_TIMEOUT_MS, maxImageSize: e.OWS_MAX_IMAGE_SIZE,
      maxBodyBytes: e.OWS_MAX_BODY_BYTES,
      contact: { organization: e.OWS_CONTACT_ORGANIZATION ?? null, email: e.OWS_CONTACT_EMAIL ?? null },
      extentRefreshMs: e.OWS_EXTENT_REFRESH_MS,
    },
    catalogue: {
      title: e.CATALOGUE_TITLE ?? `${e.TENANT_NAME} open data`,
      description: e.CATALOGUE_DESCRIPTION ?? `The open datasets ${e.TENANT_NAME} publishes: their APIs and bulk downloads.`,
      publisher: { name: e.CATALOGUE_PUBLISHER_NAME ?? e.TENANT_NAME, uri: e.CATALOGUE_PUBLISHER_URI ?? null },
      // A contact is mandatory for High-Value Datasets: the OWS operator's, else the bootstrap administrator's.
      contactEmail: e.CATALOGUE_CONTACT_EMAIL ?? e.OWS_CONTACT_EMAIL ?? e.BOOTSTRAP_ADMIN_EMAIL.toLowerCase(),
      language: e.CATALOGUE_LANGUAGE,
      homepage: e.CATALOGUE_HOMEPAGE ?? withoutTrailingSlash(e.DATA_API_URL ?? `http://localhost:${dataPort}`),
      pageSize: e.CATALOGUE_PAGE_SIZE,
      defaultLicense: e.CATALOGUE_DEFAULT_LICENSE,
      extentRefreshMs: e.CATALOGUE_EXTENT_REFRESH_MS,
    },
    downloads: { gpkgConcurrency: e.DOWNLOAD_GPKG_CONCURRENCY, gpkgTimeoutMs: e.DOWNLOAD_GPKG_TIMEOUT_MS, tempDir: e.DOWNLOAD_TEMP_DIR ?? null, copyConcurrency: e.DOWNLOAD_COPY_CONCURRENCY },
    database: { url: e.DATABASE_URL ?? null, dataDir: e.DATA_DIR, startupTimeoutSeconds: e.DATABASE_STARTUP_TIMEOUT, poolSize: e.DATABASE_POOL_SIZE, preparedStatements: e.DATABASE_PREPARED_STATEMENTS },
    secrets: { key: parseSecretsKey(env, 'SECRETS_KEY'), previousKey: parseSecretsKey(env, 'SECRETS_KEY_PREVIOUS') },
    oidc: { issuer: withoutTrailingSlash(e.OIDC_ISSUER ?? `${idpUrl}/realms/platform`), clientId: clientIds[0]!, clientIds, jwksUrl: e.OIDC_JWKS_URL ?? null },
    bootstrap: { adminEmail: e.BOOTSTRAP_ADMIN_EMAIL.toLowerCase(), tenantId: e.TENANT_ID?.toLowerCase() ?? null, tenantName: e.TENANT_NAME },
    metrics: { token: e.METRICS_TOKEN ?? null },
    pipelines: { reconcileMs: e.PIPELINE_RECONCILE_MS },
    backgroundWork: e.BACKGROUND_WORK === 'on',
    trustProxy: e.TRUST_PROXY === undefined ? null : parseTrustProxy(e.TRUST_PROXY),
    logLevel: e.LOG_LEVEL,
  };
}

// 32 bytes in base64 (standard or URL alphabet, padding optional): 43 characters, the last one
// carrying 2 bits of padding (so it is one of these 16), then at most one `=`.
const BASE64_32_BYTES = /^[A-Za-z0-9+/_-]{42}[AEIMQUYcgkosw048]=?$/;

/**
 * A key setting, checked outside the schema: the schema's messages quote the value, and a key
 * must never reach a log. Null when unset.
 */
function parseSecretsKey(env: NodeJS.ProcessEnv, setting: 'SECRETS_KEY' | 'SECRETS_KEY_PREVIOUS'): Buffer | null {
  const text = env[setting]?.trim();
  if (!text) return null;
  if (!BASE64_32_BYTES.test(text)) {
    const decoded = /^[A-Za-z0-9+/_-]+={0,2}$/.test(text) ? `, which decodes to ${Buffer.from(text, 'base64').length} bytes` : ', which is not base64';
    throw new ConfigError(`Invalid configuration: ${setting} must be 32 bytes in base64, such as the output of \`openssl rand -base64 32\` (got ${text.length} characters${decoded})`);
  }
  return Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}

/**
 * TRUST_PROXY: `1`..`10` hops, or a comma list of addresses, CIDRs and proxy-addr's names (`loopback`,
 * `linklocal`, `uniquelocal`). `true` (trust every hop) is refused: any client could then choose the
 * address the per-address limits see.
 */
function parseTrustProxy(value: string): TrustedProxies {
  const text = value.trim();
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    if (hops < 1 || hops > 10) throw new ConfigError(`Invalid configuration: TRUST_PROXY must be a hop count from 1 to 10 or a list of proxy addresses (got ${JSON.stringify(value)})`);
    return { hops };
  }
  const addresses = listOf(text);
  const invalid = addresses.find((address) => !isProxyAddress(address));
  if (addresses.length === 0 || invalid !== undefined) {
    throw new ConfigError(`Invalid configuration: TRUST_PROXY must be a hop count from 1 to 10 or a comma-separated list of addresses and CIDRs (got ${JSON.stringify(invalid ?? value)})`);
  }
  return { addresses };
}

const PROXY_ADDRESS_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function isProxyAddress(text: string): boolean {
  if (PROXY_ADDRESS_NAMES.has(text)) return true;
  const [address = '', bits, extra] = text.split('/');
  if (extra !== undefined) return false;
  const family = isIP(address);
  if (family === 0) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

/** One Redis server's URL, or a Sentinel deployment's address list (util/redis-address.ts). */
function parseMqttCluster(value: string | undefined): RedisAddress | null {
  if (value === undefined || value.trim() === '') return null;
  try {
    return parseRedisAddress(value);
  } catch (error) {
    if (!(error instanceof RedisAddressError)) throw error;
    throw new ConfigError(`Invalid configuration: MQTT_CLUSTER ${error.message}`);
  }
}

function parseMqttPort(value: string): number | null {
  const text = value.trim().toLowerCase();
  if (text === 'off') return null;
  if (!/^\d{1,5}$/.test(text) || Number(text) > 65535) {
    throw new ConfigError(`Invalid configuration: MQTT_PORT must be a port number (0-65535) or off (got ${JSON.stringify(value)})`);
  }
  return Number(text);
}
