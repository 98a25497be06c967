import type { Database } from '../db/client.js';
import type { CopyOut } from '../db/copy-out.js';
import type { QueryLimits } from './query/limits.js';
import type { StaRequest, StaResponse } from './types.js';
import type { Change } from './write-sql.js';

/**
 * What the SensorThings server is built with, and the shape of the operations (`$batch`,
 * `CreateObservations`) it dispatches to. Kept apart from server.ts so that the operations and
 * the server import this, not each other.
 */

export interface StaServerDeps {
  db: Database;
  /** PostGIS functions available (PostgreSQL with the extension); PGlite has none. */
  postgis?: boolean;
  /** `$top` when none is given. */
  pageSize?: number;
  /** The largest page served; a greater `$top` is served as this, with a next link. */
  maxTop?: number;
  /** Called after each commit for every entity created, updated or deleted (the MQTT extension listens). */
  onChange?: (change: Change) => void;
  /**
   * What one request may hold (`config.dataApi.limits`); absent: the contract's defaults. The
   * requests of a `$batch` are each held to the same query limits as a request on its own.
   */
  limits?: StaLimits;
  /** The MQTT broker's URLs, shown in the service root (`mqttEndpointsOf` derives them from the settings). */
  mqttEndpoints?: readonly string[];
  /** On PostgreSQL: streams `observations.csv` with COPY while a slot is free (else keyset batches). */
  copyOut?: CopyOut | null;
}

export interface StaLimits extends QueryLimits {
  batchMaxRequests: number;
}

/** One request served with other deps (a `$batch` atomicity group's transaction as `db`). */
export type ServeWith = (deps: StaServerDeps, request: StaRequest) => Promise<StaResponse>;

/** A request that is not a resource but an operation; `serve` runs the requests it carries. */
export type Operation = (deps: StaServerDeps, request: StaRequest, serve: ServeWith) => Promise<StaResponse>;
