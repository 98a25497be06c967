import autocannon from 'autocannon';
import pg from 'pg';
import { percentile } from '../load.js';
import type { CapturedQuery } from '../sql-alone.js';

/** One timed run: throughput and latency under `connections` concurrent clients. */
export interface Run {
  connections: number;
  seconds: number;
  /** Answers with the expected status (requests, statement sequences or handler calls) per second. */
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  ok: number;
  /** Answers with another status, and transport errors or timeouts. */
  failed: number;
  /** Status codes seen, for a run that failed. */
  statuses: Record<string, number>;
}

const summarize = (latencies: number[], connections: number, seconds: number, failed: number, statuses: Record<string, number> = {}): Run => {
  latencies.sort((a, b) => a - b);
  return {
    connections, seconds, perSecond: latencies.length / seconds,
    p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99), ok: latencies.length, failed, statuses,
  };
};

export interface HttpLoadOptions {
  connections: number;
  seconds: number;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** The status that counts as success (200 for reads, 201 for creates). */
  okStatus?: number;
  /** Seconds of an untimed run first (JIT, pools, caches). */
  warmupSeconds?: number;
}

/**
 * autocannon on one URL. Latencies come from its per-response event (sub-millisecond floats; its
 * own histogram rounds to whole milliseconds); only answers with `okStatus` count as done.
 */
export async function httpLoad(url: string, opts: HttpLoadOptions): Promise<Run> {
  const base = { url, connections: opts.connections, method: opts.method ?? 'GET', headers: opts.headers ?? {}, ...(opts.body === undefined ? {} : { body: opts.body }) };
  if (opts.warmupSeconds) await autocannon({ ...base, duration: opts.warmupSeconds });
  const okStatus = opts.okStatus ?? 200;
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const instance = autocannon({ ...base, duration: opts.seconds });
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTimeMs: number) => {
    if (statusCode === okStatus) latencies.push(responseTimeMs);
    statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
  });
  const result = await instance;
  const failed = result.requests.total - latencies.length + result.errors + result.timeouts;
  return summarize(latencies, opts.connections, result.duration, Math.max(0, failed), statuses);
}

/**
 * `connections` workers, each calling its own `step` back to back for `seconds` (after a warm-up
 * of `warmupSeconds`): the closed-loop model autocannon follows, for work done without HTTP.
 */
export async function loopLoad(connections: number, seconds: number, steps: Array<() => Promise<void>>, warmupSeconds = 0): Promise<Run> {
  const drive = async (forMs: number, record: boolean) => {
    const latencies: number[] = [];
    let failed = 0;
    const end = performance.now() + forMs;
    const startedAt = performance.now();
    await Promise.all(steps.map(async (step) => {
      while (performance.now() < end) {
        const t0 = performance.now();
        try {
          await step();
          if (record) latencies.push(performance.now() - t0);
        } catch {
          failed++;
        }
      }
    }));
    return { latencies, failed, elapsed: (performance.now() - startedAt) / 1000 };
  };
  if (warmupSeconds) await drive(warmupSeconds * 1000, false);
  const { latencies, failed, elapsed } = await drive(seconds * 1000, true);
  return summarize(latencies, connections, elapsed, failed);
}

/**
 * The same SQL alone under the same concurrency: `connections` pg clients (one each, as a pool of
 * that size would hand out), each running the request's statements in order, with the captured
 * text and parameters (extended protocol, as the application sends them), back to back.
 */
export async function sqlLoad(databaseUrl: string, queries: CapturedQuery[], connections: number, seconds: number, warmupSeconds: number): Promise<Run> {
  return withStatementClients(databaseUrl, queries, connections, (steps) => loopLoad(connections, seconds, steps, warmupSeconds));
}

/** Connects `connections` pg clients, gives `use` one step per client (the statements in order), and ends the clients after. */
export async function withStatementClients<T>(databaseUrl: string, queries: CapturedQuery[], connections: number, use: (steps: Array<() => Promise<void>>) => Promise<T>): Promise<T> {
  const clients = await Promise.all(Array.from({ length: connections }, async () => {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    return client;
  }));
  try {
    return await use(clients.map((client) => async () => {
      for (const query of queries) await client.query(query.text, query.values);
    }));
  } finally {
    await Promise.all(clients.map((client) => client.end()));
  }
}
