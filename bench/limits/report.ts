import type { CapturedQuery } from '../sql-alone.js';
import type { Run } from '../sta/load.js';
import type { Extra } from './extras.js';
import { verdicts, type PairResult, type Verdict } from './pairs.js';

export interface LimitsReport {
  date: string;
  machine: string;
  node: string;
  postgres: string;
  settings: Record<string, string>;
  loadBefore: string;
  loadAtPairs: string;
  loadAfter: string;
  /** Percent of the machine's CPU time the hypervisor gave other guests while the pairs ran (/proc/stat's steal). */
  stolenAtPairs: string;
  seed: string[];
  pairs: PairResult[];
  /** Scenario name → the statements its SQL baseline runs. */
  statements: Record<string, CapturedQuery[]>;
  /** Checks of the answers: the same body from both ends, where both should give it. */
  checks: string[];
  nginxConfig: string;
  extras: Extra[];
  seconds: number;
}

const f = (value: number, digits = 2) => (Number.isNaN(value) ? '–' : value.toFixed(digits));
const metText = (met: boolean | null) => (met === null ? '–' : met ? 'met' : '**missed**');

function figure(v: Verdict, which: 'subjectMedian' | 'baselineMedian'): string {
  const value = v[which];
  if (Number.isNaN(value)) return '–';
  return v.measure === 'req/s' ? `${value.toFixed(0)}/s` : `${f(value)} ms`;
}

function ratioText(v: Verdict): string {
  const unit = v.measure === 'p99 (absolute)' ? ' ms' : '';
  return `${f(v.median)}${unit} (${f(v.min)}–${f(v.max)})`;
}

export function allVerdicts(r: LimitsReport): Verdict[] {
  return r.pairs.flatMap(verdicts);
}

/** The block of bench/README.md: one line of settings, the table of verdicts, the extra measurements' own summaries. */
export function renderSummary(r: LimitsReport): string {
  const lines: string[] = [];
  lines.push(`Run ${r.date} on ${r.machine}; Node ${r.node}; ${r.postgres}; ${r.settings['rounds']} rounds of ${r.settings['seconds per run']} s per side and connection count; load average (1 min) before / at the pairs / after: ${r.loadBefore} / ${r.loadAtPairs} / ${r.loadAfter}; CPU time stolen by the hypervisor during the pairs: ${r.stolenAtPairs}%; ${(r.seconds / 60).toFixed(1)} min in all. Raw runs: bench/results-limits.md.`);
  lines.push('');
  lines.push('| pair | conn. | measure | subject median | baseline median | ratio median (min–max) | target | |');
  lines.push('|---|---:|---|---:|---:|---:|---|---|');
  for (const v of allVerdicts(r)) {
    const failed = v.failed ? ` (${v.failed} failed requests)` : '';
    lines.push(`| ${v.pair} | ${v.connections} | ${v.measure} | ${figure(v, 'subjectMedian')} | ${figure(v, 'baselineMedian')} | ${ratioText(v)} | ${v.target ?? '–'} | ${metText(v.met)}${failed} |`);
  }
  for (const extra of r.extras) {
    lines.push('');
    if (extra.error) lines.push(`**${extra.name}**: failed: \`${extra.error.split('\n')[0]}\``);
    else lines.push(`**${extra.name}** (targets ${extra.result!.targetsMet ? 'met' : '**missed**'}):\n\n${extra.result!.markdown.trim()}`);
  }
  return `${lines.join('\n')}\n`;
}

const runCells = (run: Run) => `${run.perSecond.toFixed(0)} | ${f(run.p50Ms)} | ${f(run.p99Ms)} | ${run.failed ? `${run.failed} ${JSON.stringify(run.statuses)}` : '0'}`;

/** bench/results-limits.md: settings, seed, every run of every pair, the statements of the SQL baseline, the checks, nginx's config. */
export function renderResults(r: LimitsReport): string {
  const lines: string[] = ['# Speed limits: raw results', '', 'Written by `npm run bench` (bench/limits/run.ts); the summary is in bench/README.md ("Speed limits").', ''];
  lines.push(`## Run ${r.date}`, '');
  lines.push(`${r.machine}; Node ${r.node}; ${r.postgres}; load average (1 min) before / at the pairs / after: ${r.loadBefore} / ${r.loadAtPairs} / ${r.loadAfter}; CPU time stolen by the hypervisor during the pairs: ${r.stolenAtPairs}%; ${(r.seconds / 60).toFixed(1)} min in all.`, '');
  lines.push('### Settings', '');
  for (const [name, value] of Object.entries(r.settings)) lines.push(`- ${name}: ${value}`);
  lines.push('', '### Seed', '');
  for (const line of r.seed) lines.push(`- ${line}`);
  lines.push('', '### Summary', '', renderSummary(r));
  lines.push('### Runs', '');
  for (const { pair, runs } of r.pairs) {
    lines.push(`#### ${pair.name}`, '');
    lines.push(`Subject: ${pair.subject.label}, \`GET ${pair.subject.url}\`${pair.subject.headers?.['authorization'] ? ' with a token' : ''}.  `);
    lines.push(`Baseline: ${pair.baseline.label}, \`GET ${pair.baseline.url}\`${pair.baseline.headers?.['authorization'] ? ' with a token' : ''}.`, '');
    lines.push('| conn. | round | first | subject req/s | p50 ms | p99 ms | failed | baseline req/s | p50 ms | p99 ms | failed |');
    lines.push('|---:|---:|---|---:|---:|---:|---|---:|---:|---:|---|');
    for (const run of runs) lines.push(`| ${run.connections} | ${run.round} | ${run.first} | ${runCells(run.subject)} | ${runCells(run.baseline)} |`);
    lines.push('');
  }
  lines.push('### Checks', '');
  for (const check of r.checks) lines.push(`- ${check}`);
  lines.push('', '### Statements of the SQL baseline', '', 'Captured from an in-process application on the same database (after one uncaptured request that fills its caches); the SQL server runs them in this order on one pooled client and answers the rows of the last.', '');
  for (const [name, queries] of Object.entries(r.statements)) {
    lines.push(`#### /${name}`, '', '```sql');
    for (const query of queries) lines.push(`${query.text.replace(/\s+/g, ' ').trim()};  -- ${JSON.stringify(query.values)}`);
    lines.push('```', '');
  }
  lines.push('### nginx in front of the gateway\'s MapServer workers', '', '```nginx', r.nginxConfig.trim(), '```', '');
  return `${lines.join('\n')}\n`;
}
