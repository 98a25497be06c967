import type { Config } from '../config.js';
import type { ConnectionLog, Database } from '../db/client.js';
import type { CallerCache } from '../access/caller-cache.js';
import type { TokenVerifier } from '../http/token-verifier.js';
import type { Metrics } from '../metrics/registry.js';
import type { StaServer } from '../sta/types.js';
import type { FeatureStore } from '../ows/types.js';
import type { OwsServer } from '../ows/ows-server.js';
import type { CatalogueService } from '../catalogue/index.js';
import type { StaChangeFeed } from './mqtt/change-feed.js';

/**
 * What the data API gateway and its MQTT broker are given: the part of the process's AppContext
 * (context.ts, which extends this) that they use. Declared here so that data-api/ never imports
 * context.ts, which sits above it.
 */
export interface GatewayContext {
  config: Config;
  db: Database;
  /** The PostgreSQL server's URL (null: embedded PGlite); what LISTEN connections open. */
  databaseUrl: string | null;
  verifier: TokenVerifier;
  /**
   * Callers by credential, shared by the management API and the data API of this process: a request
   * costs neither the grants query nor, under load, a read of the access version; a grant changed by
   * this process is seen by its next request, one changed by another process within 0.8 s.
   */
  callers: CallerCache;
  /** Our SensorThings server, shared by the gateway (requests) and the RELEASE saga (provisioning). */
  sta: StaServer;
  /** The feature collections of OWS named APIs (needs PostGIS), shared by the gateway and the RELEASE saga. */
  features: FeatureStore;
  /** WFS and WMS of OWS named APIs: MapServer's pool (started by the data API), one generated mapfile per API. */
  ows: OwsServer;
  /** The DCAT-AP catalogue of the released open datasets (GET /v1/catalogue, a dataset's IRI with an RDF Accept). */
  catalogue: CatalogueService;
  /** Committed SensorThings writes of every process, for the MQTT subscribers of the gateway. */
  staChanges: StaChangeFeed;
  /** This process's metrics: both listeners count their requests here, GET /metrics serves them. */
  metrics: Metrics;
  /** Opens what the MQTT broker reads through (see BrokerStore), logging to `log`; runtime.ts decides which pool that is. */
  openBrokerStore(log: ConnectionLog): BrokerStore;
}

/**
 * The connections the MQTT broker reads through (its notifier's reads, the rights checks before its
 * deliveries) and a SensorThings server on them for those reads; opened when the broker starts,
 * closed when it stops. Its writes (a PUBLISH that creates an entity) go through the gateway's `sta`.
 */
export interface BrokerStore {
  db: Database;
  sta: StaServer;
  close(): Promise<void>;
}
