import type { SourceBatch, SourceRecord } from '../types.js';
import type { HeldAck } from './mqtt-acks.js';

/**
 * Messages gathered into batches for `deliver`, in arrival order, while the next one accumulates,
 * so that a commit's latency is paid per batch and not per message. Two batches may be under way
 * at once: the runtime maps the second while the first is being written, and commits them in
 * order. A message's acknowledgement is released once the batch holding all its records, and
 * every batch before it, committed.
 *
 * What is buffered and not yet committed is bounded: past `maxBufferedRecords`, the message's
 * `proceed` (MQTT.js's go-ahead for the next packet) waits until a commit makes room, so that
 * MQTT.js stops reading the socket and TCP, then the broker's in-flight limit, hold the rest.
 */

export interface BatchLimits {
  /** Records per `deliver` at most (a single message with more records is delivered alone). */
  maxBatchRecords: number;
  /** Records taken and not yet committed beyond which reading pauses. */
  maxBufferedRecords: number;
  /** Batches handed to `deliver` and not yet committed, at most. */
  maxBatchesInFlight: number;
}

export const DEFAULT_BATCH_LIMITS: BatchLimits = { maxBatchRecords: 1_000, maxBufferedRecords: 10_000, maxBatchesInFlight: 2 };

export interface TakenMessage {
  records: SourceRecord[];
  /** Null for QoS 0, which is not acknowledged. */
  ack: HeldAck | null;
}

export class BatchPump {
  private readonly queue: TakenMessage[] = [];
  private readonly waiting: Array<() => void> = [];
  private buffered = 0;
  private delivering = 0;
  /** Settles when every batch handed over so far has been acknowledged (in order). */
  private acknowledged: Promise<void> = Promise.resolve();
  private scheduled = false;
  private stopped = false;

  constructor(
    private readonly deliver: (batch: SourceBatch) => Promise<void>,
    private readonly limits: BatchLimits,
    /** `deliver` rejected: the pipeline is stopping. The pump has already stopped. */
    private readonly onDeliverFailed: (error: unknown) => void,
  ) {}

  /** Queues a message's records; `proceed` runs at once, or when there is room again. */
  take(message: TakenMessage, proceed: () => void): void {
    if (this.stopped) return;
    this.queue.push(message);
    this.buffered += message.records.length;
    this.schedule();
    if (this.buffered <= this.limits.maxBufferedRecords) proceed();
    else this.waiting.push(proceed);
  }

  /** Delivers and acknowledges nothing more; a `deliver` under way may still settle, unheeded. */
  stop(): void {
    this.stopped = true;
    this.queue.length = 0;
    this.waiting.length = 0;
  }

  /** Records taken and not yet committed. */
  get bufferedRecords(): number {
    return this.buffered;
  }

  private schedule() {
    if (this.delivering >= this.limits.maxBatchesInFlight || this.scheduled || this.stopped || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.deliverNext();
    });
  }

  private async deliverNext() {
    if (this.delivering >= this.limits.maxBatchesInFlight || this.stopped || this.queue.length === 0) return;
    const messages = this.nextBatch();
    const records = messages.flatMap((message) => message.records);
    this.delivering++;
    const before = this.acknowledged;
    const delivered = records.length > 0 ? this.deliver({ records }) : Promise.resolve();
    let done!: () => void;
    this.acknowledged = new Promise((resolve) => (done = resolve));
    // Another batch may be mapped meanwhile.
    this.schedule();
    try {
      await delivered;
      await before;
    } catch (error) {
      this.stop();
      this.onDeliverFailed(error);
      return;
    } finally {
      this.delivering--;
      done();
    }
    if (this.stopped) return;
    for (const message of messages) message.ack?.release();
    this.buffered -= records.length;
    while (this.waiting.length > 0 && this.buffered <= this.limits.maxBufferedRecords) this.waiting.shift()!();
    this.schedule();
  }

  /** Whole messages from the head of the queue, up to maxBatchRecords records (at least one message). */
  private nextBatch(): TakenMessage[] {
    let count = this.queue[0]!.records.length;
    let end = 1;
    while (end < this.queue.length && count + this.queue[end]!.records.length <= this.limits.maxBatchRecords) {
      count += this.queue[end]!.records.length;
      end++;
    }
    return this.queue.splice(0, end);
  }
}
