import type { TimedQuery } from '../sql-alone.js';
import type { Run } from './load.js';
import type { StaSeed } from './setup.js';

export interface ReadResult {
  name: string;
  path: string;
  http: Run;
  /** The statements the gateway process runs for the request, captured from an in-process instance. */
  queries: TimedQuery[];
  sql: Run | null;
  /** The same statements served by a bare node:http + pg server (issue 33's baseline); absent in older reports. */
  bare?: Run;
  /** Sum over the statements of the median EXPLAIN ANALYZE planning + execution time. */
  explainMs: number;
  /** EXPLAIN (ANALYZE, BUFFERS) of each statement, as text. */
  plans: string[];
  targetP99Ms?: number;
}

export interface WriteResult {
  /** The bulk figure, or the status a one-Observation probe got (404: not served on this build). */
  createObservations: { observations: number; requests: number; seconds: number; perSecond: number } | { probeStatus: number; detail: string };
  singlePost: Run;
  singlePostMinimal: Run;
}

export interface StaReport {
  date: string;
  machine: string;
  cores: number;
  node: string;
  postgres: string;
  connections: number;
  durationSeconds: number;
  logLevel: string;
  loadBefore: string;
  /** When the load scenarios began, after the seeding. */
  loadAtReads: string;
  loadAfter: string;
  seed: StaSeed;
  window: { from: string; to: string; count: number };
  reads: ReadResult[];
  gateway: { bearer: Run; patBearer: Run; patBasic: Run; anonymous: Run; handler: Run };
  writes: WriteResult;
}

const f = (value: number | undefined, digits = 2) => (value === undefined || Number.isNaN(value) ? '–' : value.toFixed(digits));
const n = (value: number) => Math.round(value).toLocaleString('en');
const verdict = (met: boolean) => (met ? 'met' : '**missed**');
const failures = (run: Run) => (run.failed ? ` (${run.failed} failed: ${JSON.stringify(run.statuses)})` : '');

/** HTTP ÷ the bare node:http + pg server (issue 33's target: ≤ 1.5 at p50 and p99). */
export const bareRatio = (read: ReadResult) => ({
  p50: read.bare ? read.http.p50Ms / read.bare.p50Ms : Number.NaN,
  p99: read.bare ? read.http.p99Ms / read.bare.p99Ms : Number.NaN,
});

export const ratio = (read: ReadResult) => ({
  p50: read.sql ? read.http.p50Ms / read.sql.p50Ms : Number.NaN,
  p99: read.sql ? read.http.p99Ms / read.sql.p99Ms : Number.NaN,
});

/** The figures block of bench/README.md (and the head of bench/results-sta.md). */
export function renderSummary(r: StaReport): string {
  const c = r.connections;
  const lines: string[] = [];
  lines.push(`Run ${r.date} on ${r.machine}; Node ${r.node}; ${r.postgres}; load average (1 min) before / when the loads began / after: ${r.loadBefore} / ${r.loadAtReads} / ${r.loadAfter}${Number(r.loadBefore) > r.cores ? ` (**busy machine**: above its ${r.cores} cores before the run started; every figure is inflated)` : ''}.`);
  lines.push('');
  lines.push(`Data: 1 Thing, 1 Location, ${r.seed.datastreamIds.length} Datastreams (one deep insert); ${n(r.seed.observations)} Observations in Datastream ${r.seed.bigDatastreamId} (one per second from ${r.seed.firstTime.toISOString()}), ${r.seed.observationsPerOtherDatastream} in each other one; seeded in ${r.seed.seconds.toFixed(1)} s. Load: autocannon, ${r.durationSeconds} s with ${c} connections after a 2 s warm-up; server \`node dist/server.js all\` (LOG_LEVEL=${r.logLevel}) on PostgreSQL, load generator, server and PostgreSQL on the same machine.`);
  lines.push('');
  lines.push('| scenario | req/s | p50 ms | p99 ms | SQL alone: runs/s | SQL alone: p50 ms | SQL alone: p99 ms | statements (EXPLAIN ANALYZE ms) | HTTP ÷ SQL alone, p50 / p99 | targets |');
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const read of r.reads) {
    const q = ratio(read);
    const targets = [`≤ 1.5× (p50): ${verdict(q.p50 <= 1.5)}`];
    if (read.targetP99Ms) targets.push(`p99 < ${read.targetP99Ms} ms: ${verdict(read.http.p99Ms < read.targetP99Ms)}`);
    lines.push(`| ${read.name} \`${read.path}\`${failures(read.http)} | ${f(read.http.perSecond, 0)} | ${f(read.http.p50Ms)} | ${f(read.http.p99Ms)} | ${f(read.sql?.perSecond, 0)} | ${f(read.sql?.p50Ms)} | ${f(read.sql?.p99Ms)} | ${read.queries.length} (${f(read.explainMs)}) | ${f(q.p50, 1)}× / ${f(q.p99, 1)}× | ${targets.join('; ')} |`);
  }
  lines.push('');
  lines.push('Beside the same statements served by a bare `node:http` + `pg` server (its own process, a pool of 10): issue 33\'s target, p50 and p99 each ≤ 1.5×.');
  lines.push('');
  lines.push('| scenario | req/s | p50 ms | p99 ms | bare: req/s | bare: p50 ms | bare: p99 ms | HTTP ÷ bare, p50 / p99 | target ≤ 1.5× |');
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const read of r.reads) {
    const q = bareRatio(read);
    lines.push(`| ${read.name} | ${f(read.http.perSecond, 0)} | ${f(read.http.p50Ms)} | ${f(read.http.p99Ms)} | ${f(read.bare?.perSecond, 0)} | ${f(read.bare?.p50Ms)} | ${f(read.bare?.p99Ms)} | ${f(q.p50, 2)}× / ${f(q.p99, 2)}× | p50 ${verdict(q.p50 <= 1.5)}, p99 ${verdict(q.p99 <= 1.5)} |`);
  }
  lines.push('');
  const g = r.gateway;
  lines.push(`**The gateway's own cost**, the latest-100 read (${c} concurrent callers, ${r.durationSeconds} s each):`);
  lines.push('');
  lines.push('| path | req/s (calls/s) | p50 ms | p99 ms |');
  lines.push('|---|---:|---:|---:|');
  lines.push(`| (a) gateway, bearer token, closed dataset${failures(g.bearer)} | ${f(g.bearer.perSecond, 0)} | ${f(g.bearer.p50Ms)} | ${f(g.bearer.p99Ms)} |`);
  lines.push(`| (a2) gateway, personal access token as bearer, closed dataset${failures(g.patBearer)} | ${f(g.patBearer.perSecond, 0)} | ${f(g.patBearer.p50Ms)} | ${f(g.patBearer.p99Ms)} |`);
  lines.push(`| (a3) gateway, personal access token as the Basic password, closed dataset${failures(g.patBasic)} | ${f(g.patBasic.perSecond, 0)} | ${f(g.patBasic.p50Ms)} | ${f(g.patBasic.p99Ms)} |`);
  lines.push(`| (b) gateway, anonymous, \`openDataAccess: true\`${failures(g.anonymous)} | ${f(g.anonymous.perSecond, 0)} | ${f(g.anonymous.p50Ms)} | ${f(g.anonymous.p99Ms)} |`);
  lines.push(`| (c) \`createStaServer({ db }).handle(…)\` in process, no HTTP, no authorization${failures(g.handler)} | ${f(g.handler.perSecond, 0)} | ${f(g.handler.p50Ms)} | ${f(g.handler.p99Ms)} |`);
  const authRatio = g.bearer.perSecond / g.anonymous.perSecond;
  lines.push('');
  lines.push(`Authenticated ÷ anonymous throughput: ${f(authRatio)} (target ≥ 0.95: ${verdict(authRatio >= 0.95)}); the handler alone in process serves ${f(g.handler.perSecond / g.anonymous.perSecond, 2)}× the anonymous gateway's throughput, and its p50 is ${f(g.handler.p50Ms)} ms against the gateway's ${f(g.anonymous.p50Ms)} ms.`);
  lines.push('');
  const w = r.writes;
  lines.push('**Writes** (Observations into another Datastream of the same Thing):');
  lines.push('');
  lines.push('| measurement | Observations/s | p50 ms | p99 ms | target ≥ 20,000/s |');
  lines.push('|---|---:|---:|---:|---|');
  if ('perSecond' in w.createObservations) {
    const co = w.createObservations;
    lines.push(`| \`POST {base}/CreateObservations\` (dataArray), ${n(co.observations)} Observations in ${co.requests} requests | ${f(co.perSecond, 0)} | – | – | ${verdict(co.perSecond >= 20_000)} |`);
  } else {
    lines.push(`| \`POST {base}/CreateObservations\` | CreateObservations not available yet (answered ${w.createObservations.probeStatus}: ${w.createObservations.detail}) | | | not measured |`);
  }
  for (const [label, run] of [['one Observation per `POST {base}/Datastreams(…)/Observations`', w.singlePost], ['the same with `Prefer: return=minimal` (204, no read-back)', w.singlePostMinimal]] as const) {
    lines.push(`| ${label}, ${run.connections} connections, ${f(run.seconds, 0)} s${failures(run)} | ${f(run.perSecond, 0)} | ${f(run.p50Ms)} | ${f(run.p99Ms)} | ${verdict(run.perSecond >= 20_000)} |`);
  }
  return lines.join('\n') + '\n';
}

/** bench/results-sta.md: the summary, then every captured statement with its timing and plan. */
export function renderResults(r: StaReport): string {
  const lines = ['# SensorThings benchmark results', '', 'Written by `npm run bench:sta`; see the "Data API and SensorThings" section of README.md in this folder.', '', renderSummary(r)];
  lines.push(`The count window: \`phenomenonTime ge ${r.window.from} and phenomenonTime lt ${r.window.to}\` holds ${n(r.window.count)} Observations.`);
  lines.push('');
  lines.push('## Raw runs');
  lines.push('');
  lines.push('| run | conn. | seconds | done | failed | per s | p50 ms | p99 ms |');
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|');
  const raw = (label: string, run: Run | null) => {
    if (run) lines.push(`| ${label} | ${run.connections} | ${f(run.seconds, 1)} | ${run.ok} | ${run.failed} | ${f(run.perSecond, 1)} | ${f(run.p50Ms, 3)} | ${f(run.p99Ms, 3)} |`);
  };
  for (const read of r.reads) {
    raw(`HTTP: ${read.name}`, read.http);
    raw(`SQL alone: ${read.name}`, read.sql);
  }
  raw('gateway (a) bearer, closed', r.gateway.bearer);
  raw('gateway (a2) personal access token as bearer, closed', r.gateway.patBearer);
  raw('gateway (a3) personal access token as Basic password, closed', r.gateway.patBasic);
  raw('gateway (b) anonymous, open', r.gateway.anonymous);
  raw('gateway (c) handler in process', r.gateway.handler);
  raw('single POST Observation', r.writes.singlePost);
  raw('single POST Observation, return=minimal', r.writes.singlePostMinimal);
  lines.push('');
  lines.push('## The statements of each read and their plans');
  lines.push('');
  lines.push('Captured from an in-process data API on the same database (the statements the pg driver sends for one request, after one uncaptured request), each timed alone 15 times with `EXPLAIN (ANALYZE, FORMAT JSON)` (median planning + execution) and as a plain query (median round trip); the plans are `EXPLAIN (ANALYZE, BUFFERS)` of one more run.');
  lines.push('');
  for (const read of r.reads) {
    lines.push(`### ${read.name}: \`GET {base}${read.path}\``);
    lines.push('');
    read.queries.forEach((query, i) => {
      lines.push(`${i + 1}. EXPLAIN ANALYZE ${f(query.explainMs)} ms, round trip ${f(query.clientMs)} ms, parameters \`${JSON.stringify(query.values).slice(0, 300)}\``);
      lines.push('');
      lines.push('```sql');
      lines.push(query.text.trim());
      lines.push('```');
      lines.push('');
      lines.push('```');
      lines.push(read.plans[i] ?? '');
      lines.push('```');
      lines.push('');
    });
  }
  return lines.join('\n');
}
