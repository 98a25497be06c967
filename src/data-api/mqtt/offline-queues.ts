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
