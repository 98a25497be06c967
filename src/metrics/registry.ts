import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { connectionCountsOf, type Database } from '../db/client.js';

/** Which listener answered a request: the management API or the data API gateway. */
export type Listener = 'management' | 'data';

/** What a pipeline did with a record, as the contract names the outcomes. */
export const RECORD_OUTCOMES = ['received', 'written', 'rejected', 'skipped'] as const;
export type RecordOutcome = typeof RECORD_OUTCOMES[number];

/** The label of a request no route matched: one series for every unknown path, never one per path. */
export const UNMATCHED_ROUTE = 'unmatched';

const HTTP_LABELS = ['listener', 'route', 'method', 'status'] as const;

// Node's process metrics describe the process, not an app: collected once per process, into a
// registry of their own (each collectDefaultMetrics call installs a GC observer and an event loop
// monitor that are never removed, so one per app would pile up in a test process).
let processRegistry: Registry | null = null;
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/**
 * The metrics of one process's context, in a registry of their own (tests build many contexts in
 * one process; prom-client's global registry would refuse the second). Both listeners count their
 * requests here; the management API serves them at GET /metrics with the process metrics.
 */
export class Metrics {
  readonly registry = new Registry();

  readonly #httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from the request\'s arrival to its answer, by listener, route pattern, method and status.',
    labelNames: HTTP_LABELS,
    registers: [this.registry],
  });

  readonly pipelines: PipelineMetrics;
  readonly mqtt: MqttMetrics;

  constructor(db: Database) {
    processMetrics();
    const duration = this.#httpDuration;
    new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by listener, route pattern (never the raw path; "unmatched" when no route matched), method and status.',
      labelNames: HTTP_LABELS,
      registers: [this.registry],
      // The histogram counts every request already: copied at scrape time, so that a request costs
      // one observation, and the two never disagree.
      async collect() {
        this.reset();
        for (const { metricName, labels, value } of (await duration.get()).values) {
          if (metricName === 'http_request_duration_seconds_count' && value > 0) this.inc(labels as Record<(typeof HTTP_LABELS)[number], string>, value);
        }
      },
    });
    new Gauge({
      name: 'db_pool_connections',
      help: 'Database connections by state: total open, idle, and requests waiting for one (PGlite: its single connection).',
      labelNames: ['state'] as const,
      registers: [this.registry],
      // Read at scrape time: nothing is counted on the hot path.
      collect() {
        const counts = connectionCountsOf(db);
        if (!counts) return;
        this.set({ state: 'total' }, counts.total);
        this.set({ state: 'idle' }, counts.idle);
        this.set({ state: 'waiting' }, counts.waiting);
      },
    });
    this.pipelines = new PipelineMetrics(this.registry);
    this.mqtt = new MqttMetrics(this.registry);
  }

  /** Counts one answered request: one label object, one observation (http_requests_total is read from it). */
  countRequest(listener: Listener, route: string | undefined, method: string, status: number, elapsedMs: number): void {
    this.#httpDuration.observe({ listener, route: route ?? UNMATCHED_ROUTE, method, status: statusLabel(status) }, elapsedMs / 1000);
  }

  /** The Prometheus text exposition: this context's metrics, then the process's. */
  async text(): Promise<string> {
    const [own, processWide] = await Promise.all([this.registry.metrics(), processMetrics().metrics()]);
    return `${own}\n${processWide}`;
  }

  readonly contentType = this.registry.contentType;
}

const STATUS_LABELS = new Map<number, string>();
const statusLabel = (status: number) => {
  let label = STATUS_LABELS.get(status);
  if (label === undefined) {
    label = String(status);
    STATUS_LABELS.set(status, label);
  }
  return label;
};

/**
 * The pipeline metrics, named here once for the runtime (src/ingest/) to feed: records by outcome,
 * and the age of each pipeline's last record (computed at scrape time from when it arrived). No
 * sample exists until a pipeline starts; from then on every outcome has its series, at 0 until it
 * counts one, so that an alert on `rejected` can be written before the first rejection.
 */
export class PipelineMetrics {
  readonly #records: Counter<'pipeline' | 'outcome'>;
  readonly #lastRecordAt = new Map<string, number>();

  constructor(registry: Registry) {
    this.#records = new Counter({
      name: 'pipeline_records_total',
      help: 'Records of each pipeline by outcome: received from its source, written, rejected (see the rejections), skipped by its filter.',
      labelNames: ['pipeline', 'outcome'] as const,
      registers: [registry],
    });
    const lastRecordAt = this.#lastRecordAt;
    new Gauge({
      name: 'pipeline_last_record_age_seconds',
      help: 'Seconds since each running pipeline last received a record.',
      labelNames: ['pipeline'] as const,
      registers: [registry],
      collect() {
        this.reset();
        const now = Date.now();
        for (const [pipeline, at] of lastRecordAt) this.set({ pipeline }, Math.max(0, (now - at) / 1000));
      },
    });
  }

  /** A pipeline started in this process: each outcome's series exists from now on (at 0 if new). */
  started(pipeline: string): void {
    for (const outcome of RECORD_OUTCOMES) this.#records.inc({ pipeline, outcome }, 0);
  }

  /** Adds `count` records of a pipeline (its id) with that outcome; a received record also dates the pipeline's last record. */
  count(pipeline: string, outcome: RecordOutcome, count = 1, at = Date.now()): void {
    this.#records.inc({ pipeline, outcome }, count);
    if (outcome === 'received') this.#lastRecordAt.set(pipeline, at);
  }

  /** A pipeline that stopped has no last-record age any more (its counters stay, as counters do). */
  stopped(pipeline: string): void {
    this.#lastRecordAt.delete(pipeline);
  }

  /** A deleted pipeline leaves no series behind (the label set stays as small as the pipelines). */
  deleted(pipeline: string): void {
    this.stopped(pipeline);
    for (const outcome of RECORD_OUTCOMES) this.#records.remove({ pipeline, outcome });
  }
}

/**
 * MQTT across replicas (the outbox of rendered changes, see src/data-api/mqtt/outbox.ts): what this
 * process wrote and how often it woke the others, how much it read and how far behind it was, and
 * rendered changes that no subscriber here wanted.
 */
export class MqttMetrics {
  readonly #written: Counter;
  readonly #notifies: Counter;
  readonly #reads: Counter;
  readonly #rowsRead: Counter;
  readonly #unwanted: Counter;
  readonly #lag: Gauge;
  readonly #clusterLag: Gauge;

  constructor(registry: Registry) {
    const counter = (name: string, help: string) => new Counter({ name, help, registers: [registry] });
    this.#written = counter('mqtt_outbox_written_total', 'Rendered changes this process wrote to the MQTT outbox.');
    this.#notifies = counter('mqtt_outbox_notifies_total', 'Wake-ups (NOTIFY) this process sent for its outbox rows: at most one per 10 ms.');
    this.#reads = counter('mqtt_outbox_reads_total', 'Reads of the MQTT outbox by this process (each serves every row written since the last).');
    this.#rowsRead = counter('mqtt_outbox_read_rows_total', 'Outbox rows this process read for its broker.');
    this.#unwanted = counter('mqtt_messages_unwanted_total', 'Rendered changes this process\'s broker dropped for want of a subscriber here.');
    this.#lag = new Gauge({
      name: 'mqtt_outbox_lag_seconds',
      help: 'How far this process\'s broker was behind the outbox at its last read: the age of the oldest row it read then (0 when it found none new).',
      registers: [registry],
    });
    this.#clusterLag = new Gauge({
      name: 'mqtt_cluster_delivery_lag_seconds',
      help: 'MQTT_CLUSTER: how far this process\'s broker was behind the messages Redis brought it, at its last delivery: the age of the oldest one it delivered then (its subscribers\' rights are brought up to date first).',
      registers: [registry],
    });
  }

  written(rows: number): void {
    this.#written.inc(rows);
  }

  notified(): void {
    this.#notifies.inc();
  }

  read(rows: number, lagSeconds: number): void {
    this.#reads.inc();
    this.#rowsRead.inc(rows);
    this.#lag.set(lagSeconds);
  }

  unwanted(count: number): void {
    this.#unwanted.inc(count);
  }

  clusterDelivered(lagSeconds: number): void {
    this.#clusterLag.set(lagSeconds);
  }
}
