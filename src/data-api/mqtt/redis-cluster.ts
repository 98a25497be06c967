import { Readable } from 'node:stream';
import { Redis, type RedisOptions } from 'ioredis';
import MQEmitterRedis from 'mqemitter-redis';
import RedisPersistence from 'aedes-persistence-redis/asyncPersistence.js';
import type { MQEmitter } from 'mqemitter';
import type { EnqueueingPersistence } from './offline-queues.js';
import { describeRedisAddress, type RedisAddress } from '../../util/redis-address.js';

export interface ClusterLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

/** What one aedes instance of the cluster is built with (aedes's `mq` and `persistence` options). */
export interface ClusterNode {
  mq: MQEmitter;
  /** aedes-persistence-redis; this service calls its enqueue methods itself (aedes calls the rest). */
  persistence: EnqueueingPersistence;
}

/** How often Redis is checked, and for how long it must fail before the brokers let their clients go. */
const CHECK_EVERY_MS = 1_000;
const PING_TIMEOUT_MS = 2_000;
const DOWN_AFTER_MS = 3_000;

/**
 * The machine's Redis as aedes clusters on it (contract "MQTT across replicas", MQTT_CLUSTER):
 * `mqemitter-redis` carries every message between the brokers of all processes, and
 * `aedes-persistence-redis` keeps subscriptions, persistent sessions and their QoS 1 queues, so a
 * client that comes back on another replica finds its session there.
 *
 * Every connection is opened here, with commands refused at once while it is down (no offline
 * queue: a change committed while Redis is away is not announced later, as the contract says), and
 * watched: after DOWN_AFTER_MS of failing checks the cluster is down (the brokers refuse CONNECTs
 * with 0x03 and drop their clients), and up again at the first check that passes; ioredis
 * reconnects within a second of Redis's return.
 */
export class RedisCluster {
  /** Commands of this service's own: PUBSUB, the client-id bindings, queue lengths, the check. */
  readonly commands: Redis;
  private readonly connections = new Set<Redis>();
  private up = false;
  private failingSince: number | null = null;
  private readonly timer: NodeJS.Timeout;
  private readonly watchers = new Set<(up: boolean) => void>();
  private checking = false;

  constructor(private readonly address: RedisAddress, private readonly log: ClusterLog) {
    this.commands = this.connect();
    this.timer = setInterval(() => void this.check(), CHECK_EVERY_MS);
    this.timer.unref();
    void this.check();
  }

  get isUp(): boolean {
    return this.up;
  }

  /** Called with every change of state, until the returned function removes it. */
  watch(watcher: (up: boolean) => void): () => void {
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  /** Resolves once the cluster is up; false if it was not within `timeoutMs`. */
  async whenUp(timeoutMs: number): Promise<boolean> {
    if (this.up) return true;
    await this.check();
    if (this.up) return true;
    return new Promise((resolve) => {
      const timeout = setTimeout(() => { stop(); resolve(false); }, timeoutMs);
      const stop = this.watch((up) => {
        if (!up) return;
        clearTimeout(timeout);
        stop();
        resolve(true);
      });
    });
  }

  /** The mq and persistence of one more aedes instance, on connections of its own (ready: commands are not queued). */
  async node(persistenceOptions: { maxSessionDelivery: number }): Promise<ClusterNode & { close(): Promise<void> }> {
    const subConn = this.connect();
    const pubConn = this.connect();
    const conn = this.connect();
    try {
      await Promise.all([subConn, pubConn, conn].map((connection) => readyWithin(connection, 5_000)));
    } catch (error) {
      for (const connection of [subConn, pubConn, conn]) connection.disconnect();
      throw error;
    }
    const mq = MQEmitterRedis({ subConn, pubConn }) as unknown as MQEmitter & { state: NodeJS.EventEmitter; _close(done: () => void): void };
    // Unheard, an 'error' of the emitter's state would end the process; the check reports Redis's state.
    mq.state.on('error', () => {});
    // mqemitter-redis closes with a QUIT on each connection and waits for both to end. Between two
    // reconnections (Redis away, a failover under way) a connection refuses the QUIT (no offline
    // queue) and never ends, so the broker's close hung; a QUIT in flight when the socket closed
    // rejected with nobody to hear it, which ends this process. A broker that stops needs neither
    // connection again: both are closed at once, then the emitter itself (`_close`, the plain
    // emitter's close that mqemitter-redis calls after its QUITs).
    mq.close = (done?: () => void) => {
      subConn.disconnect();
      pubConn.disconnect();
      mq._close(done ?? (() => {}));
      return mq;
    };
    const persistence = new RedisPersistence({ conn, maxSessionDelivery: persistenceOptions.maxSessionDelivery });
    // Retained messages: the service keeps none (every PUBLISH it takes and every notification is
    // retain 0), so a SUBSCRIBE need not ask Redis for them. Asked, aedes-persistence-redis 12
    // answers an async iterable where aedes 1.2 pipes a stream without an error handler: a SUBSCRIBE
    // while Redis went away ended the process.
    persistence.createRetainedStreamCombi = () => Readable.from([]);
    return {
      mq, persistence,
      close: async () => {
        // aedes closes the mq (broker.close); the persistence's connection is ours to end.
        conn.disconnect();
        this.connections.delete(conn);
      },
    };
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.watchers.clear();
    for (const connection of this.connections) connection.disconnect();
    this.connections.clear();
  }

  private connect(): Redis {
    const options: RedisOptions = {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      retryStrategy: (times) => Math.min(times * 100, 1_000),
      connectTimeout: 5_000,
    };
    const connection = this.address.kind === 'server' ? new Redis(this.address.url, options) : new Redis({ ...options, ...sentinelOptions(this.address) });
    // Each failure to connect is an 'error' here; the check logs the state once.
    connection.on('error', () => {});
    connection.on('end', () => this.connections.delete(connection));
    this.connections.add(connection);
    return connection;
  }

  private async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const healthy = await this.healthy();
      const now = Date.now();
      if (healthy) {
        this.failingSince = null;
        if (!this.up) this.change(true);
      } else {
        this.failingSince ??= now;
        if (this.up && now - this.failingSince >= DOWN_AFTER_MS) this.change(false);
      }
    } finally {
      this.checking = false;
    }
  }

  private async healthy(): Promise<boolean> {
    for (const connection of this.connections) if (connection.status !== 'ready') return false;
    let timeout: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        this.commands.ping().then(() => true),
        new Promise<boolean>((resolve) => { timeout = setTimeout(() => resolve(false), PING_TIMEOUT_MS); }),
      ]);
    } catch {
      return false;
    } finally {
      clearTimeout(timeout);
    }
  }

  private change(up: boolean): void {
    this.up = up;
    if (up) this.log.info({ cluster: describeRedisAddress(this.address) }, 'MQTT cluster: Redis is reachable; the broker accepts clients');
    else this.log.error({ cluster: describeRedisAddress(this.address) }, 'MQTT cluster: Redis is unreachable; MQTT clients are refused and disconnected until it is back (HTTP is unaffected; changes committed meanwhile are not announced)');
    for (const watcher of [...this.watchers]) watcher(up);
  }
}

/** Resolves once the connection is ready; rejects after `ms`. */
function readyWithin(connection: Redis, ms: number): Promise<void> {
  if (connection.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timeout = setTimeout(() => {
      connection.off('ready', onReady);
      reject(new Error(`Redis (MQTT_CLUSTER) did not accept a connection within ${ms} ms`));
    }, ms);
    const onReady = () => {
      clearTimeout(timeout);
      resolve();
    };
    connection.once('ready', onReady);
  });
}

/**
 * ioredis's options for a master found through Sentinel: it asks the sentinels for the master's
 * address at every (re)connection, so a connection lost with a failed master comes back on the
 * replica the sentinels promoted, as after a Redis that came back. A master demoted while alive (a
 * switchover) answers writes READONLY: that reconnects too. (ioredis's `failoverDetector` would
 * hear the switch from the sentinels, on connections of its own that outlive a `quit` and report
 * every failed reconnection to a sentinel as an unhandled error.)
 */
function sentinelOptions(address: Extract<RedisAddress, { kind: 'sentinel' }>): RedisOptions {
  return {
    sentinels: address.sentinels,
    name: address.name,
    db: address.db,
    ...(address.username ? { username: address.username } : {}),
    ...(address.password ? { password: address.password } : {}),
    ...(address.sentinelPassword ? { sentinelPassword: address.sentinelPassword } : {}),
    ...(address.tls ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
    sentinelRetryStrategy: (times) => Math.min(times * 100, 1_000),
    reconnectOnError: (error) => error.message.startsWith('READONLY'),
  };
}
