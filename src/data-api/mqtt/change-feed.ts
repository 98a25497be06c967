import { sql } from 'kysely';
import type { ConnectionLog, Database } from '../../db/client.js';
import { listenForNotifications, type Listener } from '../../db/notifications.js';

/** One committed SensorThings write, as the store reports it. */
export interface StaChange {
  schema: string;
  entitySet: string;
  id: number;
  kind: 'create' | 'update' | 'delete';
  /** An update's changed properties, when the writer knew them (see the store's Change). */
  properties?: string[];
}

export type ChangeHandler = (changes: StaChange[]) => void;

export const STA_CHANGES_CHANNEL = 'sta_changes';
/** PostgreSQL refuses a NOTIFY payload of 8000 bytes or more; leave room for the JSON around the ids. */
const MAX_PAYLOAD_BYTES = 7_000;

/**
 * A NOTIFY payload: one schema, one entity set and kind, many ids (`{"s","e","k","i":[…]}`), and
 * for updates whose changed properties are known, their names beside each id (`"p":[[…],…]`).
 */
interface Wire { s: string; e: string; k: StaChange['kind']; i: number[]; p?: string[][] }

/**
 * Carries committed SensorThings writes to every gateway process, whichever process wrote them:
 * on PostgreSQL through NOTIFY on `sta_changes` (every process LISTENs, the writer included, so
 * there is one path), on PGlite (a single process) in process.
 *
 * `announce` runs once per written entity (a bulk insert of 100,000 Observations calls it 100,000
 * times), so it only queues; the queue is flushed once per event-loop turn, grouped by schema,
 * entity set and kind into as few NOTIFYs as fit under PostgreSQL's payload limit (about a thousand
 * ids each). Changes are best effort: a NOTIFY that fails is logged, not retried.
 */
export class StaChangeFeed {
  private pending: StaChange[] = [];
  private flushScheduled = false;
  private handlers = new Set<ChangeHandler>();
  private listener: Listener | null = null;

  constructor(private readonly db: Database, private readonly databaseUrl: string | null, private readonly log: ConnectionLog) {}

  announce(change: StaChange): void {
    this.pending.push(change);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  /**
   * Registers a handler for the changes of every process; returns its removal. On PostgreSQL the
   * first handler opens the LISTEN connection and the last one's removal closes it.
   */
  subscribe(handler: ChangeHandler): () => Promise<void> {
    this.handlers.add(handler);
    if (this.databaseUrl && !this.listener) {
      this.listener = listenForNotifications(this.databaseUrl, STA_CHANGES_CHANNEL, {
        onNotify: (payload) => this.deliver(decode(payload)),
        // Changes notified while the connection was down are lost; MQTT notifications are best effort.
        onReconnect: () => {},
      }, this.log);
    }
    return async () => {
      this.handlers.delete(handler);
      if (this.handlers.size === 0 && this.listener) {
        const listener = this.listener;
        this.listener = null;
        await listener.close();
      }
    };
  }

  private flush(): void {
    const changes = this.pending;
    this.pending = [];
    this.flushScheduled = false;
    if (!this.databaseUrl) return this.deliver(changes);
    for (const payload of encode(changes)) {
      // Over this process's LISTEN connection when it has one: through the pool, a NOTIFY waited
      // behind every query queued there (seconds in a busy process), and so did every message.
      const listener = this.listener;
      const sent = listener ? listener.notify(payload) : Promise.resolve(false);
      sent.then(async (done) => {
        if (!done) await sql`select pg_notify(${STA_CHANGES_CHANNEL}, ${payload})`.execute(this.db);
      }).catch((error: Error) => {
        this.log.warn({ err: { message: error.message } }, 'SensorThings changes: NOTIFY failed; MQTT subscribers miss these changes');
      });
    }
  }

  private deliver(changes: StaChange[]): void {
    if (changes.length === 0) return;
    for (const handler of this.handlers) {
      try {
        handler(changes);
      } catch (error) {
        this.log.warn({ err: { message: (error as Error).message } }, 'SensorThings changes: a handler failed');
      }
    }
  }
}

/** Groups changes into NOTIFY payloads under the size limit, keeping their order within a group. */
export function encode(changes: StaChange[]): string[] {
  const groups = new Map<string, Wire>();
  let last: Wire | undefined;
  for (const change of changes) {
    const known = change.properties !== undefined;
    // A bulk insert queues thousands of changes of one group in a row: the lookup is skipped for them.
    let group = last && last.s === change.schema && last.e === change.entitySet && last.k === change.kind && (last.p !== undefined) === known ? last : undefined;
    if (!group) {
      const key = `${change.schema}\u0000${change.entitySet}\u0000${change.kind}\u0000${known}`;
      group = groups.get(key);
      if (!group) groups.set(key, group = { s: change.schema, e: change.entitySet, k: change.kind, i: [], ...(known ? { p: [] } : {}) });
      last = group;
    }
    group.i.push(change.id);
    if (known) group.p!.push(change.properties!);
  }
  const payloads: string[] = [];
  for (const group of groups.values()) {
    const empty = { ...group, i: [], ...(group.p ? { p: [] } : {}) };
    const head = JSON.stringify(empty).length;
    let ids: number[] = [];
    let names: string[][] = [];
    let size = head;
    const flush = () => payloads.push(JSON.stringify({ ...group, i: ids, ...(group.p ? { p: names } : {}) }));
    group.i.forEach((id, k) => {
      const more = String(id).length + 1 + (group.p ? JSON.stringify(group.p[k]).length + 1 : 0);
      if (ids.length > 0 && size + more > MAX_PAYLOAD_BYTES) {
        flush();
        ids = [];
        names = [];
        size = head;
      }
      ids.push(id);
      if (group.p) names.push(group.p[k]!);
      size += more;
    });
    if (ids.length > 0) flush();
  }
  return payloads;
}

/** The changes of one payload; a payload that is not ours (a manual NOTIFY) yields none. */
export function decode(payload: string | undefined): StaChange[] {
  try {
    const wire = JSON.parse(payload ?? '') as Wire;
    if (typeof wire.s !== 'string' || typeof wire.e !== 'string' || !Array.isArray(wire.i)) return [];
    if (wire.k !== 'create' && wire.k !== 'update' && wire.k !== 'delete') return [];
    const names = Array.isArray(wire.p) && wire.p.length === wire.i.length ? wire.p : undefined;
    const changes: StaChange[] = [];
    wire.i.forEach((id, k) => {
      if (!Number.isSafeInteger(id)) return;
      const properties = names?.[k];
      const known = Array.isArray(properties) && properties.every((name) => typeof name === 'string');
      changes.push({ schema: wire.s, entitySet: wire.e, id, kind: wire.k, ...(known ? { properties } : {}) });
    });
    return changes;
  } catch {
    return [];
  }
}
