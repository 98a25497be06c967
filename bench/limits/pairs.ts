import { setTimeout as sleep } from 'node:timers/promises';
import { httpLoad, type Run } from '../sta/load.js';

/** One end of a pair: a URL loaded with autocannon, with the headers its caller sends. */
export interface Side {
  label: string;
  url: string;
  headers?: Record<string, string>;
}

/**
 * A subject (the service) and the baseline it is held against. `latency`: the subject's p50 over
 * the baseline's (the baseline does the same work with less around it); `throughput`: the
 * subject's req/s over the baseline's (both do the same work).
 */
export interface Pair {
  name: string;
  group: string;
  subject: Side;
  baseline: Side;
  compare: 'latency' | 'throughput';
  /** An absolute bound on the subject's p99 besides the ratio (the STA reads at 1M Observations). */
  p99TargetMs?: number;
  /**
   * A pause before every run: the gateway keeps a spare connection open to each MapServer worker
   * for up to 1 s after its last request, on which the worker waits; nginx, sharing the workers,
   * would otherwise start each of its runs behind them.
   */
  pauseMs?: number;
  /** Shown with its spread but held to no target (a bound measured for the reader, e.g. the floor of a Node front). */
  informational?: boolean;
}

export interface PairRun {
  round: number;
  connections: number;
  first: 'subject' | 'baseline';
  subject: Run;
  baseline: Run;
}

export interface PairResult {
  pair: Pair;
  runs: PairRun[];
}

export interface PairOptions {
  connections: number[];
  rounds: number;
  seconds: number;
  warmupSeconds: number;
  /** Called after every run: throws when the service is gone (figures of refused connections mean nothing). */
  check(after: string): void;
  say(message: string): void;
}

/** The median; of an even count, the mean of the middle two (with 2 rounds, nearest-rank would give the smaller). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const brief = (run: Run) => `${run.perSecond.toFixed(0)}/s, p50 ${run.p50Ms.toFixed(2)} ms, p99 ${run.p99Ms.toFixed(2)} ms${run.failed ? `, ${run.failed} failed ${JSON.stringify(run.statuses)}` : ''}`;

/**
 * Per connection count: both sides warmed up, then `rounds` rounds of one run each, the side that
 * goes first alternating, so that a neighbour's load on a shared machine falls on both alike.
 */
export async function measurePair(pair: Pair, opts: PairOptions): Promise<PairResult> {
  const runs: PairRun[] = [];
  const load = async (side: Side, connections: number, seconds: number) => {
    if (pair.pauseMs) await sleep(pair.pauseMs);
    const run = await httpLoad(side.url, { connections, seconds, headers: side.headers ?? {} });
    opts.check(`${pair.name}: ${side.label}`);
    return run;
  };
  for (const connections of opts.connections) {
    opts.say(`${pair.name}, ${connections} connections`);
    if (opts.warmupSeconds > 0) {
      await load(pair.subject, connections, opts.warmupSeconds);
      await load(pair.baseline, connections, opts.warmupSeconds);
    }
    for (let round = 1; round <= opts.rounds; round++) {
      const first = round % 2 === 1 ? 'subject' : 'baseline';
      const measured: Partial<Record<'subject' | 'baseline', Run>> = {};
      for (const which of first === 'subject' ? ['subject', 'baseline'] as const : ['baseline', 'subject'] as const) {
        measured[which] = await load(pair[which], connections, opts.seconds);
        opts.say(`  round ${round}, ${which}: ${brief(measured[which]!)}`);
      }
      runs.push({ round, connections, first, subject: measured.subject!, baseline: measured.baseline! });
    }
  }
  return { pair, runs };
}

/** A line of the summary: one measure of one pair at one connection count, over the rounds. */
export interface Verdict {
  pair: string;
  group: string;
  connections: number;
  /** What is compared: `p50`, `p99`, `req/s`, or `p99 (absolute)`. */
  measure: string;
  subjectMedian: number;
  baselineMedian: number;
  /** Per round: subject ÷ baseline (or the subject's own figure for an absolute bound). */
  median: number;
  min: number;
  max: number;
  /** `<= 1.5`, `>= 0.95`, `<= 30 ms`; null: shown, no target. */
  target: string | null;
  met: boolean | null;
  /** Requests that failed (non-200 or transport errors) on either side, over the rounds. */
  failed: number;
}

function verdict(result: PairResult, connections: number, measure: string, pick: (run: Run) => number, target: { bound: number; atMost: boolean; text: string } | null, absolute = false): Verdict {
  const runs = result.runs.filter((run) => run.connections === connections);
  const values = runs.map((run) => (absolute ? pick(run.subject) : pick(run.subject) / pick(run.baseline)));
  const mid = median(values);
  return {
    pair: result.pair.name, group: result.pair.group, connections, measure,
    subjectMedian: median(runs.map((run) => pick(run.subject))),
    baselineMedian: absolute ? Number.NaN : median(runs.map((run) => pick(run.baseline))),
    median: mid, min: Math.min(...values), max: Math.max(...values),
    target: target?.text ?? null,
    met: target ? (target.atMost ? mid <= target.bound : mid >= target.bound) : null,
    failed: runs.reduce((sum, run) => sum + run.subject.failed + run.baseline.failed, 0),
  };
}

export const TARGETS = { latencyRatio: 1.5, throughputRatio: 0.95 } as const;

/** The verdicts of a pair: p50 ratio (target) and p99 ratio for latency pairs, plus an absolute p99; req/s ratio for throughput pairs. */
export function verdicts(result: PairResult): Verdict[] {
  const out: Verdict[] = [];
  for (const connections of [...new Set(result.runs.map((run) => run.connections))]) {
    if (result.pair.compare === 'throughput') {
      const target = result.pair.informational ? null : { bound: TARGETS.throughputRatio, atMost: false, text: `>= ${TARGETS.throughputRatio}` };
      out.push(verdict(result, connections, 'req/s', (run) => run.perSecond, target));
      continue;
    }
    out.push(verdict(result, connections, 'p50', (run) => run.p50Ms, { bound: TARGETS.latencyRatio, atMost: true, text: `<= ${TARGETS.latencyRatio}` }));
    out.push(verdict(result, connections, 'p99', (run) => run.p99Ms, null));
    const bound = result.pair.p99TargetMs;
    if (bound !== undefined) out.push(verdict(result, connections, 'p99 (absolute)', (run) => run.p99Ms, { bound, atMost: true, text: `<= ${bound} ms` }, true));
  }
  return out;
}
