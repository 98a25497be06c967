/**
 * MQTT fan-out of one Observation to many subscribers (the target: 1,000 subscribers, p99 at
 * most 100 ms from the POST to each subscriber's receipt). The subscribers are MQTT.js clients
 * spread over child processes (fanout-subscribers.ts), all authenticated with the same token as
 * their MQTT password and subscribed to one Datastream's Observations on the server's MQTT port.
 * Observations are POSTed one at a time, `intervalMs` apart, each carrying its sequence number as
 * its result; every arrival at every subscriber is timed from the moment its POST was sent.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO_ROOT } from '../settings.js';
import { percentile } from '../load.js';
import type { ChildCommand, ChildReply } from './fanout-protocol.js';

export interface FanoutOptions {
  /** DATA_API_URL of the server (MQTT topics are paths below it). */
  dataApiUrl: string;
  /** `mqtt://host:MQTT_PORT`. */
  mqttUrl: string;
  /** An access token or personal access token allowed to read and write the dataset. */
  token: string;
  /** `{DATA_API_URL}/v1/datasets/{id}/{slug}` of an STA API. */
  staBase: string;
  datastreamId: number;
  rounds: number;
  /** Default 1,000. At most MQTT_MAX_CONNECTIONS_PER_ADDRESS (1,000 by default) from one machine. */
  subscribers?: number;
  /** Processes the subscribers are spread over; default 2 (the machine's cores). */
  processes?: number;
  /** Observations per round; default 50. */
  perRound?: number;
  /** From one POST's start to the next one's; default 200 ms. */
  intervalMs?: number;
  /** The server's pid on this machine: its CPU time per Observation is reported (less disturbed by other load than latency). */
  serverPid?: number;
}

export interface FanoutResult {
  markdown: string;
  targetsMet: boolean;
}

const TARGET_P99_MS = 100;
/** A round ends when every message arrived, or when none arrived for this long. */
const SETTLE_MS = 5_000;

interface RoundFigures {
  posted: number;
  created: number;
  expected: number;
  received: number;
  /** Milliseconds from the POST sent to the arrival, sorted. */
  latencies: number[];
  /** Per Observation: its first subscriber's latency, and its last subscriber's (the spread is the broker's delivery). */
  firsts: number[];
  lasts: number[];
  loopP99Ms: number;
  loopMaxMs: number;
  /** The server process's CPU milliseconds during the round, when its pid was given. */
  serverCpuMs: number;
}

/** User + system CPU milliseconds a process has used (/proc/{pid}/stat, clock ticks of 10 ms). */
function cpuMsOf(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** A subscriber process and the replies it still owes. */
class SubscriberProcess {
  private readonly waiting: Array<{ type: ChildReply['type']; resolve: (reply: ChildReply) => void; reject: (error: Error) => void }> = [];
  private exited: Error | null = null;

  constructor(private readonly child: ChildProcess) {
    child.on('message', (reply: ChildReply) => {
      const at = this.waiting.findIndex((waiter) => waiter.type === reply.type);
      if (at >= 0) this.waiting.splice(at, 1)[0]!.resolve(reply);
    });
    child.on('exit', (code, signal) => {
      this.exited = new Error(`a subscriber process exited (${code ?? signal})`);
      for (const waiter of this.waiting.splice(0)) waiter.reject(this.exited);
    });
  }

  static start(): SubscriberProcess {
    const script = fileURLToPath(new URL('./fanout-subscribers.ts', import.meta.url));
    return new SubscriberProcess(fork(script, [], { cwd: REPO_ROOT, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  }

  send(command: ChildCommand): void {
    if (!this.exited) this.child.send(command);
  }

  ask<T extends ChildReply['type']>(command: ChildCommand, type: T): Promise<Extract<ChildReply, { type: T }>> {
    if (this.exited) return Promise.reject(this.exited);
    const reply = new Promise<ChildReply>((resolve, reject) => this.waiting.push({ type, resolve, reject }));
    this.child.send(command);
    return reply as Promise<Extract<ChildReply, { type: T }>>;
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.send({ type: 'stop' });
    await Promise.race([gone, sleep(10_000).then(() => void this.child.kill('SIGKILL'))]);
  }
}

/** The MQTT topic of a Datastream's Observations, in the `{slug}/v1.1/…` form clients that append the version use. */
export function observationsTopic(dataApiUrl: string, staBase: string, datastreamId: number): string {
  const root = dataApiUrl.replace(/\/+$/, '');
  if (!staBase.startsWith(`${root}/`)) throw new Error(`${staBase} is not below ${root}`);
  return `${staBase.slice(root.length + 1).replace(/\/+$/, '')}/v1.1/Datastreams(${datastreamId})/Observations`;
}

export async function measureFanout(options: FanoutOptions): Promise<FanoutResult> {
  const subscribers = options.subscribers ?? 1_000;
  const processCount = Math.max(1, Math.min(options.processes ?? 2, subscribers));
  const perRound = options.perRound ?? 50;
  const intervalMs = options.intervalMs ?? 200;
  const topic = observationsTopic(options.dataApiUrl, options.staBase, options.datastreamId);
  const target = `${options.staBase.replace(/\/+$/, '')}/Datastreams(${options.datastreamId})/Observations`;
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${options.token}` };
  const children = Array.from({ length: processCount }, () => SubscriberProcess.start());
  try {
    // Subscribers connect one process after the other, the way clients arrive over time.
    let connected = 0;
    let firstIndex = 0;
    const idPrefix = `fanout-${process.pid}-${Date.now().toString(36)}`;
    for (const [n, child] of children.entries()) {
      const count = Math.floor(subscribers / processCount) + (n < subscribers % processCount ? 1 : 0);
      const ready = await child.ask({ type: 'start', mqttUrl: options.mqttUrl, password: options.token, topic, count, firstIndex, idPrefix: `${idPrefix}-${n}` }, 'ready');
      if (ready.failed > 0) throw new Error(`${ready.failed} of ${count} subscribers could not connect or subscribe: ${ready.firstError}`);
      connected += ready.connected;
      firstIndex += count;
    }

    // Sequence numbers of their own per run, so that no stray message of another run matches.
    let seq = Math.floor(Math.random() * 1e9);
    const rounds: RoundFigures[] = [];
    // A warm-up round first (JIT, caches, the FeatureOfInterest of the Location): not counted.
    for (let round = 0; round <= options.rounds; round++) {
      for (const child of children) child.send({ type: 'round-start' });
      const cpuBefore = cpuMsOf(options.serverPid);
      const sentAt = new Map<number, number>();
      let posted = 0;
      const started = performance.now();
      for (let n = 0; n < (round === 0 ? Math.min(perRound, 10) : perRound); n++) {
        await sleep(Math.max(0, started + n * intervalMs - performance.now()));
        const mine = ++seq;
        const at = performance.timeOrigin + performance.now();
        posted++;
        const response = await fetch(target, { method: 'POST', headers, body: JSON.stringify({ result: mine }) });
        await response.body?.cancel();
        if (response.status === 201) sentAt.set(mine, at);
      }
      const expected = sentAt.size * connected;
      for (let last = -1, quietSince = performance.now(); performance.now() - quietSince < SETTLE_MS;) {
        const counts = await Promise.all(children.map((child) => child.ask({ type: 'count' }, 'count')));
        const now = counts.reduce((sum, count) => sum + count.received, 0);
        if (now >= expected) break;
        if (now !== last) [last, quietSince] = [now, performance.now()];
        await sleep(100);
      }
      const serverCpuMs = cpuMsOf(options.serverPid) - cpuBefore;
      const collected = await Promise.all(children.map((child) => child.ask({ type: 'round-end' }, 'round')));
      if (round === 0) continue;
      const seen = new Set<string>();
      const latencies: number[] = [];
      const spans = new Map<number, { first: number; last: number }>();
      for (const { arrivals } of collected) {
        for (let i = 0; i < arrivals.length; i += 3) {
          const [subscriber, number, at] = [arrivals[i]!, arrivals[i + 1]!, arrivals[i + 2]!];
          const sent = sentAt.get(number);
          const key = `${subscriber}:${number}`;
          if (sent === undefined || seen.has(key)) continue;
          seen.add(key);
          latencies.push(at - sent);
          const span = spans.get(number);
          if (!span) spans.set(number, { first: at - sent, last: at - sent });
          else [span.first, span.last] = [Math.min(span.first, at - sent), Math.max(span.last, at - sent)];
        }
      }
      rounds.push({
        posted, created: sentAt.size, expected, received: latencies.length, latencies: latencies.sort((a, b) => a - b),
        firsts: [...spans.values()].map((span) => span.first).sort((a, b) => a - b), lasts: [...spans.values()].map((span) => span.last).sort((a, b) => a - b),
        loopP99Ms: Math.max(...collected.map((c) => c.loopP99Ms)), loopMaxMs: Math.max(...collected.map((c) => c.loopMaxMs)), serverCpuMs,
      });
    }
    return report(rounds, { subscribers, connected, processCount, perRound, intervalMs, topic });
  } finally {
    await Promise.all(children.map((child) => child.stop()));
  }
}

function report(rounds: RoundFigures[], setup: { subscribers: number; connected: number; processCount: number; perRound: number; intervalMs: number; topic: string }): FanoutResult {
  const ms = (value: number) => (Number.isFinite(value) ? value.toFixed(1) : '–');
  const all = rounds.flatMap((round) => round.latencies).sort((a, b) => a - b);
  const received = rounds.reduce((sum, round) => sum + round.received, 0);
  const expected = rounds.reduce((sum, round) => sum + round.expected, 0);
  const created = rounds.reduce((sum, round) => sum + round.created, 0);
  const posted = rounds.reduce((sum, round) => sum + round.posted, 0);
  const p99s = rounds.map((round) => percentile(round.latencies, 0.99)).sort((a, b) => a - b);
  const pooledP99 = percentile(all, 0.99);
  const targetsMet = setup.connected === setup.subscribers && created === posted && received === expected && pooledP99 <= TARGET_P99_MS;
  const row = (label: string, figures: Omit<RoundFigures, 'posted'>) =>
    `| ${label} | ${figures.created} | ${figures.received}/${figures.expected} | ${ms(percentile(figures.latencies, 0.5))} | ${ms(percentile(figures.latencies, 0.95))} | `
    + `${ms(percentile(figures.latencies, 0.99))} | ${ms(percentile(figures.latencies, 1))} | ${ms(percentile(figures.firsts, 0.5))} | ${ms(percentile(figures.lasts, 0.5))} | `
    + `${ms(figures.loopP99Ms)} / ${ms(figures.loopMaxMs)} | ${ms(figures.serverCpuMs / figures.created)} |`;
  const pooled = (pick: (round: RoundFigures) => number[]) => rounds.flatMap(pick).sort((a, b) => a - b);
  const lines = [
    `${setup.connected} MQTT subscribers (MQTT.js, ${setup.processCount} processes, the token as MQTT password) on \`${setup.topic.replace(/datasets\/[^/]+/, 'datasets/{id}')}\`; `
    + `${rounds.length} rounds of ${setup.perRound} Observations POSTed one at a time, one every ${setup.intervalMs} ms (after a warm-up round). `
    + `Latency: from sending the POST to the message's arrival at each subscriber (wall clock of the machine, shared by the processes); `
    + `"first" and "last subscriber": per Observation, the earliest and the latest arrival (their difference is the time the delivery to all takes, `
    + `the subscriber processes' own queue included).`,
    '',
    '| round | Observations created | deliveries received/expected | p50 ms | p95 ms | p99 ms | max ms | first subscriber, p50 ms | last subscriber, p50 ms | subscriber processes\' event-loop delay p99 / max ms | server CPU ms per Observation |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rounds.map((round, n) => row(String(n + 1), round)),
    row('**all**', {
      created, received, expected, latencies: all, firsts: pooled((round) => round.firsts), lasts: pooled((round) => round.lasts),
      loopP99Ms: Math.max(...rounds.map((round) => round.loopP99Ms)), loopMaxMs: Math.max(...rounds.map((round) => round.loopMaxMs)),
      serverCpuMs: rounds.reduce((sum, round) => sum + round.serverCpuMs, 0),
    }),
    '',
    `p99 per round: median ${ms(percentile(p99s, 0.5))} ms (spread ${ms(p99s[0] ?? NaN)}–${ms(p99s.at(-1) ?? NaN)} ms). `
    + `Target: p99 ≤ ${TARGET_P99_MS} ms over all deliveries, every delivery received: **${targetsMet ? 'met' : 'not met'}**.`,
  ];
  return { markdown: lines.join('\n'), targetsMet };
}
