import type { Redis } from 'ioredis';
import { oneAtATime } from '../../util/one-at-a-time.js';

/**
 * Bounds what the broker keeps for a persistent session (clean session 0) whose client is away.
 * Change messages go out at QoS 1, so aedes queues each one for every such session subscribed at
 * QoS 1, in this process's memory, until the client is back: a client that never comes back would
 * grow its queue for ever. Past MQTT_MAX_QUEUED_MESSAGES messages since its client left, a session
 * takes no more (logged once); its count starts again when the client reconnects.
 */

/** A subscription as aedes's persistence hands it to its enqueue methods. */
interface QueuedFor { clientId: string }

/** The two methods of aedes's persistence that queue a message for a session. */
export interface EnqueueingPersistence {
  outgoingEnqueue(sub: QueuedFor, packet: unknown): Promise<void>;
  outgoingEnqueueCombi(subs: QueuedFor[], packet: unknown): Promise<void>;
}

export class OfflineQueues {
  /** Messages queued per away client since it left (and one more once it reached the bound). */
  private readonly queued = new Map<string, number>();

  constructor(
    private readonly max: number,
    private readonly isConnected: (clientId: string) => boolean,
    private readonly onFull: (clientId: string) => void,
  ) {}

  /** Wraps the persistence's enqueue methods, so that every queued message passes `admit`. */
  install(persistence: EnqueueingPersistence): void {
    const combi = persistence.outgoingEnqueueCombi.bind(persistence);
    const one = persistence.outgoingEnqueue.bind(persistence);
    persistence.outgoingEnqueueCombi = (subs, packet) => combi(this.admit(subs), packet);
    persistence.outgoingEnqueue = (sub, packet) => (this.admit([sub]).length > 0 ? one(sub, packet) : Promise.resolve());
  }

  /** The client is back: its queue is delivered, and its count starts again. */
  connected(clientId: string): void {
    this.queued.delete(clientId);
  }

  /** The subscriptions whose session may take one more message: those of connected clients, and those within the bound. */
  private admit(subs: QueuedFor[]): QueuedFor[] {
    return subs.filter(({ clientId }) => {
      if (this.isConnected(clientId)) return true;
      const count = this.queued.get(clientId) ?? 0;
      if (count < this.max) {
        this.queued.set(clientId, count + 1);
        return true;
      }
      if (count === this.max) {
        this.queued.set(clientId, count + 1);
        this.onFull(clientId);
      }
      return false;
    });
  }
}

/** aedes-persistence-redis's list of what is queued for a client (its key; pinned with the package's version). */
const queueKeyOf = (clientId: string) => `outgoing:${encodeURIComponent(clientId)}`;

/**
 * The same bound in the Redis cluster mode, where a session's queue lives in Redis and its client
 * may be connected to any replica: a message is queued for a session whose queue already holds
 * `max` messages no more (a connected client's queue empties as it acknowledges; one away keeps
 * the first `max`). One round trip for the lengths of all sessions a message is queued for; the
 * messages of one process are queued one after another, so the bound is exact for one writing
 * process (several writing at the same moment may each add one past it).
 */
export function boundQueuesInRedis(persistence: EnqueueingPersistence, redis: Redis, max: number, onFull: (clientId: string) => void): void {
  const combi = persistence.outgoingEnqueueCombi.bind(persistence);
  /** Sessions found full, logged once until their queue has room again. */
  const full = new Set<string>();
  const admit = async (subs: QueuedFor[]): Promise<QueuedFor[]> => {
    if (subs.length === 0) return subs;
    const pipeline = redis.pipeline();
    for (const { clientId } of subs) pipeline.llen(queueKeyOf(clientId));
    const lengths = (await pipeline.exec()) ?? [];
    return subs.filter(({ clientId }, at) => {
      const length = Number(lengths[at]?.[1] ?? 0);
      if (length < max) return full.delete(clientId) || true;
      if (!full.has(clientId)) {
        full.add(clientId);
        onFull(clientId);
      }
      return false;
    });
  };
  // Length read and message queued one message at a time: two at once both saw room for one.
  const inTurn = oneAtATime();
  persistence.outgoingEnqueueCombi = (subs, packet) => (subs.length === 0 ? combi(subs, packet) : inTurn(async () => combi(await admit(subs), packet)));
  persistence.outgoingEnqueue = (sub, packet) => persistence.outgoingEnqueueCombi([sub], packet);
}
