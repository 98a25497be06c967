import { randomUUID } from 'node:crypto';

/**
 * A running pipeline's `runtimeStatus` (the contract's shape): its state, what last changed it,
 * and counters since it last started. Kept in memory by the process running the pipeline and
 * saved on every state change and at most once per `SAVE_EVERY_MS` while records flow, so that a
 * busy pipeline costs one status write per second, not one per batch.
 */

export type PipelineState = 'STARTING' | 'RUNNING' | 'RETRYING' | 'STOPPED' | 'FAILED';
export type StatusSource = 'CONNECTOR' | 'MAPPING' | 'WRITER' | 'RUNTIME' | null;

export interface RuntimeStatus {
  state: PipelineState;
  message: string;
  occurredAt: string;
  source: StatusSource;
  lastEventId: string;
  received: number;
  written: number;
  rejected: number;
  skipped: number;
  lastReceivedAt: string | null;
}

export type Counter = 'received' | 'written' | 'rejected' | 'skipped';

export const SAVE_EVERY_MS = 1000;

export class StatusTracker {
  #status: RuntimeStatus;
  #dirty = true;
  readonly #save: (status: RuntimeStatus) => Promise<void>;
  readonly #onStateChange: (status: RuntimeStatus, previous: PipelineState | null) => void;
  #timer: NodeJS.Timeout | null = null;
  #saving: Promise<void> = Promise.resolve();

  constructor(save: (status: RuntimeStatus) => Promise<void>, onStateChange: (status: RuntimeStatus, previous: PipelineState | null) => void) {
    this.#save = save;
    this.#onStateChange = onStateChange;
    this.#status = {
      state: 'STARTING', message: 'starting', occurredAt: new Date().toISOString(), source: 'RUNTIME', lastEventId: randomUUID(),
      received: 0, written: 0, rejected: 0, skipped: 0, lastReceivedAt: null,
    };
    this.#onStateChange(this.#status, null);
  }

  get current(): Readonly<RuntimeStatus> {
    return this.#status;
  }

  /** A new state (or a new message for the same state): saved at once. */
  change(state: PipelineState, source: StatusSource, message: string): Promise<void> {
    const previous = this.#status.state;
    if (previous === state && this.#status.message === message) return this.#saving;
    this.#status = { ...this.#status, state, source, message, occurredAt: new Date().toISOString(), lastEventId: randomUUID() };
    this.#onStateChange(this.#status, previous);
    this.#dirty = true;
    return this.flush();
  }

  count(counter: Counter, n: number, at?: Date): void {
    if (n === 0) return;
    this.#status[counter] += n;
    if (counter === 'received' && at) this.#status.lastReceivedAt = at.toISOString();
    this.#dirty = true;
    this.#timer ??= setTimeout(() => {
      this.#timer = null;
      void this.flush();
    }, SAVE_EVERY_MS);
  }

  /** Saves what changed, one save at a time (a save failing is retried by the next one). */
  flush(): Promise<void> {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    this.#saving = this.#saving.then(async () => {
      if (!this.#dirty) return;
      this.#dirty = false;
      try {
        await this.#save(this.#status);
      } catch {
        this.#dirty = true; // the database is away: the next change or count saves it again
      }
    });
    return this.#saving;
  }

  /** No more timed saves (the pipeline stopped); a last `change` or `flush` still saves. */
  dispose(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }
}
