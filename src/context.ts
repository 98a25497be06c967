import type { Tenant } from './access/bootstrap.js';
import type { SagaRunner } from './jobs/saga-runner.js';
import type { GatewayContext } from './data-api/gateway-context.js';
import type { SecretKeyRing } from './db/secrets.js';
import type { PipelineRuntime } from './ingest/runtime.js';

/**
 * What every module is given: built once at start, passed down (no globals). The part the data API
 * gateway uses too (configuration, database, token checks, the payload servers) is declared with
 * it, in data-api/gateway-context.ts.
 */
export interface AppContext extends GatewayContext {
  tenant: Tenant;
  /** The saga worker of this process (started with the management API, stopped before the database closes). */
  sagas: SagaRunner;
  /** PostGIS serves this database (PostgreSQL with the extension); never on PGlite. */
  postgis: boolean;
  /** Seals data source secrets at rest and opens them for the pipeline runtime (SECRETS_KEY, SECRETS_KEY_PREVIOUS or a generated key). */
  secrets: SecretKeyRing;
  /** The pipelines this process runs (those whose lease it holds): started and stopped with the management API, like the sagas. */
  pipelines: PipelineRuntime;
}
