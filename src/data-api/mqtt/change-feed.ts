import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import { listenForNotifications, type Listener } from '../../db/notifications.js';
import type { StaServer } from '../../sta/types.js';
import { RouteInterest } from './interest.js';
import { OutboxReader, OutboxWriter, type OutboxMetrics } from './outbox.js';
import { ChangeRenderer, type RenderedChange, type RendererDeps, type StaChange } from './renderer.js';
import { RedisCluster, type ClusterLog } from './redis-cluster.js';
import { ClusterPublisher } from './cluster-publisher.js';
import type { RedisAddress } from '../../util/redis-address.js';

export type { StaChange } from './renderer.js';

/** Takes rendered changes to this process's broker; the next delivery waits for it. */
export type RenderedHandler = (changes: readonly RenderedChange[]) => Promise<void>;

/**
 * The channel of wake-ups: `rows` (the outbox has new rows), `interest` (a process's routes wanted
 * changed), `interest:<prefix>` (a process started to follow the route of that topic prefix).
 */
export const MQTT_CHANNEL = 'mqtt_outbox';
const INTEREST = 'interest';
const INTEREST_ADDED = 'interest:';

/**
 * Connections of the feed's own (runtime.ts: the broker's kind of pool, two connections), and a
 * SensorThings server on them: renders, outbox writes and reads, and the routes wanted go through
 * them, never behind the HTTP requests queued in the main pool (a busy process held its outbox
 * insert there for seconds).
 */
export interface RenderStore {
  db: Database;
  sta: StaServer;
  close(): Promise<void>;
}

export interface MqttFeedMetrics extends OutboxMetrics {
  unwanted(count: number): void;
}

/** Where rendered changes travel: the outbox (PostgreSQL alone, the default), or the Redis cluster (MQTT_CLUSTER). */
export interface FeedTransport {
  databaseUrl: string | null;
  /** MQTT_CLUSTER: where the cluster's Redis is; null on PostgreSQL alone. */
  cluster: RedisAddress | null;
  /** MQTT_MAX_QUEUED_MESSAGES, which the cluster's queues are held to. */
  maxQueuedMessages: number;
}

/**
 * Carries committed SensorThings writes to every broker, whichever process wrote them (contract
 * "MQTT across replicas"): the committing process renders each change once (renderer.ts), for the
 * routes some process has a subscriber under (interest.ts); on PostgreSQL the rendered changes go
 * through the outbox table to every process's broker (outbox.ts: a coalesced NOTIFY on
 * `mqtt_outbox` wakes the readers, a poll backs it up), on PGlite (a single process) straight to
 * this process's broker. With MQTT_CLUSTER (Redis), the rendered changes are published into the
 * cluster instead (cluster-publisher.ts), and each broker takes its clients' messages from there.
 *
 * `announce` runs once per written entity (a bulk insert of 100,000 Observations calls it 100,000
 * times), so it only queues; the queue goes to the renderer once per event-loop turn. Changes are
 * best effort: what cannot be rendered or written is logged, not retried.
 */
export class StaChangeFeed {
  readonly interest: RouteInterest;
  private pending: StaChange[] = [];
  private flushScheduled = false;
  /** The first renders; the others (a process with a gateway and background work has two) wait their turn. */
  private renderers: ChangeRenderer[] = [];
  private readonly handlers = new Set<RenderedHandler>();
  private readonly writer: OutboxWriter | null;
  private reader: OutboxReader | null = null;
  private listener: Listener | null = null;
  private readonly databaseUrl: string | null;

  /** Opened with the first renderer or broker, closed with the last. */
  private store: RenderStore | null = null;
  /** Redis, while a renderer or a broker is here (MQTT_CLUSTER), and what publishes the renders into it. */
  private cluster: RedisCluster | null = null;
  private publisher: ClusterPublisher | null = null;

  constructor(
    private readonly transport: FeedTransport,
    private readonly metrics: MqttFeedMetrics,
    private readonly log: ClusterLog,
    private readonly openStore: () => RenderStore,
  ) {
    const { databaseUrl } = transport;
    this.databaseUrl = databaseUrl;
    const db = () => this.connections().db;
    this.interest = new RouteInterest(databaseUrl ? db : null, (added) => this.notify(added === undefined ? INTEREST : `${INTEREST_ADDED}${added}`).catch((error: Error) => {
      log.warn({ err: { message: error.message } }, 'MQTT: could not tell the other processes which routes have subscribers here; they read it at their next refresh');
    }), log);
    this.writer = databaseUrl && !transport.cluster ? new OutboxWriter(db, () => this.notify('rows'), metrics, log) : null;
  }

  /** Whether brokers take their messages from the Redis cluster (MQTT_CLUSTER) rather than from subscribe(). */
  get clustered(): boolean {
    return this.transport.cluster !== null;
  }

  private connections(): RenderStore {
    this.store ??= this.openStore();
    return this.store;
  }

  announce(change: StaChange): void {
    if (this.renderers.length === 0) return; // nothing in this process renders (no app that writes): nobody is told
    this.pending.push(change);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      const changes = this.pending;
      this.pending = [];
      this.flushScheduled = false;
      this.renderers[0]?.onChanges(changes);
    });
  }

  /**
   * Renders this process's commits from now on, reading through `deps.sta` (each app that writes
   * calls it once, with its route table: the gateway's goes `first`, a table kept for rendering
   * alone is a `standby` used when no gateway runs here). Returns its stop.
   */
  async render(deps: Omit<RendererDeps, 'sta' | 'wanted' | 'deliver'>, place: 'first' | 'standby'): Promise<() => Promise<void>> {
    const renderer = new ChangeRenderer({
      ...deps,
      sta: this.connections().sta,
      // A persistent session whose client is away is followed too, wherever it was last connected.
      wanted: (prefix) => this.interest.wanted(prefix) || (this.publisher?.followsUnder(prefix) ?? false),
      deliver: (changes) => this.publisher ? this.publisher.write(changes) : this.writer ? this.writer.write(changes) : this.deliverHere(changes),
    });
    // Which routes the other processes follow is known before the first change is rendered.
    await this.use();
    const cluster = this.cluster;
    if (cluster && !this.publisher) {
      const publisher = new ClusterPublisher(cluster, {
        maxQueuedMessages: this.transport.maxQueuedMessages, unwanted: (count) => this.metrics.unwanted(count), log: this.log,
      });
      this.publisher = publisher;
      // Ready for the first change when Redis is up; when it is not, the process starts without it.
      const starting = publisher.start();
      if (await cluster.whenUp(5_000)) await starting.catch((error: Error) => this.log.warn({ err: { message: error.message } }, 'MQTT cluster: could not start publishing'));
      else starting.catch(() => {});
    }
    if (place === 'first') this.renderers.unshift(renderer);
    else this.renderers.push(renderer);
    return async () => {
      this.renderers = this.renderers.filter((other) => other !== renderer);
      await this.release();
    };
  }

  /**
   * A broker's place in the Redis cluster (MQTT_CLUSTER; null without one): the cluster's
   * connections, held until `leave`.
   */
  async joinCluster(): Promise<{ cluster: RedisCluster; leave(): Promise<void> } | null> {
    if (!this.clustered) return null;
    this.brokers++;
    await this.use();
    return { cluster: this.cluster!, leave: async () => { this.brokers--; await this.release(); } };
  }

  /** Brokers in the cluster (they hold its connections open). */
  private brokers = 0;

  /** Registers this process's broker for the rendered changes of every process; returns its removal. */
  async subscribe(handler: RenderedHandler): Promise<() => Promise<void>> {
    this.handlers.add(handler);
    await this.use();
    if (this.databaseUrl && !this.reader) {
      const reader = new OutboxReader(this.connections().db, (changes) => this.deliverHere(changes), this.metrics, this.log);
      this.reader = reader;
      // Reading from where the outbox ends now: the broker takes no client before this.
      await reader.start();
    }
    return async () => {
      this.handlers.delete(handler);
      if (this.handlers.size === 0) {
        this.reader?.stop();
        this.reader = null;
      }
      await this.release();
    };
  }

  /** The LISTEN connection and the interest's refresh run while a renderer or a broker is here. */
  private async use(): Promise<void> {
    if (this.transport.cluster) this.cluster ??= new RedisCluster(this.transport.cluster, this.log);
    if (this.databaseUrl && !this.listener) {
      this.listener = listenForNotifications(this.databaseUrl, MQTT_CHANNEL, {
        onNotify: (payload = '') => {
          if (payload === 'rows') this.reader?.wake();
          else if (payload === INTEREST || payload.startsWith(INTEREST_ADDED)) {
            // A prefix named is one a process has just started to follow: counted before the read.
            if (payload !== INTEREST) this.interest.heardOf(payload.slice(INTEREST_ADDED.length));
            void this.interest.reload();
          }
        },
        // What was notified while the connection was down: the poll finds the rows, the interest is read again.
        onReconnect: () => {
          this.reader?.wake();
          void this.interest.reload();
        },
      }, this.log);
    }
    await this.interest.start();
  }

  private async release(): Promise<void> {
    if (this.renderers.length > 0 || this.handlers.size > 0 || this.brokers > 0) return;
    this.writer?.close();
    const publisher = this.publisher;
    this.publisher = null;
    await publisher?.close();
    const cluster = this.cluster;
    this.cluster = null;
    await cluster?.close();
    await this.interest.stop();
    const listener = this.listener;
    this.listener = null;
    await listener?.close();
    const store = this.store;
    this.store = null;
    await store?.close();
  }

  private async deliverHere(changes: readonly RenderedChange[]): Promise<void> {
    for (const handler of this.handlers) {
      try {
        await handler(changes);
      } catch (error) {
        this.log.warn({ err: { message: (error as Error).message } }, 'MQTT notifications: a broker could not deliver rendered changes');
      }
    }
  }

  /**
   * A wake-up over this process's LISTEN connection when it has one: through the pool, a NOTIFY
   * waited behind every query queued there (seconds in a busy process).
   */
  private async notify(payload: string): Promise<void> {
    if (!this.databaseUrl) return;
    const sent = this.listener ? await this.listener.notify(payload) : false;
    if (!sent) await sql`select pg_notify(${MQTT_CHANNEL}, ${payload})`.execute(this.connections().db);
  }
}
