import { setTimeout as sleep } from 'node:timers/promises';
import { request, type Answer } from '../faults/harness.js';

/**
 * A steady load of a few concurrent loops, each sending one request after the other through
 * nginx (each on a connection of its own, as many clients would), and a record of every answer:
 * its status or the connection error the client saw, and when. Writes keep what identifies what
 * they wrote (an id answered, a marker sent) so that a test can look for it afterwards.
 */

export interface Call { method: 'GET' | 'POST'; url: string; body?: unknown; marker?: string | number }

export interface Outcome {
  loop: string;
  method: string;
  startedAt: number;
  endedAt: number;
  /** The HTTP status, or null when the client got no answer (a connection error). */
  status: number | null;
  error: string | null;
  /** What the write sent to find it again (an Observation's result, a group's name). */
  marker?: string | number;
  /** What the answer named: a group's id, an Observation's @iot.id. */
  id?: string | number;
  /** For a failure: the start of what the server answered (a problem's code, nginx's page), to tell who failed. */
  detail?: string;
}

export interface LoopSpec {
  name: string;
  /** The n-th request of this loop. */
  next(n: number): Call;
}

export interface LoadFigures {
  requests: number;
  writes: number;
  serverErrors: number;
  connectionErrors: number;
  /** From the first failed answer to the last one, in ms (0: none or one failed). */
  failureSpanMs: number;
  /** When the first and the last failed answer came (ms since the epoch), null when none failed. */
  failuresFrom: number | null;
  failuresTo: number | null;
  /** Statuses of the failures, counted: {"502": 3}. */
  failureStatuses: Record<string, number>;
}

export const failed = (outcome: Outcome) => outcome.status === null || outcome.status >= 500;

export class Load {
  readonly outcomes: Outcome[] = [];
  #running = false;
  #loops: Promise<void>[] = [];

  constructor(private readonly token: string, private readonly pauseMs = 5) {}

  start(specs: LoopSpec[]): void {
    this.#running = true;
    this.#loops = specs.map((spec) => this.#loop(spec));
  }

  /** Lets every loop finish the request it is sending, then stops. */
  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#loops);
  }

  async #loop(spec: LoopSpec): Promise<void> {
    for (let n = 0; this.#running; n++) {
      const call = spec.next(n);
      const startedAt = Date.now();
      let answer: Answer | null = null;
      let error: string | null = null;
      try {
        answer = await request(call.url, { method: call.method, token: this.token, ...(call.body === undefined ? {} : { body: call.body }) });
      } catch (caught) {
        error = (caught as NodeJS.ErrnoException).code ?? (caught as Error).message;
      }
      const body = answer?.body as Record<string, unknown> | undefined;
      const id = (body?.['@iot.id'] ?? body?.['id']) as string | number | undefined;
      this.outcomes.push({
        loop: spec.name, method: call.method, startedAt, endedAt: Date.now(), status: answer?.status ?? null, error,
        ...(call.marker === undefined ? {} : { marker: call.marker }),
        ...(call.method === 'POST' && id !== undefined ? { id } : {}),
        ...(answer && answer.status >= 500 ? { detail: `${call.url.replace(/^https?:\/\/[^/]+/, '')}: ${(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body) ?? '').slice(0, 200)}` } : {}),
      });
      await sleep(this.pauseMs);
    }
  }

  /** Outcomes of one loop, or of every loop. */
  of(loop?: string): Outcome[] {
    return loop ? this.outcomes.filter((outcome) => outcome.loop === loop) : this.outcomes;
  }

  figures(outcomes: Outcome[] = this.outcomes): LoadFigures {
    const failures = outcomes.filter(failed);
    const failureStatuses: Record<string, number> = {};
    for (const failure of failures) {
      const key = failure.status === null ? `connection error ${failure.error}` : String(failure.status);
      failureStatuses[key] = (failureStatuses[key] ?? 0) + 1;
    }
    return {
      requests: outcomes.length,
      writes: outcomes.filter((outcome) => outcome.method === 'POST').length,
      serverErrors: failures.filter((outcome) => outcome.status !== null).length,
      connectionErrors: failures.filter((outcome) => outcome.status === null).length,
      failureSpanMs: failures.length === 0 ? 0 : Math.max(...failures.map((f) => f.endedAt)) - Math.min(...failures.map((f) => f.endedAt)),
      failuresFrom: failures.length === 0 ? null : Math.min(...failures.map((f) => f.endedAt)),
      failuresTo: failures.length === 0 ? null : Math.max(...failures.map((f) => f.endedAt)),
      failureStatuses,
    };
  }
}
