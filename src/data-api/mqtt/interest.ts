import { randomUUID } from 'node:crypto';
import type { Database } from '../../db/client.js';
import { oneAtATime } from '../../util/one-at-a-time.js';
import { forgetInterest, noteInterest, refreshInterest, routesWanted, type InterestRow } from './outbox.repo.js';

/**
 * Which routes have an MQTT subscriber on some process, by topic prefix (`routeTopicPrefix`): a
 * writer renders a change only when its route is wanted somewhere. Each broker notes its own
 * prefixes in `mqtt_interest` as its first subscriber under one arrives and its last leaves, and
 * refreshes them every REFRESH_MS; every process reads the rows refreshed within STALE_MS (a
 * process that died is forgotten then) at start, when a process announces a change (NOTIFY), and
 * every REFRESH_MS. This process's own prefixes count at once.
 *
 * A route's first subscriber is noted and announced before its SUBACK (`before`), and the
 * announcement names the prefix, which its hearers count at once: a change committed anywhere
 * after the SUBACK is rendered for it (unless it commits within the NOTIFY's flight to the writer).
 *
 * On PGlite (one process) there is no table to share: the local prefixes are all there is.
 */

const REFRESH_MS = 10_000;
const STALE_MS = 30_000;
/** A prefix noted before its subscription is acknowledged stays noted this long without it. */
const AHEAD_MS = 5_000;
/** How long a SUBACK waits for its route to be noted; then it goes out all the same (logged). */
const AHEAD_WAIT_MS = 2_000;

export interface InterestLog {
  warn(details: object, message: string): void;
}

export class RouteInterest {
  readonly processId = randomUUID();
  /** Per prefix, how many brokers of this process have a subscriber under it (tests run several). */
  private readonly local = new Map<string, number>();
  private cluster = new Set<string>();
  /** Prefixes noted before a subscription's SUBACK whose subscriber has not arrived yet, with when. */
  private readonly ahead = new Map<string, number>();
  /** Prefixes another process announced, with the number of reads issued before: counted until a later read. */
  private readonly heard = new Map<string, number>();
  private readsIssued = 0;
  private timer: NodeJS.Timeout | null = null;
  private started: Promise<void> | null = null;
  /** Notes and removals take turns, so that a prefix added and removed at once ends removed. */
  private readonly inTurn = oneAtATime();

  constructor(
    /** The connections its statements use (null on PGlite: nothing to share). */
    private readonly dbOf: (() => Database) | null,
    /** Tells the other processes that the interest changed (a NOTIFY naming the prefix it added, if one), after the change committed; never rejects. */
    private readonly announce: (added?: string) => Promise<void>,
    private readonly log: InterestLog,
  ) {}

  wanted(routePrefix: string): boolean {
    return this.local.has(routePrefix) || this.cluster.has(routePrefix) || this.heard.has(routePrefix);
  }

  /**
   * Before a subscription under `routePrefix` is acknowledged: when this process does not follow
   * the route yet, notes it and tells the others, waiting at most AHEAD_WAIT_MS. Never rejects.
   */
  async before(routePrefix: string): Promise<void> {
    if (!this.dbOf || this.local.has(routePrefix) || this.ahead.has(routePrefix)) return;
    const db = this.dbOf();
    const noting = this.inTurn(async () => {
      if (this.local.has(routePrefix) || this.ahead.has(routePrefix)) return;
      await noteInterest(db, this.processId, routePrefix);
      this.ahead.set(routePrefix, Date.now());
      await this.announce(routePrefix);
    }).catch((error: Error) => this.log.warn({ err: { message: error.message } }, 'MQTT: could not note which routes have subscribers here; other processes learn it at their next refresh'));
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<'late'>((resolve) => { timer = setTimeout(() => resolve('late'), AHEAD_WAIT_MS); });
    if (await Promise.race([noting, waited]) === 'late') {
      this.log.warn({ routePrefix }, 'MQTT: a subscription is acknowledged before its route could be noted; changes committed meanwhile on other processes may not reach it');
    }
    clearTimeout(timer);
  }

  /** Another process announced that it follows `routePrefix` (its row committed before the NOTIFY). */
  heardOf(routePrefix: string): void {
    this.heard.set(routePrefix, this.readsIssued);
  }

  /** A broker of this process has its first subscriber under a prefix (`present`), or lost its last. */
  readonly localChanged = (routePrefix: string, present: boolean): void => {
    const brokers = (this.local.get(routePrefix) ?? 0) + (present ? 1 : -1);
    if (brokers > 0) this.local.set(routePrefix, brokers);
    else this.local.delete(routePrefix);
    // Only the first broker in and the last out change what this process wants.
    if (brokers !== (present ? 1 : 0) || !this.dbOf) return;
    const db = this.dbOf();
    void this.inTurn(async () => {
      if (present !== this.local.has(routePrefix)) return; // changed back meanwhile: the next turn does it
      // Noted before its SUBACK: the row is there, now held by its subscriber.
      if (present && this.ahead.delete(routePrefix)) return;
      await (present ? noteInterest(db, this.processId, routePrefix) : forgetInterest(db, this.processId, routePrefix));
      await this.announce(present ? routePrefix : undefined);
    }).catch((error: Error) => this.log.warn({ err: { message: error.message } }, 'MQTT: could not note which routes have subscribers here; other processes learn it at their next refresh'));
  };

  /** Reads the other processes' interest now and then every REFRESH_MS, refreshing this process's rows. */
  async start(): Promise<void> {
    if (!this.dbOf) return;
    this.started ??= (async () => {
      await this.reload();
      this.timer = setInterval(() => void this.refresh(), REFRESH_MS);
      this.timer.unref();
    })();
    await this.started;
  }

  /** Reads the interest of every live process again (on a NOTIFY of a change). */
  async reload(): Promise<void> {
    if (!this.dbOf) return;
    const issued = ++this.readsIssued;
    try {
      this.cluster = new Set((await routesWanted(this.dbOf(), STALE_MS)).map((row: InterestRow) => row.route_prefix));
      // What was heard before this read was issued is in its answer (or was forgotten since).
      for (const [prefix, readsBefore] of this.heard) if (readsBefore < issued) this.heard.delete(prefix);
    } catch (error) {
      this.log.warn({ err: { message: (error as Error).message } }, 'MQTT: could not read which routes have subscribers; keeping the last known');
    }
  }

  /** Stops refreshing and removes this process's rows (a stopped process wants nothing). */
  async stop(): Promise<void> {
    await this.started;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.started = null;
    if (!this.dbOf || (this.local.size === 0 && this.ahead.size === 0)) return;
    const db = this.dbOf();
    this.local.clear();
    this.ahead.clear();
    await this.inTurn(() => forgetInterest(db, this.processId, null)).catch(() => {});
    // Before the feed closes the connections the NOTIFY goes out on.
    await this.announce();
  }

  private async refresh(): Promise<void> {
    const db = this.dbOf!();
    if (this.local.size > 0 || this.ahead.size > 0) {
      // Re-noted, not only touched: a row lost (a database restored, an UNLOGGED table after a crash) comes back.
      // A prefix noted ahead of a subscription that never came is dropped once AHEAD_MS passed.
      await this.inTurn(async () => {
        for (const [prefix, since] of this.ahead) if (Date.now() - since > AHEAD_MS) this.ahead.delete(prefix);
        await refreshInterest(db, this.processId, [...new Set([...this.local.keys(), ...this.ahead.keys()])]);
      }).catch((error: Error) =>
        this.log.warn({ err: { message: error.message } }, 'MQTT: could not refresh which routes have subscribers here'));
    }
    await this.reload();
  }
}
