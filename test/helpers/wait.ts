import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitOptions<T> {
  /** What is awaited, for the failure message: "the route to be served", "the worker to exit". */
  what: string;
  timeoutMs?: number;
  intervalMs?: number;
  /** Describes the last value seen, appended to the failure message (e.g. the last status). */
  last?: (value: T) => string;
}

/**
 * Polls `check` until it answers something truthy and resolves with that; throws on timeout with a
 * message saying what did not happen. For waiting on an event, instead of sleeping a fixed time and
 * hoping: an error thrown by `check` fails at once (an assertion inside it is a real failure).
 */
export async function waitFor<T>(check: () => T | Promise<T>, options: WaitOptions<T>): Promise<NonNullable<T>> {
  const { what, timeoutMs = 5_000, intervalMs = 20 } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() >= deadline) {
      const last = options.last ? `; last seen: ${options.last(value)}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last}`);
    }
    await sleep(intervalMs);
  }
}
