import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { LoadResult } from './load.js';
import type { SqlAloneResult } from './sql-alone.js';
import type { TokenCheckResult } from './token-check.js';
import type { SeedResult } from './database.js';
import type { DatasetWriteResult } from './dataset-writes.js';

export interface StartMeasurement { label: string; readyMs: number; rssMiB: number; note?: string }

export interface BenchReport {
  date: string;
  machine: string;
  node: string;
  postgres: string;
  durationSeconds: number;
  connections: number;
  singleSeconds: number;
  logLevel: string;
  /** 1-minute load average before and after, to spot a busy machine. */
  loadAverage: string;
  seed: SeedResult;
  starts: StartMeasurement[];
  rssAfterLoadMiB: number | null;
  scenarios: Array<{ name: string; load: LoadResult; sql: SqlAloneResult | { path: string; status: number } }>;
  token: TokenCheckResult | null;
  datasetWrites: DatasetWriteResult | null;
}

const f = (value: number | undefined, digits = 2) => (value === undefined || Number.isNaN(value) ? '–' : value.toFixed(digits));

export function renderReport(r: BenchReport): string {
  const lines: string[] = [];
  lines.push(`Run ${r.date} on ${r.machine}; Node ${r.node}; ${r.postgres}; load average before/after: ${r.loadAverage}.`);
  lines.push('');
  lines.push(`Data: ${Object.entries(r.seed.counts).map(([table, count]) => `${count.toLocaleString('en')} ${table}`).join(', ')} (seeded in ${r.seed.seconds.toFixed(1)} s).`);
  lines.push(`Load: autocannon, ${r.durationSeconds} s with ${r.connections} connections and ${r.singleSeconds} s with one, per scenario, after a 2 s warm-up; server \`node dist/server.js all\` with LOG_LEVEL=${r.logLevel}, load generator, server and PostgreSQL on the same machine.`);
  lines.push('');
  lines.push('### HTTP, beside the same SQL alone');
  lines.push('');
  lines.push(`| scenario | req/s, ${r.connections} conn. | p50 ms, ${r.connections} conn. | p99 ms, ${r.connections} conn. | p50 ms, 1 conn. | p99 ms, 1 conn. | SQL statements | SQL alone: EXPLAIN ANALYZE ms | SQL alone: round trips ms | p50 (1 conn.) ÷ SQL round trips |`);
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const { name, load, sql } of r.scenarios) {
    const path = `\`GET ${load.path}\``;
    if (load.probeStatus !== 200 || !load.loaded || !load.single) {
      lines.push(`| ${name} ${path} | not run: answered ${load.probeStatus}${load.probeStatus === 403 ? ' (route not registered)' : ''} | | | | | | | | |`);
      continue;
    }
    const timed = 'queries' in sql ? sql : null;
    const { loaded, single } = load;
    lines.push(`| ${name} ${path} | ${f(loaded.requestsPerSecond, 0)} | ${f(loaded.p50Ms)} | ${f(loaded.p99Ms)} | ${f(single.p50Ms)} | ${f(single.p99Ms)} | ${timed ? timed.queries.length : '–'} | ${f(timed?.explainMs)} | ${f(timed?.clientMs)} | ${timed ? f(single.p50Ms / timed.clientMs, 1) + '×' : '–'} |`);
    for (const run of [loaded, single]) {
      if (run.non2xx || run.errors) lines.push(`| ↳ ${run.connections} conn.: ${run.non2xx} non-2xx and ${run.errors} errors of ${run.requests} | | | | | | | | | |`);
    }
  }
  lines.push('');
  lines.push(`With ${r.connections} connections on ${r.machine.split(' ')[0]} cores shared by the load generator, the server and PostgreSQL, latency is mostly queueing (p50 ≈ connections ÷ req/s); the single-connection p50 is the latency of one request on its own and is the figure to set beside the SQL alone. "SQL alone" runs the statements the request runs (captured from the application itself), one after another on one connection, each the median of 15 runs: "EXPLAIN ANALYZE" is planning + execution time inside PostgreSQL, "round trips" adds the protocol and network cost every client pays.`);
  lines.push('');
  lines.push('<details><summary>The statements, one by one</summary>');
  lines.push('');
  for (const { load, sql } of r.scenarios) {
    if (!('queries' in sql)) continue;
    lines.push(`\`GET ${load.path}\``);
    lines.push('');
    lines.push('| statement | EXPLAIN ANALYZE ms | round trip ms |');
    lines.push('|---|---:|---:|');
    for (const query of sql.queries) {
      const text = query.text.replace(/\s+/g, ' ').replaceAll('|', '\\|');
      lines.push(`| \`${text.length > 160 ? `${text.slice(0, 160)}…` : text}\` | ${f(query.explainMs)} | ${f(query.clientMs)} |`);
    }
    lines.push('');
  }
  lines.push('</details>');
  lines.push('');
  lines.push('### Dataset writes');
  lines.push('');
  if (r.datasetWrites) {
    const w = r.datasetWrites;
    lines.push('| measurement | figure |');
    lines.push('|---|---:|');
    lines.push(`| CREATE saga, from the 201 to \`provisioned: true\` (${w.sagas} creates, one after another) | p50 ${f(w.sagaP50Ms, 1)} ms, p99 ${f(w.sagaP99Ms, 1)} ms, max ${f(w.sagaMaxMs, 1)} ms |`);
    lines.push(`| ${w.creates.toLocaleString('en')} creates in a row, one client | ${f(w.createsPerSecond, 0)} creates/s |`);
    lines.push('');
    lines.push('The saga time is polled every 2 ms over HTTP, so it includes up to one poll; the creates run while the sagas of the earlier ones provision their schemas.');
  } else {
    lines.push('not run');
  }
  lines.push('');
  lines.push('### Start and memory');
  lines.push('');
  lines.push('| start | ready after | RSS of the server process, idle |');
  lines.push('|---|---:|---:|');
  for (const start of r.starts) lines.push(`| ${start.label}${start.note ? ` (${start.note})` : ''} | ${(start.readyMs / 1000).toFixed(2)} s | ${start.rssMiB.toFixed(0)} MiB |`);
  if (r.rssAfterLoadMiB !== null) lines.push(`| PostgreSQL, after the load scenarios | – | ${r.rssAfterLoadMiB.toFixed(0)} MiB |`);
  lines.push('');
  lines.push('"ready after" is the time from spawning the command to the first 200 of `/health/ready`; RSS is VmRSS of the node process that runs the server (not npm\'s or tsx\'s wrapper), read 2 s after ready.');
  lines.push('');
  lines.push('### Repeated token check');
  lines.push('');
  if (r.token) {
    lines.push('| check | time |');
    lines.push('|---|---:|');
    lines.push(`| first verification (discovery, JWKS fetch, RS256 signature) | ${r.token.firstVerifyMs.toFixed(1)} ms |`);
    lines.push(`| repeated token, \`verifyCached(token)\` | ${r.token.cachedNs.toFixed(0)} ns |`);
    lines.push(`| repeated token, \`await verify(token)\` (what the hook calls) | ${r.token.awaitedNs.toFixed(0)} ns |`);
    lines.push('');
    lines.push(`Each the mean of ${r.token.iterations.toLocaleString('en')} calls with one real token of the development identity provider.`);
  } else {
    lines.push('not run');
  }
  return lines.join('\n') + '\n';
}

/**
 * Puts a run at the top of a results file (`bench/results-*.md`): `title` and `source` make its
 * header, the runs already there (from their first `## Run ` heading on) follow, newest first.
 */
export function prependRun(resultsPath: string, title: string, source: string, run: string): void {
  const header = `# ${title}: raw results\n\nWritten by ${source}, newest run first.\n\n`;
  const earlier = existsSync(resultsPath) ? readFileSync(resultsPath, 'utf8').replace(/^[\s\S]*?(?=^## Run )/m, '') : '';
  writeFileSync(resultsPath, `${header}${run}\n${earlier.startsWith('## Run ') ? earlier : ''}`);
}
