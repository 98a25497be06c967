// autocannon ships no types; this declares the part of its programmatic API the benchmark uses.
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    headers?: Record<string, string>;
    method?: string;
    body?: string;
  }

  interface Histogram { average: number; mean: number; stddev: number; min: number; max: number; p50: number; p90: number; p99: number }

  interface Result {
    requests: Histogram & { total: number; sent: number };
    latency: Histogram;
    throughput: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    duration: number;
    statusCodeStats: Record<string, { count: number }>;
  }

  interface Instance extends EventEmitter, PromiseLike<Result> {
    on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTimeMs: number) => void): this;
    on(event: string, listener: (...args: any[]) => void): this;
  }

  function autocannon(options: Options): Instance;
  export default autocannon;
}
