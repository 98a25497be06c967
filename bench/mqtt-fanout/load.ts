import { setTimeout as sleep } from 'node:timers/promises';
import type { MqttClient } from 'mqtt';

/**
 * The writer and the clock of the fan-out benchmark. Each Observation carries its sequence number
 * as its result; a subscriber's message is matched to its POST by it. Only a message received on
 * a replica other than the one the POST went through counts: that is the path between processes
 * (NOTIFY, then the other replica's look-up and delivery).
 */

interface Sent {
  replica: number;
  sentAt: number;
  /** When the 201's headers arrived; undefined until then, or when the POST failed. */
  answeredAt?: number;
  /** Arrival per subscriber replica. */
  arrivals: Map<number, number>;
}

export interface RoundResult {
  /** POSTs answered 201, per second of the round. */
  achievedRate: number;
  created: number;
  failed: number;
  /** The writer skipped a slot: too many POSTs were still unanswered. */
  skipped: number;
  /** Cross-replica messages expected (created × (replicas − 1)) and received. */
  expected: number;
  received: number;
  /** Milliseconds, sorted: 201 answer → arrival at a subscriber on another replica (may be negative). */
  fromAnswer: number[];
  /** Milliseconds, sorted: POST sent → that arrival. */
  fromSend: number[];
}

export class FanoutProbe {
  private readonly sent = new Map<number, Sent>();

  /** Listens on one subscriber per replica, in replica order. */
  constructor(subscribers: MqttClient[]) {
    subscribers.forEach((client, replica) => client.on('message', (_topic, payload) => {
      const at = performance.now();
      const seq = (JSON.parse(payload.toString('utf8')) as { result: unknown }).result;
      if (typeof seq === 'number') this.sent.get(seq)?.arrivals.set(replica, at);
    }));
  }

  /**
   * POSTs `rate` Observations a second for `seconds`, round-robin over the replicas' data APIs,
   * with at most `maxInFlight` unanswered; then waits until every cross-replica message arrived or
   * `settleMs` passed without one.
   */
  async round(targets: string[], token: string, firstSeq: number, rate: number, seconds: number, maxInFlight: number, settleMs: number): Promise<RoundResult> {
    this.sent.clear();
    const total = Math.round(rate * seconds);
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
    let inFlight = 0;
    let failed = 0;
    let skipped = 0;
    const posts: Promise<void>[] = [];
    const started = performance.now();
    for (let n = 0; n < total;) {
      const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate));
      for (; n < due; n++) {
        if (inFlight >= maxInFlight) {
          skipped++;
          continue;
        }
        const seq = firstSeq + n;
        const replica = n % targets.length;
        const entry: Sent = { replica, sentAt: performance.now(), arrivals: new Map() };
        this.sent.set(seq, entry);
        inFlight++;
        posts.push(fetch(targets[replica]!, { method: 'POST', headers, body: JSON.stringify({ result: seq }) }).then(async (response) => {
          const at = performance.now();
          await response.body?.cancel();
          if (response.status === 201) entry.answeredAt = at;
          else failed++;
        }, () => void failed++).finally(() => void inFlight--));
      }
      await sleep(2);
    }
    await Promise.all(posts);
    const writeSeconds = (performance.now() - started) / 1000;
    const replicas = targets.length;
    const created = [...this.sent.values()].filter((entry) => entry.answeredAt !== undefined);
    const expected = created.length * (replicas - 1);
    const crossArrivals = () => created.reduce((sum, entry) => sum + [...entry.arrivals.keys()].filter((r) => r !== entry.replica).length, 0);
    // Settle: until all arrived, or nothing new came for settleMs.
    for (let last = crossArrivals(), quietSince = performance.now(); last < expected && performance.now() - quietSince < settleMs;) {
      await sleep(50);
      const now = crossArrivals();
      if (now !== last) [last, quietSince] = [now, performance.now()];
    }
    const fromAnswer: number[] = [];
    const fromSend: number[] = [];
    for (const entry of created) {
      for (const [replica, at] of entry.arrivals) {
        if (replica === entry.replica) continue;
        fromAnswer.push(at - entry.answeredAt!);
        fromSend.push(at - entry.sentAt);
      }
    }
    const byValue = (a: number, b: number) => a - b;
    return {
      achievedRate: created.length / writeSeconds, created: created.length, failed, skipped,
      expected, received: fromAnswer.length, fromAnswer: fromAnswer.sort(byValue), fromSend: fromSend.sort(byValue),
    };
  }
}
