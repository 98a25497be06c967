import type { Database } from '../db/client.js';
import type { Leases } from './leases.js';
import { PipelineRun, type PipelineRunDeps, type PipelineSpec } from './pipeline-run.js';
import type { RuntimeStatus } from './runtime-status.js';
import type { IngestLog } from './types.js';

/**
 * The pipelines of every process, kept running where they should: every `reconcileMs` (and when
 * kicked) each process asks which pipelines should run (dataset AVAILABLE, its RELEASE saga
 * ended, every data source AVAILABLE), starts those whose lease it can take, stops those that
 * should not run any more or whose lease it lost, and restarts those a restart request bumped.
 * A process that dies loses its leases with its connection: another takes them at its next pass.
 */

/** What the runtime asks of the management side (wired in `runtime.ts` from the pipelines module). */
export interface PipelineCatalog {
  /** The pipelines that should run now, with their restart generation. */
  runnable(db: Database): Promise<Array<{ id: string; generation: number }>>;
  /** Everything needed to run one, its data sources' secrets opened; null when it is gone. */
  load(db: Database, id: string): Promise<PipelineSpec | null>;
  stillRunnable(trx: Database, id: string): Promise<boolean>;
  /** Saves the status while the pipeline's dataset is AVAILABLE (a stopped dataset's pipelines show null). */
  saveStatus(db: Database, id: string, status: RuntimeStatus): Promise<void>;
}

export interface PipelineRuntimeDeps extends Omit<PipelineRunDeps, 'stillRunnable' | 'saveStatus' | 'noLongerRunnable'> {
  catalog: PipelineCatalog;
  leases: Leases;
  log: IngestLog;
  /** How often each process looks (default 1 s): with the lease timeout, it bounds a takeover. */
  reconcileMs?: number;
}

export class PipelineRuntime {
  readonly #deps: PipelineRuntimeDeps;
  readonly #runs = new Map<string, PipelineRun>();
  #timer: NodeJS.Timeout | null = null;
  #pass: Promise<void> | null = null;
  #again = false;
  #stopped = true;
  #failing = false;

  constructor(deps: PipelineRuntimeDeps) {
    this.#deps = deps;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.kick();
  }

  /** Looks now rather than at the next pass (after a release or restart in this process). */
  kick(): void {
    if (this.#stopped) return;
    if (this.#pass) {
      this.#again = true;
      return;
    }
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#pass = this.#reconcile()
      .then(() => {
        if (this.#failing) this.#deps.log.info({}, 'pipeline runtime: passes succeed again');
        this.#failing = false;
      }, (error) => {
        // Once per outage, not once per pass: the database may be away for a while.
        if (!this.#failing) this.#deps.log.warn({ err: (error as Error).message }, 'pipeline runtime: a pass failed; trying again every pass');
        this.#failing = true;
      })
      .finally(() => {
        this.#pass = null;
        if (this.#stopped) return;
        if (this.#again) {
          this.#again = false;
          this.kick();
        } else this.#timer = setTimeout(() => this.kick(), this.#deps.reconcileMs ?? 1000);
      });
  }

  /** Process shutdown: every pipeline stops here (another process takes them over), then the leases go. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#pass;
    await Promise.allSettled([...this.#runs.values()].map((run) => this.#end(run, 'STOPPED', 'the process running it shut down')));
    await this.#deps.leases.close();
  }

  /** The pipelines this process runs (tests, metrics). */
  get running(): string[] {
    return [...this.#runs.keys()];
  }

  async #reconcile(): Promise<void> {
    const { leases, catalog, db } = this.#deps;
    await leases.heartbeat();
    const wanted = new Map((await catalog.runnable(db)).map((p) => [p.id, p.generation]));
    for (const [id, run] of this.#runs) {
      if (this.#stopped) return;
      if (!leases.holds(id)) await this.#end(run, null, 'lease lost', { lease: false });
      else if (!wanted.has(id)) await this.#end(run, 'STOPPED', 'its dataset or a data source is not AVAILABLE', { endSession: true });
      else if (wanted.get(id) !== run.spec.restartGeneration) await this.#end(run, 'STOPPED', 'restarting');
    }
    for (const id of wanted.keys()) {
      if (this.#stopped) return;
      if (this.#runs.has(id)) continue;
      if (!(await leases.tryAcquire(id))) continue;
      const spec = await catalog.load(db, id);
      if (!spec) {
        await leases.release(id);
        continue;
      }
      const run = new PipelineRun(spec, {
        ...this.#deps,
        stillRunnable: (trx, pipelineId) => catalog.stillRunnable(trx, pipelineId),
        saveStatus: (pipelineId, status) => catalog.saveStatus(db, pipelineId, status),
        noLongerRunnable: () => this.kick(),
      });
      this.#runs.set(id, run);
      await run.start();
    }
  }

  async #end(run: PipelineRun, final: 'STOPPED' | null, message: string, options: { endSession?: boolean; lease?: boolean } = {}): Promise<void> {
    this.#runs.delete(run.spec.id);
    await run.stop(final, message, { endSession: options.endSession });
    if (options.lease !== false) await this.#deps.leases.release(run.spec.id);
  }
}
