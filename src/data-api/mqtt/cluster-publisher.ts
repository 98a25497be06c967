import { Aedes } from 'aedes';
import type { ClusterLog, RedisCluster } from './redis-cluster.js';
import type { RenderedChange } from './renderer.js';
import { ChangeNotifier, type WantedTopics } from './notifier.js';
import { SubscriptionIndex } from './subscriptions.js';
import { parseTopic, routeTopicPrefix } from './topics.js';
import { boundQueuesInRedis } from './offline-queues.js';

/** aedes-persistence's broadcast of the subscriptions it stores (qos > 0, clean session 0): `$SYS/sub/add`, `$SYS/sub/rm`. */
const STORED_SUBSCRIPTIONS = '$SYS/sub/+';

export interface ClusterPublisherOptions {
  maxQueuedMessages: number;
  unwanted(count: number): void;
  log: ClusterLog;
}

/**
 * The committing process's side of the Redis cluster mode: rendered changes (renderer.ts) become
 * their MQTT messages here, once, and are published at QoS 1 through an aedes instance of the
 * cluster that takes no clients of its own. Aedes then does what it does in a cluster: it queues
 * each message for the persistent sessions subscribed (aedes-persistence-redis, bounded by
 * MQTT_MAX_QUEUED_MESSAGES while the client is away), and mqemitter-redis carries it to the
 * brokers whose clients subscribed its topic; each of those checks its subscribers' rights first
 * (broker.ts). A worker process, which has no broker, publishes the same way.
 *
 * A message is composed only for topics somebody has: those Redis has subscribers for (every
 * broker subscribes a client's topic on Redis), asked once per batch for the routes in it, and
 * those of persistent sessions whose client is away (mirrored from aedes-persistence's
 * broadcasts, as every broker's persistence holds them).
 */
export class ClusterPublisher {
  /** The topics the burst being composed is wanted on (topicsWanted). */
  private wanted: WantedTopics = { hasUnder: () => false, has: () => false, variantsOf: () => [] };
  /** The burst's publications under way. */
  private published: Promise<void>[] = [];
  /** Composes each burst for the topics wanted; its messages all go out at once (aedes keeps each topic's in order). */
  private readonly notifier = new ChangeNotifier({
    subscriptions: {
      hasUnder: (prefix) => this.wanted.hasUnder(prefix),
      has: (topic) => this.wanted.has(topic),
      variantsOf: (resource) => this.wanted.variantsOf(resource),
    },
    log: { warn: (details, message) => this.options.log.warn(details, message), debug: () => {} },
    unwanted: (count) => this.options.unwanted(count),
    beforePublish: async () => {},
    publish: (topic, message) => {
      if (this.aedes) this.published.push(this.publish(this.aedes, topic, message));
    },
  });
  /** The stored subscriptions of persistent sessions (QoS 1), mirrored: followed while their client is away. */
  private readonly persistent = new SubscriptionIndex((topic) => {
    const parsed = parseTopic(topic);
    return parsed && routeTopicPrefix(parsed.datasetId, parsed.slug);
  });
  private node: Awaited<ReturnType<RedisCluster['node']>> | null = null;
  private aedes: Aedes | null = null;
  private starting: Promise<void> | null = null;
  private downNoted = false;
  private closed = false;
  /** Its aedes instance listens and its mirror is loaded: messages may go out. */
  private ready = false;

  constructor(private readonly cluster: RedisCluster, private readonly options: ClusterPublisherOptions) {}

  /** Starts its aedes instance once Redis is up (at once, or later: changes are not announced meanwhile). */
  start(): Promise<void> {
    this.starting ??= this.open().catch((error: Error) => {
      this.starting = null;
      throw error;
    });
    return this.starting;
  }

  /** Whether a persistent session has a subscription under a route (by its topic prefix). */
  followsUnder(prefix: string): boolean {
    return this.persistent.hasUnder(prefix);
  }

  readonly write = async (changes: RenderedChange[]): Promise<void> => {
    const aedes = this.ready ? this.aedes : null;
    if (!aedes || !this.cluster.isUp) {
      if (!this.downNoted) this.options.log.warn({ changes: changes.length }, 'MQTT cluster: Redis is not reachable; changes are not announced until it is');
      this.downNoted = true;
      if (!aedes) void this.start().catch(() => {});
      return;
    }
    this.downNoted = false;
    // One burst at a time (the renderer waits for each): its topics, then its messages.
    this.wanted = await this.topicsWanted(changes);
    await this.notifier.deliver(changes);
    const published = this.published;
    this.published = [];
    await Promise.all(published);
  };

  /** Publishes one message at QoS 1; resolves when aedes has queued and sent it (a failure is logged). */
  private publish(aedes: Aedes, topic: string, message: string): Promise<void> {
    return new Promise<void>((resolve) => {
      aedes.publish({ cmd: 'publish', topic, payload: Buffer.from(message), qos: 1, retain: false, dup: false }, (error) => {
        if (error) this.options.log.warn({ topic, err: { message: error.message } }, 'MQTT cluster: a message could not be published');
        resolve();
      });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.starting?.catch(() => {});
    await this.teardown();
  }

  private async teardown(): Promise<void> {
    this.ready = false;
    const aedes = this.aedes;
    this.aedes = null;
    if (aedes) await new Promise<void>((resolve) => aedes.close(() => resolve()));
    await this.node?.close();
    this.node = null;
  }

  private async open(): Promise<void> {
    let waited = 0;
    while (!(await this.cluster.whenUp(1_000))) {
      if (this.closed) return;
      if (++waited % 10 === 0) this.options.log.warn({}, 'MQTT cluster: waiting for Redis before changes can be announced');
    }
    const node = await this.cluster.node({ maxSessionDelivery: this.options.maxQueuedMessages });
    const aedes = new Aedes({ mq: node.mq, persistence: node.persistence as never });
    // Held from here, so that a failure below (Redis went away again) closes what was opened.
    this.node = node;
    this.aedes = aedes;
    try {
      await this.listen(aedes, node);
    } catch (error) {
      await this.teardown();
      throw error;
    }
    // Closed while it started: close() found nothing to close yet.
    if (this.closed) await this.teardown();
    else this.ready = true;
  }

  private async listen(aedes: Aedes, node: Awaited<ReturnType<RedisCluster['node']>>): Promise<void> {
    (aedes as unknown as NodeJS.EventEmitter).on('error', (error: Error) => this.options.log.warn({ err: { message: error.message } }, 'MQTT cluster: publishing instance error'));
    await aedes.listen();
    boundQueuesInRedis(node.persistence, this.cluster.commands, this.options.maxQueuedMessages,
      (clientId) => this.options.log.info({ clientId, kept: this.options.maxQueuedMessages }, 'MQTT: a persistent session away holds MQTT_MAX_QUEUED_MESSAGES messages; later ones are not kept for it'));
    // The mirror of stored subscriptions: broadcasts first, then what Redis holds, so none falls between.
    await new Promise<void>((resolve) => aedes.subscribe(STORED_SUBSCRIPTIONS, (packet, done) => {
      this.onStoredSubscriptions(packet.topic, packet.payload);
      done();
    }, () => resolve()));
    await this.loadStoredSubscriptions();
  }

  private onStoredSubscriptions(topic: string, payload: unknown): void {
    let decoded: { clientId?: unknown; subs?: Array<{ topic?: unknown; qos?: unknown }> };
    try {
      decoded = JSON.parse(String(payload));
    } catch {
      return;
    }
    if (typeof decoded.clientId !== 'string' || !Array.isArray(decoded.subs)) return;
    const adding = topic.endsWith('/add');
    for (const sub of decoded.subs) {
      if (typeof sub.topic !== 'string') continue;
      // As aedes-persistence keeps them: a QoS 0 subscription is never queued for.
      if (adding && typeof sub.qos === 'number' && sub.qos > 0) this.persistent.add(decoded.clientId, sub.topic);
      else this.persistent.remove(decoded.clientId, sub.topic);
    }
  }

  /** aedes-persistence-redis's keys: the set `clients`, and per client a hash `client:{id}` of its topics. */
  private async loadStoredSubscriptions(): Promise<void> {
    const redis = this.cluster.commands;
    const clientIds = await redis.smembers('clients');
    const pipeline = redis.pipeline();
    for (const clientId of clientIds) pipeline.hkeys(`client:${encodeURIComponent(clientId)}`);
    const results = clientIds.length > 0 ? await pipeline.exec() : [];
    clientIds.forEach((clientId, at) => {
      const [error, topics] = results?.[at] ?? [];
      if (!error) for (const topic of topics as string[]) this.persistent.add(clientId, topic);
    });
  }

  /** The topics some client of the cluster has under the routes of `changes`. */
  private async topicsWanted(changes: readonly RenderedChange[]): Promise<WantedTopics> {
    const prefixes = [...new Set(changes.map((change) => routeTopicPrefix(change.datasetId, change.slug)))];
    const pipeline = this.cluster.commands.pipeline();
    for (const prefix of prefixes) pipeline.pubsub('CHANNELS', `${globEscaped(prefix)}*`);
    const results = (await pipeline.exec()) ?? [];
    const live = new SubscriptionIndex(() => null);
    for (const [error, channels] of results) {
      if (error) throw error;
      for (const channel of channels as string[]) live.add('', channel);
    }
    const persistent = this.persistent;
    return {
      hasUnder: () => true,
      has: (topic) => live.has(topic) || persistent.has(topic),
      variantsOf: (resource) => new Set([...live.variantsOf(resource), ...persistent.variantsOf(resource)]),
    };
  }
}

/** A literal for a Redis glob pattern. */
function globEscaped(text: string): string {
  return text.replace(/[*?[\]\\]/g, (special) => `\\${special}`);
}
