import { setTimeout as sleep } from 'node:timers/promises';
import type { Database } from '../db/client.js';
import { compileMapping, type CompiledMapping } from './mapping.js';
import { mapRecord } from './mapper.js';
import { insertRejections, pruneRejections, type Rejection } from './rejections.js';
import { loadPosition, savePosition } from './positions.js';
import { StatusTracker, type RuntimeStatus } from './runtime-status.js';
import type {
  Connector, ConnectorFactory, ConnectorState, DataSourceSpec, IngestLog, MappedRecord, PayloadWriter, SourceBatch,
} from './types.js';

/**
 * One pipeline running in this process: its connectors read, each batch is mapped, written with
 * its rejections and its source position in one transaction that first checks (and holds, until
 * commit) that the dataset is still AVAILABLE, so an unrelease waits for the batch under way and
 * no batch commits after it. A batch that fails for want of the database is retried with backoff
 * until it commits or the pipeline stops; only then does its connector acknowledge it.
 */

export interface PipelineSpec {
  id: string;
  datasetId: string;
  name: string;
  /** The dataset's storage schema. */
  schema: string;
  /** The standard of the named API the pipeline fills; null when the dataset has no API of that slug. */
  standard: 'STA' | 'OWS' | null;
  /** The mapping document its mappingRef names now (null: none). */
  mappingDocument: unknown;
  dataSources: DataSourceSpec[];
  schedule: string | null;
  restartGeneration: number;
}

export interface PipelineRunDeps {
  db: Database;
  writers: Partial<Record<'STA' | 'OWS', PayloadWriter>>;
  connectors: Partial<Record<DataSourceSpec['connectorType'], ConnectorFactory>>;
  /** Inside a batch's transaction: whether the pipeline may still write; holds the dataset row against an unrelease until commit. */
  stillRunnable(trx: Database, pipelineId: string): Promise<boolean>;
  saveStatus(pipelineId: string, status: RuntimeStatus): Promise<void>;
  metrics: { started(pipeline: string): void; count(pipeline: string, outcome: 'received' | 'written' | 'rejected' | 'skipped', n: number): void; stopped(pipeline: string): void };
  log: IngestLog;
  /** The pipeline found it may no longer write (unreleased, a data source unreleased): the runtime reconciles. */
  noLongerRunnable(pipelineId: string): void;
  /** Pause before the n-th retry of a batch (default 250 ms doubling to 10 s). */
  retryDelayMs?: (attempt: number) => number;
}

export class PipelineStopped extends Error {
  constructor() { super('the pipeline is stopping'); }
}

const defaultRetryDelay = (attempt: number) => Math.min(250 * 2 ** (attempt - 1), 10_000);
const PRUNE_EVERY_MS = 60_000;

export class PipelineRun {
  readonly spec: PipelineSpec;
  readonly #deps: PipelineRunDeps;
  readonly #abort = new AbortController();
  readonly #status: StatusTracker;
  readonly #connectors: Connector[] = [];
  readonly #sourceStates = new Map<string, ConnectorState>();
  readonly #inFlight = new Set<Promise<unknown>>();
  /** Per data source, the batch being written: the next one waits for it. */
  readonly #writing = new Map<string, Promise<void>>();
  #writerProblem: string | null = null;
  #lastPrune = 0;

  constructor(spec: PipelineSpec, deps: PipelineRunDeps) {
    this.spec = spec;
    this.#deps = deps;
    const log = deps.log;
    this.#status = new StatusTracker(
      (status) => deps.saveStatus(spec.id, status),
      (status, previous) => log.info(
        { pipeline: spec.id, dataset: spec.datasetId, state: status.state, previous, source: status.source, detail: status.message },
        `pipeline ${spec.name}: ${status.state.toLowerCase()}`,
      ),
    );
  }

  get status(): Readonly<RuntimeStatus> {
    return this.#status.current;
  }

  get stopping(): boolean {
    return this.#abort.signal.aborted;
  }

  /** Compiles the mapping and starts a connector per data source; a pipeline that cannot run is left FAILED (it stays so until restarted). */
  async start(): Promise<void> {
    const problem = this.#startProblem();
    if (typeof problem === 'string') {
      await this.#status.change('FAILED', 'RUNTIME', problem);
      return;
    }
    const { mapping, writer } = problem;
    this.#deps.metrics.started(this.spec.id);
    for (const source of this.spec.dataSources) {
      const factory = this.#deps.connectors[source.connectorType]!;
      try {
        this.#connectors.push(await factory({
          pipelineId: this.spec.id,
          dataSource: source,
          schedule: this.spec.schedule,
          signal: this.#abort.signal,
          deliver: (batch) => this.#track(this.#deliver(source, mapping, writer, batch)),
          position: () => loadPosition(this.#deps.db, this.spec.id, source.id),
          report: (state) => this.#report(source, state),
          log: this.#deps.log,
        }));
      } catch (error) {
        await this.stop('FAILED', `data source ${source.name}: ${(error as Error).message}`);
        return;
      }
    }
  }

  /**
   * Stops reading and waits for the batches under way. `final`: the state to leave (STOPPED with
   * why, FAILED), or null to leave the status as it is (the lease went to another process, which
   * writes its own).
   */
  async stop(final: 'STOPPED' | 'FAILED' | null, message = 'stopped', options: { endSession?: boolean } = {}): Promise<void> {
    // Connectors first, with the options (an MQTT session to end), then everything else that waits on the signal.
    await Promise.allSettled(this.#connectors.map((connector) => connector.stop(options)));
    if (!this.#abort.signal.aborted) this.#abort.abort();
    await Promise.allSettled([...this.#inFlight]);
    this.#status.dispose();
    this.#deps.metrics.stopped(this.spec.id);
    if (final) await this.#status.change(final, 'RUNTIME', message);
  }

  #startProblem(): string | { mapping: CompiledMapping; writer: PayloadWriter } {
    if (this.spec.mappingDocument === null || this.spec.mappingDocument === undefined) return 'the pipeline names no mapping of its dataset';
    const compiled = compileMapping(this.spec.mappingDocument);
    if (!compiled.ok) return `mapping: ${compiled.faults.map((f) => f.message).join('; ')}`;
    if (!this.spec.standard) return 'the pipeline names no named API of its dataset';
    const writer = this.#deps.writers[this.spec.standard];
    if (!writer) return `${this.spec.standard} APIs cannot be written here (OWS needs PostgreSQL with PostGIS)`;
    if (this.spec.dataSources.length === 0) return 'the pipeline reads no data source';
    const unknown = this.spec.dataSources.find((source) => !this.#deps.connectors[source.connectorType]);
    if (unknown) return `data source ${unknown.name}: no connector for ${unknown.connectorType}`;
    return { mapping: compiled.mapping, writer };
  }

  #track<T>(work: Promise<T>): Promise<T> {
    this.#inFlight.add(work);
    void work.finally(() => this.#inFlight.delete(work)).catch(() => {});
    return work;
  }

  #report(source: DataSourceSpec, state: ConnectorState): void {
    if (this.stopping) return;
    this.#sourceStates.set(source.id, state);
    void this.#showState();
  }

  /** RUNNING when every source runs and the writer is fine; else RETRYING naming the first problem. */
  #showState(): Promise<void> {
    if (this.stopping || this.#status.current.state === 'FAILED') return Promise.resolve();
    if (this.#writerProblem) return this.#status.change('RETRYING', 'WRITER', this.#writerProblem);
    for (const source of this.spec.dataSources) {
      const state = this.#sourceStates.get(source.id);
      if (state?.state === 'RETRYING') return this.#status.change('RETRYING', 'CONNECTOR', `data source ${source.name}: ${state.message}`);
    }
    // STARTING until every source said how it is.
    if (this.spec.dataSources.some((source) => !this.#sourceStates.has(source.id))) return Promise.resolve();
    return this.#status.change('RUNNING', 'CONNECTOR', 'running');
  }

  async #deliver(source: DataSourceSpec, mapping: CompiledMapping, writer: PayloadWriter, batch: SourceBatch): Promise<void> {
    if (this.stopping) throw new PipelineStopped();
    const mapped: MappedRecord[] = [];
    const mappedFrom: number[] = [];
    const rejections: Rejection[] = [];
    let skipped = 0;
    const bindings = { dataSource: { id: source.id, name: source.name } };
    const { records } = batch;
    for (let index = 0; index < records.length; index++) {
      const record = records[index]!;
      const outcome = mapRecord(mapping, record, bindings);
      const result = outcome instanceof Promise ? await outcome : outcome;
      if (result.kind === 'mapped') {
        mapped.push(result.record);
        mappedFrom.push(index);
      } else if (result.kind === 'skipped') skipped++;
      else rejections.push({ dataSourceId: source.id, receivedAt: record.receivedAt, reason: result.reason, field: result.field, record: record.value ?? record.text ?? null });
    }
    const lastReceived = batch.records.at(-1)?.receivedAt;

    // Mapped and checked at once; written after the batch before it from the same source (commits stay in order).
    const prepared = mapped.length > 0 ? writer.prepare?.(mapped) : undefined;
    const before = this.#writing.get(source.id) ?? Promise.resolve();
    let written!: () => void;
    const mine = new Promise<void>((resolve) => (written = resolve));
    this.#writing.set(source.id, mine);
    try {
      await before;
      await this.#write(source, writer, batch, { mapped, prepared }, mappedFrom, rejections, skipped, lastReceived);
    } finally {
      written();
      if (this.#writing.get(source.id) === mine) this.#writing.delete(source.id);
    }
  }

  async #write(
    source: DataSourceSpec, writer: PayloadWriter, batch: SourceBatch, { mapped, prepared }: { mapped: MappedRecord[]; prepared: unknown }, mappedFrom: number[],
    rejections: Rejection[], skipped: number, lastReceived: Date | undefined,
  ): Promise<void> {
    const { id: pipelineId } = this.spec;

    for (let attempt = 1; ; attempt++) {
      if (this.stopping) throw new PipelineStopped();
      let written = 0;
      let duplicates = 0;
      const writeRejections = [...rejections];
      let result: Awaited<ReturnType<PayloadWriter['write']>> | null = null;
      let runnable = true;
      try {
        await this.#deps.db.transaction().execute(async (trx) => {
          const db = trx as Database;
          runnable = await this.#deps.stillRunnable(db, pipelineId);
          if (!runnable) return;
          if (mapped.length > 0) {
            result = await writer.write(db, this.spec.schema, mapped, prepared);
            for (const [i, outcome] of result.outcomes.entries()) {
              if (outcome.outcome === 'written') written++;
              else if (outcome.outcome === 'duplicate') duplicates++;
              else {
                const record = batch.records[mappedFrom[i]!]!;
                writeRejections.push({ dataSourceId: source.id, receivedAt: record.receivedAt, reason: outcome.reason, field: outcome.field, record: record.value });
              }
            }
          }
          await insertRejections(db, pipelineId, writeRejections);
          if (batch.position !== undefined) await savePosition(db, pipelineId, source.id, batch.position);
        });
      } catch (error) {
        (result as Awaited<ReturnType<PayloadWriter['write']>> | null)?.rolledBack?.();
        this.#writerProblem = `the batch could not be written (${describe(error)}); retrying`;
        void this.#showState();
        if (attempt === 1) this.#deps.log.warn({ pipeline: pipelineId, err: describe(error) }, `pipeline ${this.spec.name}: a batch could not be written; retrying`);
        try {
          await sleep((this.#deps.retryDelayMs ?? defaultRetryDelay)(attempt), undefined, { signal: this.#abort.signal });
        } catch {
          throw new PipelineStopped();
        }
        continue;
      }
      if (!runnable) {
        this.#deps.noLongerRunnable(pipelineId);
        throw new PipelineStopped();
      }
      (result as Awaited<ReturnType<PayloadWriter['write']>> | null)?.committed();
      this.#count(batch.records.length, written, writeRejections.length, skipped + duplicates, lastReceived);
      if (this.#writerProblem) {
        this.#writerProblem = null;
        void this.#showState();
      }
      if (writeRejections.length > 0 && Date.now() - this.#lastPrune > PRUNE_EVERY_MS) {
        this.#lastPrune = Date.now();
        void pruneRejections(this.#deps.db, pipelineId).catch(() => {});
      }
      return;
    }
  }

  #count(received: number, written: number, rejected: number, skipped: number, lastReceived: Date | undefined): void {
    const { id } = this.spec;
    const counts = { received, written, rejected, skipped } as const;
    for (const [outcome, n] of Object.entries(counts) as Array<[keyof typeof counts, number]>) {
      if (n === 0) continue;
      this.#status.count(outcome, n, outcome === 'received' ? lastReceived : undefined);
      this.#deps.metrics.count(id, outcome, n);
    }
  }
}

function describe(error: unknown): string {
  const { code, message } = (error ?? {}) as { code?: string; message?: string };
  const text = typeof message === 'string' && message.length > 0 ? message.slice(0, 300) : 'unknown error';
  return code ? `${text} (${code})` : text;
}
