import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type { Config } from './config.js';
import { openDatabase, type ConnectionLog, type Database, type DatabaseTarget } from './db/client.js';
import { CopyOut } from './db/copy-out.js';
import { describeConnectionError, isDatabaseUnavailable } from './db/connection-errors.js';
import { appliedMigrations, hasPendingMigrations, migrateToLatest } from './db/migrate.js';
import { checkDatabasePrivileges } from './db/privileges.js';
import { StartRefusedError } from './db/start-errors.js';
import { bootstrap } from './access/bootstrap.js';
import { createTokenVerifier } from './http/token-verifier.js';
import { CallerCache } from './access/caller-cache.js';
import { clearIdempotencyPlaceholders } from './http/idempotency.js';
import type { AppContext } from './context.js';
import { SagaRunner } from './jobs/saga-runner.js';
import { datasetCatalogueSource, datasetSagas, describeDatasetForOws, namedApiStandardsOf, storageSchemaOf } from './modules/datasets/index.js';
import { createObservationWriter, createStaServer, mqttEndpointsOf } from './sta/index.js';
import { payloadReleaseSteps } from './data-api/release-steps.js';
import { StaChangeFeed } from './data-api/mqtt/change-feed.js';
import type { BrokerStore } from './data-api/gateway-context.js';
import { enablePostgis } from './db/postgis.js';
import { createFeatureStore, createFeatureWriter, GeoPackageMaker, MatchCounts, OwsServer } from './ows/index.js';
import { CatalogueService, ExtentCache, readDatasetData } from './catalogue/index.js';
import { announceRouteChange } from './data-api/route-table.js';
import { stylesOfDataset } from './modules/styles/index.js';
import { resealDataSourceSecrets } from './modules/datasources/index.js';
import { loadSecretKeyRing } from './db/secrets-keys.js';
import { Metrics } from './metrics/registry.js';
import { PipelineRuntime } from './ingest/runtime.js';
import { LocalLeases, PostgresLeases } from './ingest/leases.js';
import type { IngestLog } from './ingest/types.js';
import { createHttpConnector } from './ingest/connectors/http.js';
import { sqlConnector } from './ingest/connectors/sql.js';
import { mqttConnector } from './ingest/connectors/mqtt.js';
import { pipelineCatalog, pipelineSagaSteps } from './modules/pipelines/index.js';
import type { DatasetSagaSteps } from './modules/datasets/index.js';

/** The database stayed unreachable for the whole DATABASE_STARTUP_TIMEOUT. */
export class DatabaseUnreachableError extends StartRefusedError {}

const SILENT: ConnectionLog = { warn: () => {} };
/** How long a GeoPackage download waits for its turn among DOWNLOAD_GPKG_CONCURRENCY before it answers 503. */
const GEOPACKAGE_QUEUE_TIMEOUT_MS = 60_000;

/** The start-up log (pino's child logger in the server); tests pass nothing. */
type RuntimeLog = ConnectionLog & { info?(details: object, message: string): void; error?(details: object, message: string): void };

const ingestLogOf = (log: RuntimeLog): IngestLog => ({
  info: (details, message) => log.info?.(details, message),
  warn: (details, message) => log.warn(details, message),
  error: (details, message) => (log.error ?? log.warn).call(log, details, message),
});

/** Steps of several modules in one transition, in the order given. */
function joinSteps(...parts: DatasetSagaSteps[]): DatasetSagaSteps {
  const joined: DatasetSagaSteps = {};
  for (const part of parts) {
    for (const [type, steps] of Object.entries(part) as Array<[keyof DatasetSagaSteps, NonNullable<DatasetSagaSteps[keyof DatasetSagaSteps]>]>) {
      joined[type] = [...(joined[type] ?? []), ...steps];
    }
  }
  return joined;
}

/**
 * Opens the database, migrates it, bootstraps the tenant and prepares the token verifier: the
 * state every listener of one process shares. The caller closes it with `ctx.db.destroy()`.
 */
export async function createContext(config: Config, target?: DatabaseTarget, log: RuntimeLog = SILENT, pipelineLog: RuntimeLog = log): Promise<AppContext> {
  const where = target ?? { url: config.database.url, dataDir: config.database.dataDir, poolSize: config.database.poolSize, preparedStatements: config.database.preparedStatements };
  const db = openDatabase(where, log);
  try {
    await waitForDatabase(db, config.database.startupTimeoutSeconds, log);
    // Read once: what the privilege check needs to know, and what the migrator refuses when newer.
    const applied = await appliedMigrations(db);
    if (where.url) await checkDatabasePrivileges(db, hasPendingMigrations(applied));
    await migrateToLatest(db, applied);
    if (!where.url) await clearIdempotencyPlaceholders(db);
    const tenant = await bootstrap(db, config.bootstrap);
    // Secrets still in clear (rows from before sealing) or sealed with SECRETS_KEY_PREVIOUS are
    // sealed with the current key before anything reads them; a value no key opens fails the start.
    const secrets = await loadSecretKeyRing(db, config.secrets, where, log);
    await resealDataSourceSecrets(db, secrets);
    const verifier = createTokenVerifier({ issuer: config.oidc.issuer, clientId: config.oidc.clientIds, jwksUrl: config.oidc.jwksUrl });
    const callers = new CallerCache(db, undefined, (error) => log.warn({ err: { message: error.message } }, 'could not record the last use of a personal access token'));
    const metrics = new Metrics(db);
    // Its renders read through a pool of their own too (see openBrokerStore below).
    const staChanges = new StaChangeFeed({ databaseUrl: where.url, cluster: config.mqtt.cluster, maxQueuedMessages: config.mqtt.maxQueuedMessages }, metrics.mqtt, ingestLogOf(log), () => openBrokerStore(log));
    const postgis = await enablePostgis(db, where.url !== null, log);
    const sta = createStaServer({
      db, postgis, limits: config.dataApi.limits, onChange: (change) => staChanges.announce(change),
      mqttEndpoints: mqttEndpointsOf(config.dataApi.baseUrl, config.mqtt.port),
      copyOut: where.url && config.downloads.copyConcurrency > 0 ? new CopyOut({ databaseUrl: where.url, concurrency: config.downloads.copyConcurrency }) : null,
    });
    // On PostgreSQL the MQTT broker's reads (its notifier's, the rights checks before its
    // deliveries) run on a small pool of its own, opened when a broker starts: through the main
    // pool they queued behind the HTTP requests of a busy process, and each message waited as long
    // as the slowest answer. It reads through an STA server of its own on that pool; on PGlite
    // (one session) it shares the main database and server.
    const openBrokerStore = (brokerLog: ConnectionLog): BrokerStore => {
      if (!where.url) return { db, sta, close: async () => {} };
      const own = openDatabase({ url: where.url, dataDir: null, poolSize: 2 }, brokerLog);
      return { db: own, sta: createStaServer({ db: own, postgis, limits: config.dataApi.limits }), close: () => own.destroy() };
    };
    const ows = new OwsServer({
      db, postgis, databaseUrl: where.url, settings: config.ows,
      stylesOf: (datasetId) => stylesOfDataset(db, datasetId),
      describe: (datasetId, slug) => describeDatasetForOws(db, datasetId, slug),
    });
    const catalogue = new CatalogueService({
      source: datasetCatalogueSource(db),
      extents: new ExtentCache(readDatasetData(db, postgis), config.catalogue.extentRefreshMs,
        (datasetId, error) => log.warn({ err: error, datasetId }, 'catalogue: could not read what a dataset\'s data spans')),
      dataApiUrl: config.dataApi.baseUrl,
      settings: config.catalogue,
      staUpstream: config.staUpstream.url !== null,
    });
    // Items pages' numberMatched, told of this process's feature writes by the store and the pipelines.
    const matchCounts = new MatchCounts(1000);
    const features = createFeatureStore({
      db, postgis, catalogueChange: { announce: announceRouteChange, committed: () => ows.invalidate() }, matchCounts,
      describe: (datasetId) => describeDatasetForOws(db, datasetId, ''),
      geopackages: where.url ? new GeoPackageMaker({
        databaseUrl: where.url, concurrency: config.downloads.gpkgConcurrency, timeoutMs: config.downloads.gpkgTimeoutMs,
        queueTimeoutMs: GEOPACKAGE_QUEUE_TIMEOUT_MS, tempDir: config.downloads.tempDir,
      }) : null,
      filterLimits: { maxBytes: config.dataApi.limits.expressionMaxBytes, maxDepth: config.dataApi.limits.expressionMaxDepth },
    });
    // Storage first, then the pipelines that fill it; a deletion stops them before the storage goes.
    const steps = joinSteps(payloadReleaseSteps({ sta, features }, { namedApiStandardsOf, storageSchemaOf }), pipelineSagaSteps());
    const sagas = new SagaRunner(db, datasetSagas(steps), { log });
    const ingestLog = ingestLogOf(pipelineLog);
    const pipelines = new PipelineRuntime({
      db,
      catalog: pipelineCatalog(secrets),
      // A silent process loses its leases after 8 s, or three passes when passes are rarer.
      leases: where.url ? new PostgresLeases(where.url, ingestLog, Math.max(8, Math.ceil((config.pipelines.reconcileMs * 3) / 1000))) : new LocalLeases(),
      writers: { STA: createObservationWriter({ postgis, onChange: (change) => staChanges.announce(change) }), OWS: createFeatureWriter({ postgis, matchCounts }) },
      connectors: { MQTT: mqttConnector, HTTP: createHttpConnector({ maxDepth: config.dataApi.limits.jsonMaxDepth }), SQL: sqlConnector },
      metrics: metrics.pipelines,
      log: ingestLog,
      reconcileMs: config.pipelines.reconcileMs,
    });
    return { config, db, databaseUrl: where.url, tenant, verifier, callers, sagas, sta, postgis, features, ows, catalogue, staChanges, secrets, metrics, pipelines, openBrokerStore };
  } catch (error) {
    await db.destroy();
    throw error;
  }
}

const MAX_RETRY_DELAY_S = 5;

const isServerRefusal = (error: unknown) => typeof (error as { code?: unknown })?.code === 'string' && /^[0-9A-Z]{5}$/.test((error as { code: string }).code);

/**
 * A database that is not up yet (started in the same deployment, restarting) is waited for, with a
 * growing pause and a log line each time, rather than failing the start at once; after the bound
 * the start fails with one line. Other errors (a wrong password, a missing database) fail at once.
 */
async function waitForDatabase(db: Database, timeoutSeconds: number, log: ConnectionLog): Promise<void> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  for (let delaySeconds = 1; ; delaySeconds = Math.min(delaySeconds * 2, MAX_RETRY_DELAY_S)) {
    try {
      await sql`select 1`.execute(db);
      return;
    } catch (error) {
      // The server's own refusal (a wrong password, a database that does not exist, SQLSTATE 28P01,
      // 3D000): waiting will not help, and one line says it. Anything else keeps its stack.
      if (!isDatabaseUnavailable(error)) {
        if (isServerRefusal(error)) throw new StartRefusedError(`database refused the connection: ${describeConnectionError(error)}`, { cause: error });
        throw error;
      }
      const remainingSeconds = Math.ceil((deadline - Date.now()) / 1000);
      if (remainingSeconds <= 0) {
        throw new DatabaseUnreachableError(`database not reachable (${describeConnectionError(error)}); gave up after ${timeoutSeconds} s (DATABASE_STARTUP_TIMEOUT)`, { cause: error });
      }
      const wait = Math.min(delaySeconds, remainingSeconds);
      log.warn({}, `database not reachable (${describeConnectionError(error)}); retrying in ${wait} s, giving up after ${timeoutSeconds} s`);
      await sleep(wait * 1000);
    }
  }
}
