import type { Run } from '../sta/load.js';
import type { FeatureLoad } from './setup.js';

export const NGINX_KEPT = 'nginx, kept FastCGI connections (keepalive 4, fastcgi_keep_conn on)';
export const NGINX_PER_REQUEST = 'nginx, a FastCGI connection per request';
export type Through = 'gateway' | typeof NGINX_KEPT | typeof NGINX_PER_REQUEST;

export interface OwsLoad {
  through: Through;
  name: string;
  kind: 'WFS' | 'WMS';
  /** closed / open dataset, with token or anonymous. */
  dataset: 'closed' | 'open';
  caller: 'token' | 'anonymous' | 'none (nginx)';
  path: string;
  /** What the probe before the run read: features or PNG bytes. */
  probe: string;
  run: Run;
}

export interface OwsReport {
  date: string;
  machine: string;
  cores: number;
  node: string;
  postgres: string;
  mapserver: string;
  nginx: string;
  nginxWorkers: string;
  owsWorkers: number;
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
  logLevel: string;
  loadBefore: string;
  loadAtReads: string;
  loadAfter: string;
  features: number;
  sequential: FeatureLoad;
  concurrent: FeatureLoad;
  loads: OwsLoad[];
  nginxConfigs: string[];
  /** The WMS load's box (a part of the grid) and the whole grid's. */
  bbox: string;
  fullBbox: string;
  /** Points inside the load's box. */
  pointsInBbox: number;
  /** One GetMap of the whole grid (100,000 points) alone through the gateway, ms, three times. */
  fullMapMs: number[];
}

const f = (value: number | undefined, digits = 2) => (value === undefined || Number.isNaN(value) ? '–' : value.toFixed(digits));
const met = (ok: boolean) => (ok ? 'met' : '**missed**');

function find(r: OwsReport, through: OwsLoad['through'], kind: OwsLoad['kind'], dataset: OwsLoad['dataset'], caller: OwsLoad['caller']): OwsLoad | undefined {
  return r.loads.find((l) => l.through === through && l.kind === kind && l.dataset === dataset && l.caller === caller);
}

export interface Ratio { label: string; value: number; target: number; unit?: string }

export function ratios(r: OwsReport): Ratio[] {
  const out: Ratio[] = [];
  const rps = (l: OwsLoad | undefined) => l?.run.perSecond ?? Number.NaN;
  for (const [nginx, short] of [[NGINX_KEPT, 'nginx kept conn.'], [NGINX_PER_REQUEST, 'nginx conn. per request']] as const) {
    for (const kind of ['WFS', 'WMS'] as const) {
      out.push({ label: `${kind}: gateway (token, closed) ÷ ${short} (closed map)`, value: rps(find(r, 'gateway', kind, 'closed', 'token')) / rps(find(r, nginx, kind, 'closed', 'none (nginx)')), target: 0.95 });
      out.push({ label: `${kind}: gateway (anonymous, open) ÷ ${short} (open map)`, value: rps(find(r, 'gateway', kind, 'open', 'anonymous')) / rps(find(r, nginx, kind, 'open', 'none (nginx)')), target: 0.95 });
    }
  }
  for (const kind of ['WFS', 'WMS'] as const) {
    out.push({ label: `${kind}: authenticated ÷ anonymous, same open dataset`, value: rps(find(r, 'gateway', kind, 'open', 'token')) / rps(find(r, 'gateway', kind, 'open', 'anonymous')), target: 0.95 });
    out.push({ label: `${kind}: authenticated on the closed ÷ anonymous on the open dataset`, value: rps(find(r, 'gateway', kind, 'closed', 'token')) / rps(find(r, 'gateway', kind, 'open', 'anonymous')), target: 0.95 });
  }
  return out;
}

/** The summary for bench/README.md: setup line, loads table, ratios with targets. */
export function renderSummary(r: OwsReport): string {
  const lines: string[] = [];
  lines.push(`Run ${r.date} on ${r.machine}; Node ${r.node}; ${r.postgres}; ${r.mapserver}; ${r.nginx}; load average (1 min) before / when the reads began / after: ${r.loadBefore} / ${r.loadAtReads} / ${r.loadAfter}.`);
  lines.push('');
  lines.push(`Setup: \`node dist/server.js all\` (LOG_LEVEL=${r.logLevel}, OWS_WORKERS=${r.owsWorkers}) on a fresh PostgreSQL database with PostGIS; two released datasets with an OWS named API and a \`trees\` Point collection of ${r.features.toLocaleString('en')} features each (one closed, one \`openDataAccess\`); nginx baseline: ${r.owsWorkers} more \`spawn-fcgi … mapserv\` workers of its own on the same mapfiles, nginx \`worker_processes ${r.nginxWorkers}\`, \`fastcgi_pass\` to an upstream of their unix sockets, once with \`keepalive 4\` and \`fastcgi_keep_conn on\`, once with a connection per request (pool and nginx started afresh for each). Loads: autocannon, ${r.connections} connections, ${r.durationSeconds} s after a ${r.warmupSeconds} s warm-up, one after another (never two at once). All of it, autocannon included, on ${r.cores} cores.`);
  lines.push('');
  lines.push('**Feature load** (`POST {base}/collections/trees/items`, FeatureCollections of 10,000 Points with two attributes, admin token):');
  lines.push('');
  lines.push('| load | features | wall time | features/s, total | features/s, median request (min–max) | target ≥ 10,000/s |');
  lines.push('|---|---:|---:|---:|---:|---|');
  for (const [label, load] of [['10 requests one after another, closed dataset', r.sequential], ['10 requests, 2 at a time, open dataset (same data)', r.concurrent]] as const) {
    lines.push(`| ${label} | ${load.features.toLocaleString('en')} | ${load.seconds.toFixed(2)} s | ${f(load.totalPerSecond, 0)} | ${f(load.medianPerSecond, 0)} (${f(load.minPerSecond, 0)}–${f(load.maxPerSecond, 0)}) | ${met(load.totalPerSecond >= 10_000 && load.medianPerSecond >= 10_000)} |`);
  }
  lines.push('');
  lines.push(`**Reads** (WFS 2.0 GetFeature of 10 features as GeoJSON; WMS 1.3.0 GetMap 256×256 PNG of \`BBOX=${r.bbox}\`, ${r.pointsInBbox.toLocaleString('en')} of the points, a sixteenth of the grid; one GetMap of the whole grid \`BBOX=${r.fullBbox}\`, 100,000 points, takes ${r.fullMapMs.map((ms) => ms.toFixed(0)).join(', ')} ms alone through the gateway, too slow for 10 connections within autocannon's 10 s timeout on 2 workers):`);
  lines.push('');
  lines.push('| through | request | dataset, caller | req/s | p50 ms | p99 ms | not 200 |');
  lines.push('|---|---|---|---:|---:|---:|---:|');
  for (const l of r.loads) {
    lines.push(`| ${l.through} | ${l.kind} ${l.kind === 'WFS' ? 'GetFeature, 10 features' : 'GetMap 256×256 PNG'} | ${l.dataset}, ${l.caller} | ${f(l.run.perSecond, 0)} | ${f(l.run.p50Ms)} | ${f(l.run.p99Ms)} | ${l.run.failed ? `${l.run.failed} ${JSON.stringify(l.run.statuses)}` : 0} |`);
  }
  lines.push('');
  lines.push('| ratio of req/s | value | target ≥ 0.95 |');
  lines.push('|---|---:|---|');
  for (const ratio of ratios(r)) lines.push(`| ${ratio.label} | ${f(ratio.value, 3)} | ${Number.isNaN(ratio.value) ? '–' : met(ratio.value >= ratio.target)} |`);
  return lines.join('\n') + '\n';
}

/** The raw detail of one run for bench/results-ows.md. */
export function renderRun(r: OwsReport): string {
  const lines: string[] = [];
  lines.push(`## Run ${r.date}`);
  lines.push('');
  lines.push(renderSummary(r));
  lines.push('### Feature load, request by request (ms)');
  lines.push('');
  lines.push(`- one after another: ${r.sequential.requestMs.map((ms) => ms.toFixed(0)).join(', ')}`);
  lines.push(`- 2 at a time: ${r.concurrent.requestMs.map((ms) => ms.toFixed(0)).join(', ')}`);
  lines.push('');
  lines.push('### Loads in full');
  lines.push('');
  lines.push('| through | request | dataset, caller | path | probe | answers 200 | seconds | req/s | p50 ms | p99 ms | statuses |');
  lines.push('|---|---|---|---|---|---:|---:|---:|---:|---:|---|');
  for (const l of r.loads) {
    lines.push(`| ${l.through} | ${l.kind} | ${l.dataset}, ${l.caller} | \`${l.path.replaceAll('|', '\\|')}\` | ${l.probe} | ${l.run.ok} | ${f(l.run.seconds, 1)} | ${f(l.run.perSecond, 1)} | ${f(l.run.p50Ms, 3)} | ${f(l.run.p99Ms, 3)} | ${JSON.stringify(l.run.statuses)} |`);
  }
  lines.push('');
  lines.push('<details><summary>nginx.conf of this run (both variants)</summary>');
  lines.push('');
  for (const config of r.nginxConfigs) {
    lines.push('```nginx');
    lines.push(config.trimEnd());
    lines.push('```');
  }
  lines.push('');
  lines.push('</details>');
  lines.push('');
  return lines.join('\n');
}
