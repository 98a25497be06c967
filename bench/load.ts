import autocannon from 'autocannon';

export interface LoadRun {
  connections: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  non2xx: number;
  errors: number;
}

export interface LoadResult {
  path: string;
  /** Status of a single probe request before the runs; they only happen on 200. */
  probeStatus: number;
  /** Under concurrency: throughput, and latency that includes queueing behind the other connections. */
  loaded?: LoadRun;
  /** One connection: the latency of a request on its own, to set beside its SQL alone. */
  single?: LoadRun;
}

/** Probes the path, warms up, then loads it with `connections` and with a single connection. */
export async function runLoad(baseUrl: string, path: string, token: string, opts: { durationSeconds: number; connections: number; singleSeconds: number }): Promise<LoadResult> {
  const headers = { authorization: `Bearer ${token}` };
  const probe = await fetch(baseUrl + path, { headers });
  await probe.body?.cancel();
  if (probe.status !== 200) return { path, probeStatus: probe.status };
  // A short warm-up so that JIT, pools and caches are in their steady state.
  await autocannon({ url: baseUrl + path, connections: opts.connections, duration: 2, headers });
  return {
    path,
    probeStatus: probe.status,
    loaded: await measure(baseUrl + path, headers, opts.connections, opts.durationSeconds),
    single: await measure(baseUrl + path, headers, 1, opts.singleSeconds),
  };
}

/**
 * One autocannon run. Latencies are taken from autocannon's per-response event (sub-millisecond,
 * float), because its own histogram rounds to whole milliseconds, too coarse beside SQL that
 * takes a fraction of one.
 */
async function measure(url: string, headers: Record<string, string>, connections: number, durationSeconds: number): Promise<LoadRun> {
  const latencies: number[] = [];
  const instance = autocannon({ url, connections, duration: durationSeconds, headers });
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTimeMs: number) => {
    if (statusCode === 200) latencies.push(responseTimeMs);
  });
  const result = await instance;
  latencies.sort((a, b) => a - b);
  return {
    connections,
    requestsPerSecond: result.requests.total / result.duration,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

export function median(values: readonly number[]): number {
  return percentile([...values].sort((a, b) => a - b), 0.5);
}
