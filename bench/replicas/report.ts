import { median, percentile } from '../load.js';
import type { Run } from '../sta/load.js';
import type { CpuShares } from './cpu.js';
import type { Visibility } from './visibility.js';

/** bench/results-replicas.md and the summary for bench/README.md, from the measured runs. */

export interface Measured {
  scenario: string;
  connections: number;
  /** 1, 2, 3: replicas behind nginx; 0: the scenario's SQL alone on PostgreSQL. */
  replicas: number;
  round: number;
  run: Run;
  cpu: CpuShares;
  load1: number;
}

export interface ReplicasReport {
  date: string;
  machine: string;
  node: string;
  postgres: string;
  logLevel: string;
  seconds: number;
  warmupSeconds: number;
  rounds: number;
  connections: number[];
  replicaCounts: number[];
  scenarios: Array<{ name: string; path: string; statements: number }>;
  seed: string;
  measured: Measured[];
  write: Visibility;
  grant: Visibility;
  revoke: Visibility;
  loadBefore: number[];
  loadAfter: number[];
}

const f0 = (n: number) => n.toFixed(0);
const f1 = (n: number) => n.toFixed(1);
const f2 = (n: number) => n.toFixed(2);
const spread = (values: number[], format = f0) => `${format(Math.min(...values))}–${format(Math.max(...values))}`;

function select(report: ReplicasReport, scenario: string, connections: number, replicas: number): Measured[] {
  return report.measured.filter((m) => m.scenario === scenario && m.connections === connections && m.replicas === replicas);
}

/** Per round, the throughput of n replicas over that of one replica in the same round. */
function ratios(report: ReplicasReport, scenario: string, connections: number, replicas: number): number[] {
  const single = select(report, scenario, connections, 1);
  return select(report, scenario, connections, replicas).map((m) => m.run.perSecond / (single.find((s) => s.round === m.round)?.run.perSecond ?? Number.NaN));
}

function throughputTable(report: ReplicasReport): string[] {
  const lines = [
    '| scenario | conn. | behind nginx | req/s (median, spread over rounds) | p50 ms | p99 ms (spread) | ×1 replica (spread) | failed | CPU cores used: replicas / PostgreSQL (this database) / PostgreSQL (other) / nginx / load generator / others | machine busy |',
    '|---|---:|---|---:|---:|---:|---:|---:|---|---:|',
  ];
  for (const scenario of report.scenarios) {
    for (const connections of report.connections) {
      for (const replicas of [...report.replicaCounts, 0]) {
        const runs = select(report, scenario.name, connections, replicas);
        if (runs.length === 0) continue;
        const perSecond = runs.map((m) => m.run.perSecond);
        const p99 = runs.map((m) => m.run.p99Ms);
        const ratio = replicas > 1 ? ratios(report, scenario.name, connections, replicas) : [];
        const cpu = (pick: (c: CpuShares) => number) => f2(median(runs.map((m) => pick(m.cpu))));
        const who = replicas === 0 ? `SQL alone (${scenario.statements} statements, ${connections} pg clients)` : `${replicas} replica${replicas > 1 ? 's' : ''}`;
        lines.push(`| ${scenario.name} | ${connections} | ${who} | **${f0(median(perSecond))}** (${spread(perSecond)}) | ${f2(median(runs.map((m) => m.run.p50Ms)))} | `
          + `${f2(median(p99))} (${spread(p99, f1)}) | ${ratio.length ? `**${f2(median(ratio))}×** (${spread(ratio, f2)})` : ''} | ${runs.reduce((sum, m) => sum + m.run.failed, 0)} | `
          + `${cpu((c) => c.replicas)} / ${cpu((c) => c.postgres)} / ${cpu((c) => c.postgresOther)} / ${cpu((c) => c.nginx)} / ${cpu((c) => c.bench)} / ${cpu((c) => c.others)} | ${cpu((c) => c.busy)} of ${runs[0]!.cpu.cores} |`);
      }
    }
  }
  return lines;
}

function visibilityLine(what: string, v: Visibility): string {
  const sorted = [...v.samples].sort((a, b) => a - b);
  return `| ${what} | ${sorted.length} | ${f2(percentile(sorted, 0.5))} | ${f2(percentile(sorted, 0.99))} | ${f2(sorted.at(-1)!)} | ${v.firstPoll} of ${sorted.length} | ${f2(v.pollMs)} |`;
}

function visibilityTable(report: ReplicasReport): string[] {
  return [
    '| change (made through replica A, polled through replica B, each on its own port) | samples | p50 ms | p99 ms | max ms | seen on the first poll | one poll, ms (median) |',
    '|---|---:|---:|---:|---:|---:|---:|',
    visibilityLine('a group created (POST 201 on A → GET 200 on B)', report.write),
    visibilityLine('DATASET_READ granted (POST /v1/assignments 201 on A → the dataset 200 on B)', report.grant),
    visibilityLine('DATASET_READ revoked (DELETE /v1/assignments 204 on A → the dataset 404 on B)', report.revoke),
  ];
}

function settings(report: ReplicasReport): string {
  return `${report.date}; ${report.machine}; Node ${report.node}; ${report.postgres}. `
    + `Replicas: \`node dist/server.js all\` with LOG_LEVEL=${report.logLevel} (the deployed default; the cluster test runs them at warn), `
    + 'the pool size and every other setting at its default, behind Debian\'s nginx as test/cluster/nginx.ts configures it (one worker, no upstream keepalive: a connection per proxied request). '
    + `Load: autocannon in the benchmark process, ${report.warmupSeconds} s warm-up then ${report.seconds} s per run, ${report.rounds} rounds, the replica counts interleaved (1, 2, 3, 1, 2, 3, …). `
    + `Data: ${report.seed}. Load average (1, 5, 15 min) before: ${report.loadBefore.map(f1).join(', ')}; after: ${report.loadAfter.map(f1).join(', ')}; `
    + `during the runs (1 min): ${spread(report.measured.map((m) => m.load1), f1)}.`;
}

const CAVEATS = [
  'Everything shares this machine\'s cores: nginx, PostgreSQL, the replicas, the identity provider, the load generator, and whatever else runs on it (the "others" column: other people\'s benchmarks and tests). '
  + 'A second or third replica only helps while a core is idle; once the machine is busy, more replicas divide the same CPU among more processes. The "machine busy" column says how full it was. '
  + 'The targets (2 replicas ≥ 1.6×, 3 replicas ≥ 2.2× of one) assume cores to spare; they cannot be met on 2 cores shared by every part, and the ratios here say how close a shared 2-core machine comes.',
  'The fronts: the three counts are three nginx instances over the first 1, 2 or 3 replicas of one cluster of three on one database, so every count meets the same processes, warm caches and data; the replicas outside a front stay idle but for their background polling.',
  'SQL alone: the statements one request runs (captured from an in-process instance of the same code), run in order by as many pg clients as there were HTTP connections, back to back, from the benchmark process: the database\'s own limit for this work on this machine (the pg client\'s cost in the benchmark process included). Where it is far above the HTTP figure, the database is not the limit.',
  'PostgreSQL (this database): the backends connected to the benchmark\'s database at the end of the run (pg_stat_activity); PostgreSQL (other): the server\'s own processes and other databases\' backends (other people\'s tests on the same server). A backend that ended during a run is not counted.',
];

export function renderResults(report: ReplicasReport): string {
  return [
    '# Replicas behind nginx: benchmark results', '',
    'Written by `npm run bench:replicas`; see "Replicas behind nginx" in README.md in this folder.', '',
    settings(report), '',
    '## Throughput and latency: 1, 2 and 3 replicas, and the SQL alone', '',
    ...report.scenarios.map((s) => `- ${s.name}: \`GET ${s.path}\``), '',
    ...throughputTable(report), '',
    'CPU: cores used during the run (1.00 = one core for the whole run), medians over rounds, from /proc.', '',
    '## Cross-replica visibility', '',
    ...visibilityTable(report), '',
    '## What limits the figures', '',
    ...CAVEATS.map((c) => `- ${c}`), '',
  ].join('\n');
}

/** The summary block of bench/README.md: the ratios and the visibility, with where the full tables are. */
export function renderSummary(report: ReplicasReport): string {
  const lines = [settings(report), '', '| scenario | conn. | 1 replica req/s | 2 replicas req/s (×1) | 3 replicas req/s (×1) | SQL alone, sequences/s | p99 ms, 1 / 2 / 3 |', '|---|---:|---:|---:|---:|---:|---:|'];
  for (const scenario of report.scenarios) {
    for (const connections of report.connections) {
      const rate = (n: number) => median(select(report, scenario.name, connections, n).map((m) => m.run.perSecond));
      const p99 = (n: number) => f1(median(select(report, scenario.name, connections, n).map((m) => m.run.p99Ms)));
      const ratio = (n: number) => { const r = ratios(report, scenario.name, connections, n); return `${f2(median(r))}×, ${spread(r, f2)}`; };
      lines.push(`| ${scenario.name} | ${connections} | ${f0(rate(1))} | ${f0(rate(2))} (${ratio(2)}) | ${f0(rate(3))} (${ratio(3)}) | ${f0(rate(0))} | ${p99(1)} / ${p99(2)} / ${p99(3)} |`);
    }
  }
  return [...lines, '', ...visibilityTable(report), '', 'Full tables (spread, CPU by process, machine load): bench/results-replicas.md.', ''].join('\n');
}
