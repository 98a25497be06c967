import type { ConnectorContext, ConnectorState } from '../types.js';

/**
 * What the polling connectors (HTTP, SQL) share: a sleep that a stop cuts short, a growing
 * backoff, and a reporter that tells the runtime of a change of state only (a poll every second
 * must not rewrite the pipeline's status every second).
 */

/** Waits `ms`, or less when `signal` aborts; true when the wait ran out, false when aborted. */
export function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (ranOut: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      resolve(ranOut);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), Math.max(0, ms));
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Settles with `work`, or with `undefined` as soon as `signal` aborts: a stop must not wait for a
 * delivery the runtime may be holding back until the pipeline's end.
 */
export function unlessAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) {
    work.catch(() => {});
    return Promise.resolve(undefined);
  }
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Waits between failed attempts: 1 s, 2 s, 4 s, ... up to `capMs`; `reset` after a success. */
export class Backoff {
  private failures = 0;
  constructor(private readonly capMs: number, private readonly firstMs = 1_000) {}

  next(): number {
    const ms = Math.min(this.capMs, this.firstMs * 2 ** Math.min(this.failures, 20));
    this.failures++;
    return ms;
  }

  reset() {
    this.failures = 0;
  }
}

/** `context.report`, called only when the state or its message changed. */
export function stateReporter(context: ConnectorContext) {
  let last: ConnectorState | null = null;
  return (state: ConnectorState) => {
    if (last && last.state === state.state && last.message === state.message) return;
    last = state;
    context.report(state);
  };
}

/** The text of any thrown value, bounded: it goes into a status message. */
export function reasonOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/** A signal that aborts when the pipeline stops or when the connector's own `stop()` runs, whichever comes first. */
export function stoppable(pipeline: AbortSignal): { signal: AbortSignal; stop(): void } {
  const own = new AbortController();
  return { signal: AbortSignal.any([pipeline, own.signal]), stop: () => own.abort() };
}
