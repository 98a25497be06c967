import pg from 'pg';
import type { FastifyInstance } from 'fastify';
import { median } from './load.js';
import { withClient } from './database.js';

export interface CapturedQuery { text: string; values: unknown[] }

export interface TimedQuery extends CapturedQuery { explainMs: number; clientMs: number }

export interface SqlAloneResult {
  path: string;
  queries: TimedQuery[];
  /** Sum over the request's queries of the median EXPLAIN ANALYZE planning + execution time. */
  explainMs: number;
  /** Sum over the request's queries of the median round trip of the query itself from a client. */
  clientMs: number;
}

let capturing: CapturedQuery[] | null = null;

/**
 * Records every statement the pg driver sends while `captureQueries` runs, in this process.
 * The application's Kysely instance uses pg's Client, so the captured text and parameters are
 * exactly what a request runs. Background work of the application (the saga runner's poll for
 * due jobs) would be recorded too: build it with BACKGROUND_WORK=off.
 */
export function installQueryCapture() {
  const original = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  pg.Client.prototype.query = function capture(this: pg.Client, ...args: unknown[]) {
    // A named (prepared) statement comes as one config object: { name, text, values }.
    const config = typeof args[0] === 'object' && args[0] !== null ? args[0] as { text?: unknown; values?: unknown } : null;
    const [text, values] = config ? [config.text, config.values] : args;
    if (capturing && typeof text === 'string' && !/^select pg_backend_pid\(\)/i.test(text)) {
      capturing.push({ text, values: Array.isArray(values) ? [...values] : [] });
    }
    return original.apply(this, args);
  } as typeof pg.Client.prototype.query;
}

/**
 * The statements one injected GET runs, after a first, uncaptured one that warms caches; `cold`:
 * the first one itself (the caller not yet cached).
 */
export async function captureQueries(app: FastifyInstance, path: string, token: string, cold = false): Promise<{ status: number; queries: CapturedQuery[] }> {
  const request = { method: 'GET' as const, url: path, headers: { authorization: `Bearer ${token}` } };
  if (!cold) await app.inject(request);
  capturing = [];
  try {
    const response = await app.inject(request);
    return { status: response.statusCode, queries: capturing };
  } finally {
    capturing = null;
  }
}

/** The route table's own polling, which runs beside requests and is no part of any of them. */
const ROUTE_POLLING = /gateway_route_version|gateway_routes/;

/**
 * The statements each GET runs in an in-process `app` (management or data API), in order; a
 * request that does not answer 200 fails the capture (its statements would not be the read's).
 */
export async function captureReads(app: FastifyInstance, reads: Array<{ path: string; token: string; cold?: boolean }>): Promise<CapturedQuery[][]> {
  const captured: CapturedQuery[][] = [];
  for (const { path, token, cold } of reads) {
    const { status, queries } = await captureQueries(app, path, token, cold);
    if (status !== 200) throw new Error(`in-process GET ${path} answered ${status}`);
    captured.push(queries.filter((query) => !ROUTE_POLLING.test(query.text)));
  }
  return captured;
}

/** Times the captured statements on their own: EXPLAIN ANALYZE and a plain client round trip. */
export async function timeQueries(databaseUrl: string, path: string, queries: CapturedQuery[], runs: number): Promise<SqlAloneResult> {
  return withClient(databaseUrl, async (client) => {
    const timed: TimedQuery[] = [];
    for (const query of queries) {
      const explained: number[] = [];
      const roundTrips: number[] = [];
      for (let i = 0; i < runs; i++) {
        const { rows } = await client.query<{ 'QUERY PLAN': [{ 'Planning Time': number; 'Execution Time': number }] }>(
          `explain (analyze, format json) ${query.text}`, query.values);
        const plan = rows[0]!['QUERY PLAN'][0];
        explained.push(plan['Planning Time'] + plan['Execution Time']);
        const startedAt = process.hrtime.bigint();
        await client.query(query.text, query.values);
        roundTrips.push(Number(process.hrtime.bigint() - startedAt) / 1e6);
      }
      timed.push({ ...query, explainMs: median(explained), clientMs: median(roundTrips) });
    }
    const sum = (pick: (query: TimedQuery) => number) => timed.reduce((total, query) => total + pick(query), 0);
    return { path, queries: timed, explainMs: sum((query) => query.explainMs), clientMs: sum((query) => query.clientMs) };
  });
}
