import type { Config } from './config.js';
import type { Database } from './db/client.js';
import type { Tenant } from './access/bootstrap.js';
import type { TokenVerifier } from './http/token-verifier.js';
import type { SagaRunner } from './jobs/saga-runner.js';
import type { StaServer } from './sta/types.js';
import type { StaChangeFeed } from './data-api/mqtt/change-feed.js';
import type { FeatureStore } from './ows/types.js';
import type { OwsServer } from './ows/ows-server.js';
import type { SecretKeyRing } from './db/secrets.js';
import type { Metrics } from './metrics/registry.js';
import type { PipelineRuntime } from './ingest/runtime.js';
import type { CallerCache } from './access/caller-cache.js';

/** What every module is given: built once at start, passed down (no globals). */
export interface AppContext {
  config: Config;
  db: Database;
  /** The PostgreSQL server's URL (null: embedded PGlite); what LISTEN connections open. */
  databaseUrl: string | null;
  tenant: Tenant;
  verifier: TokenVerifier;
  /**
   * Callers by credential, shared by the management API and the data API of this process: a request
   * costs neither the grants query nor, under load, a read of the access version; a grant changed by
   * this process is seen by its next request, one changed by another process within 0.8 s.
   */
  callers: CallerCache;
  /** The saga worker of this process (started with the management API, stopped before the database closes). */
  sagas: SagaRunner;
  /** Our SensorThings server, shared by the gateway (requests) and the RELEASE saga (provisioning). */
  sta: StaServer;
  /** PostGIS serves this database (PostgreSQL with the extension); never on PGlite. */
  postgis: boolean;
  /** The feature collections of OWS named APIs (needs PostGIS), shared by the gateway and the RELEASE saga. */
  features: FeatureStore;
  /** WFS and WMS of OWS named APIs: MapServer's pool (started by the data API), one generated mapfile per API. */
  ows: OwsServer;
  /** Committed SensorThings writes of every process, for the MQTT subscribers of the gateway. */
  staChanges: StaChangeFeed;
  /** Seals data source secrets at rest and opens them for the pipeline runtime (SECRETS_KEY, SECRETS_KEY_PREVIOUS or a generated key). */
  secrets: SecretKeyRing;
  /** This process's metrics: both listeners count their requests here, GET /metrics serves them. */
  metrics: Metrics;
  /** The pipelines this process runs (those whose lease it holds): started and stopped with the management API, like the sagas. */
  pipelines: PipelineRuntime;
}
