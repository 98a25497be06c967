import type { Database } from '../db/client.js';

/**
 * The seams of the pipeline runtime: what a connector hands over, what a writer stores, and what
 * the runtime learns of a pipeline. `ingest/` never imports `modules/*`; `runtime.ts` (the process
 * wiring) supplies these from the management modules, and the writers from `sta/` and `ows/`.
 */

/** One record as a connector received it, before mapping. */
export interface SourceRecord {
  /**
   * The record: a JSON value (an MQTT payload object, one element of a payload array, one element
   * of an HTTP answer at `records_pointer`, one SQL row as an object of its columns).
   * `undefined` when the payload was not JSON: `text` then holds it and the record is rejected.
   */
  value: unknown;
  /** The payload as text when it was not JSON (invalid UTF-8 replaced), for the rejection. */
  text?: string;
  /** Why the payload could not be read as records (not JSON, too large): the rejection's reason. */
  unreadable?: string;
  /** The MQTT topic it arrived on (the mapping's `$topic`); absent for HTTP and SQL. */
  topic?: string;
  /** When the connector received it (the mapping's `$receivedAt`, the default phenomenonTime). */
  receivedAt: Date;
}

/**
 * Records handed to the runtime together: mapped, written and rejected in one transaction.
 * `deliver` resolves once that transaction committed (the connector may then acknowledge, e.g.
 * send MQTT PUBACKs) and rejects only when the pipeline is stopping (the connector then stops too,
 * acknowledging nothing more: a redelivery finds the records already stored).
 */
export interface SourceBatch {
  records: SourceRecord[];
  /**
   * Where the source stands after these records (SQL: the last `cursor_column` value), saved in
   * the same transaction as the writes it led to; read back with `ConnectorContext.position()`.
   * A JSON value; `undefined` leaves the saved position as it is.
   */
  position?: unknown;
}

/** What a connector reports of its source, shown in the pipeline's `runtimeStatus`. */
export type ConnectorState =
  | { state: 'RUNNING'; message: string }
  /** The source cannot be reached (refused, timed out, an error answer): retried with backoff. */
  | { state: 'RETRYING'; message: string };

/** What the runtime gives a connector for one data source of one running pipeline. */
export interface ConnectorContext {
  pipelineId: string;
  dataSource: DataSourceSpec;
  /** The pipeline's cron schedule (five fields, or six with seconds first), or null: SQL polls every 60 s. */
  schedule: string | null;
  /** Aborted when the pipeline stops (unrelease, delete, restart, lease lost, process shutdown). */
  signal: AbortSignal;
  /** Maps, writes and commits a batch; see `SourceBatch`. A connector may hand over the next batch before the last settled (it is mapped meanwhile); batches of one source are written and settle in the order they were handed over. */
  deliver(batch: SourceBatch): Promise<void>;
  /** The position saved with the last committed batch of this data source (undefined: none yet). */
  position(): Promise<unknown>;
  /**
   * The source's state: RUNNING once connected (or after a successful poll following a failure),
   * RETRYING with a message that names the problem and never a credential.
   */
  report(state: ConnectorState): void;
  log: IngestLog;
}

/** A running reader of one data source. `start` returns once reading began (it does not wait for the source to be reachable). */
export interface Connector {
  /**
   * Stops reading: closes the connection or the timer; in-flight `deliver` calls may still settle.
   * Idempotent. `endSession`: the pipeline stops for good (unrelease, delete), not for a move to
   * another process: an MQTT connector ends its persistent session (unsubscribes) so that the
   * broker keeps nothing for it, since what is published while the dataset is not AVAILABLE is
   * not stored.
   */
  stop(options?: { endSession?: boolean }): Promise<void>;
}

export type ConnectorFactory = (context: ConnectorContext) => Promise<Connector>;

export interface IngestLog {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

/** A data source as the runtime reads it: its configuration with secrets opened (never logged, never shown). */
export interface DataSourceSpec {
  id: string;
  name: string;
  connectorType: 'MQTT' | 'SQL' | 'HTTP';
  configuration: Record<string, unknown>;
}

/** A record after mapping: the target object the mapping's fields built (`{result, Datastream: {name}}`). */
export interface MappedRecord {
  value: Record<string, unknown>;
  /** When the record was received: an Observation's default phenomenonTime. */
  receivedAt: Date;
}

/** What became of one mapped record in a writer. */
export type WriteOutcome =
  | { outcome: 'written' }
  /** Already stored (a redelivery, a repeated poll, a row read again): nothing written. */
  | { outcome: 'duplicate' }
  /** Not valid for the target: `field` is the target path at fault (`result`, `Datastream.name`) or null. */
  | { outcome: 'rejected'; reason: string; field: string | null };

/**
 * Stores mapped records into a dataset's named API, inside the runtime's transaction. One outcome
 * per record, in order. A record that is not valid for the target is rejected without failing
 * the others or the transaction; an error thrown means the whole batch failed (the database went
 * away) and the runtime retries it. `committed` runs after the transaction committed (announce
 * changes to MQTT subscribers, keep what was created in caches); `rolledBack` when it did not.
 */
export interface PayloadWriter {
  /**
   * The work on the records that needs no database (checking them against the target): the
   * runtime calls it before the batch waits for the one before it to commit, so that it overlaps
   * that batch's database work, and hands its result to `write`.
   */
  prepare?(records: readonly MappedRecord[]): unknown;
  write(trx: Database, schema: string, records: readonly MappedRecord[], prepared?: unknown): Promise<WriteResult>;
}

export interface WriteResult {
  outcomes: WriteOutcome[];
  committed(): void;
  rolledBack?(): void;
}
