import type { Database } from '../../db/client.js';
import { oneAtATime } from '../../util/one-at-a-time.js';
import { insertOutbox, outboxEnd, pruneOutbox, readOutbox, type OutboxRow } from './outbox.repo.js';
import type { RenderedChange } from './renderer.js';

/**
 * Rendered changes between processes on PostgreSQL alone (contract "MQTT across replicas"): the
 * writer puts them in `mqtt_outbox` and wakes the readers with at most one NOTIFY per
 * NOTIFY_EVERY_MS; every process with a broker reads the rows after the last it read, on a wake-up
 * or its poll, and hands them to its broker. One read serves every change written since the last,
 * so the reads per change fall as the rate rises.
 */

/** At most one wake-up per this many milliseconds from a writing process (~100 a second). */
export const NOTIFY_EVERY_MS = 10;
/** A reader looks for rows this often when no wake-up came (a NOTIFY lost with its connection). */
const POLL_MS = 1_000;
/**
 * A reader reads at most this often: under a steady stream of writes (several writing processes
 * each waking it up to 100 times a second) one read takes what 100 ms brought, so the reads per
 * write fall as the rate rises (at 200 writes/s, 0.05); after a quiet spell it reads at once.
 */
export const MIN_READ_INTERVAL_MS = 100;
/** Rows per read; a reader behind reads again at once. */
const READ_LIMIT = 2_000;
/**
 * An id skipped by a read (its insert had not committed yet) is looked for again, on each read,
 * this long; an insert rolled back leaves an id that never comes.
 */
const GAP_PATIENCE_MS = 5_000;
const MAX_GAPS = 10_000;
/** Rows are kept this long: a reader more behind than this misses them (it logs so). */
export const OUTBOX_KEEP_MS = 60_000;
const PRUNE_EVERY_MS = 10_000;

export interface OutboxMetrics {
  notified(): void;
  read(rows: number, lagSeconds: number): void;
  written(rows: number): void;
}

export interface OutboxLog {
  warn(details: object, message: string): void;
  debug?(details: object, message: string): void;
}

/** The writing side: one insert at a time per process (ids then grow in this process's commit order), coalesced wake-ups. */
export class OutboxWriter {
  private readonly inTurn = oneAtATime();
  private lastNotifyAt = 0;
  private notifyTimer: NodeJS.Timeout | null = null;
  private lastPruneAt = Date.now();

  constructor(
    /** The connections it writes through (the feed's own). */
    private readonly dbOf: () => Database,
    /** Sends the wake-up (a NOTIFY). */
    private readonly notify: () => Promise<void>,
    private readonly metrics: OutboxMetrics,
    private readonly log: OutboxLog,
  ) {}

  readonly write = (changes: RenderedChange[]): Promise<void> => this.inTurn(async () => {
    await insertOutbox(this.dbOf(), changes);
    this.metrics.written(changes.length);
    this.wake();
    if (Date.now() - this.lastPruneAt > PRUNE_EVERY_MS) {
      this.lastPruneAt = Date.now();
      void pruneOutbox(this.dbOf(), OUTBOX_KEEP_MS).catch((error: Error) => this.log.debug?.({ err: { message: error.message } }, 'MQTT outbox: could not prune'));
    }
  });

  /** Stops a wake-up still waiting for its turn. */
  close(): void {
    if (this.notifyTimer) clearTimeout(this.notifyTimer);
    this.notifyTimer = null;
  }

  private wake(): void {
    if (this.notifyTimer) return; // one is on its way, and will cover these rows too
    const wait = this.lastNotifyAt + NOTIFY_EVERY_MS - Date.now();
    if (wait <= 0) return this.sendWake();
    this.notifyTimer = setTimeout(() => {
      this.notifyTimer = null;
      this.sendWake();
    }, wait);
  }

  private sendWake(): void {
    this.lastNotifyAt = Date.now();
    this.metrics.notified();
    this.notify().catch((error: Error) => this.log.warn({ err: { message: error.message } }, 'MQTT outbox: could not wake the readers; they find the rows at their next poll'));
  }
}

/** The reading side of one process: its position, the ids it still waits for, a read at a time. */
export class OutboxReader {
  private after: bigint | null = null;
  /** Skipped ids, with when they were first missed. */
  private readonly gaps = new Map<bigint, number>();
  private reading = false;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private timerDue = 0;
  private lastReadAt = 0;
  private stopped = false;

  constructor(
    private readonly db: Database,
    /** Hands the rows' changes on; the next read waits for it. */
    private readonly deliver: (changes: RenderedChange[]) => Promise<void>,
    private readonly metrics: OutboxMetrics,
    private readonly log: OutboxLog,
  ) {}

  /** Starts after the rows written so far (what was announced before this process listened is not its to deliver). */
  async start(): Promise<void> {
    this.after = await outboxEnd(this.db);
    this.schedule(POLL_MS);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** A writer says there are new rows (or the connection that hears it came back). */
  readonly wake = (): void => {
    if (this.stopped || this.after === null) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    const wait = this.lastReadAt + MIN_READ_INTERVAL_MS - Date.now();
    if (wait > 0) return this.schedule(wait);
    void this.read();
  };

  /** The next read in `ms`, unless one is due sooner already. */
  private schedule(ms: number): void {
    if (this.stopped) return;
    const due = Date.now() + ms;
    if (this.timer && this.timerDue <= due) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerDue = due;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.wake();
    }, ms);
    this.timer.unref();
  }

  private async read(): Promise<void> {
    this.reading = true;
    this.again = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    let behind = false;
    try {
      this.lastReadAt = Date.now();
      const rows = await readOutbox(this.db, this.after!, [...this.gaps.keys()], READ_LIMIT);
      this.take(rows);
      if (rows.length > 0) await this.deliver(rows.map(renderedOfRow));
      behind = rows.length === READ_LIMIT;
    } catch (error) {
      this.log.warn({ err: { message: (error as Error).message } }, 'MQTT outbox: could not read; trying again at the next wake-up or poll');
    } finally {
      this.reading = false;
      // Behind: at once. Woken meanwhile, or ids still missing: at the next interval. Else at the poll.
      if (behind) void this.read();
      else if (this.again) this.schedule(MIN_READ_INTERVAL_MS);
      else this.schedule(this.gaps.size > 0 ? MIN_READ_INTERVAL_MS : POLL_MS);
    }
  }

  /** Moves the position past the rows read, noting the ids skipped on the way and giving up on old ones. */
  private take(rows: OutboxRow[]): void {
    const now = Date.now();
    let lag = 0;
    for (const row of rows) {
      const id = BigInt(row.id);
      lag = Math.max(lag, row.age_ms / 1000);
      if (this.gaps.delete(id)) continue;
      // Bounded: a jump of the sequence (ids of a failed bulk insert) is not worth a list that long.
      for (let skipped = this.after! + 1n; skipped < id && this.gaps.size < MAX_GAPS; skipped++) this.gaps.set(skipped, now);
      if (id > this.after!) this.after = id;
    }
    for (const [id, since] of this.gaps) {
      if (now - since < GAP_PATIENCE_MS) continue;
      this.gaps.delete(id);
      this.log.debug?.({ id: String(id) }, 'MQTT outbox: an id never came (its insert rolled back)');
    }
    this.metrics.read(rows.length, lag);
  }
}

function renderedOfRow(row: OutboxRow): RenderedChange {
  return {
    datasetId: row.dataset_id, slug: row.slug, entitySet: row.entity_set, id: Number(row.entity_id), kind: row.kind,
    ...(row.properties ? { properties: row.properties } : {}),
    text: row.body, linkIds: row.link_ids,
  };
}
