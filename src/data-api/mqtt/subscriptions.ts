/**
 * Which exact topics this broker's clients subscribe to. Wildcards are refused, so a notification
 * is wanted exactly when its topic is in here; the notifier asks before it spends a query on a
 * change, so a bulk insert into a dataset nobody follows on this process costs a map lookup each.
 * A `$select` topic (`…/Things?$select=name`) is also listed under its resource's topic
 * (`…/Things`), so that a message for the resource finds the projections it is wanted in.
 */
export class SubscriptionIndex {
  private readonly topicClients = new Map<string, Set<string>>();
  private readonly prefixCounts = new Map<string, number>();
  private readonly byClient = new Map<string, Set<string>>();
  private readonly variants = new Map<string, Set<string>>();

  constructor(
    private readonly prefixOf: (topic: string) => string | null,
    /** A route's first subscriber here arrived (`present`), or its last left: other processes learn whom to render for. */
    private readonly onPrefix: (prefix: string, present: boolean) => void = () => {},
  ) {}

  add(clientId: string, topic: string): void {
    let topics = this.byClient.get(clientId);
    if (!topics) this.byClient.set(clientId, topics = new Set());
    if (topics.has(topic)) return;
    topics.add(topic);
    let clients = this.topicClients.get(topic);
    if (!clients) this.topicClients.set(topic, clients = new Set());
    clients.add(clientId);
    if (clients.size === 1 && topic.includes('?')) {
      const resource = topic.slice(0, topic.indexOf('?'));
      let variants = this.variants.get(resource);
      if (!variants) this.variants.set(resource, variants = new Set());
      variants.add(topic);
    }
    const prefix = this.prefixOf(topic);
    if (prefix && bump(this.prefixCounts, prefix, 1) === 1) this.onPrefix(prefix, true);
  }

  remove(clientId: string, topic: string): void {
    const topics = this.byClient.get(clientId);
    if (!topics?.delete(topic)) return;
    if (topics.size === 0) this.byClient.delete(clientId);
    const clients = this.topicClients.get(topic);
    clients?.delete(clientId);
    if (clients?.size === 0) {
      this.topicClients.delete(topic);
      if (topic.includes('?')) {
        const resource = topic.slice(0, topic.indexOf('?'));
        const variants = this.variants.get(resource);
        variants?.delete(topic);
        if (variants?.size === 0) this.variants.delete(resource);
      }
    }
    const prefix = this.prefixOf(topic);
    if (prefix && bump(this.prefixCounts, prefix, -1) === 0) this.onPrefix(prefix, false);
  }

  removeClient(clientId: string): void {
    for (const topic of [...(this.byClient.get(clientId) ?? [])]) this.remove(clientId, topic);
  }

  has(topic: string): boolean {
    return this.topicClients.has(topic);
  }

  /** The subscribed topics that are a resource's topic with a query (`…/Things?$select=name` of `…/Things`). */
  variantsOf(resource: string): Iterable<string> {
    return this.variants.get(resource) ?? [];
  }

  /** The client ids subscribed to a topic. */
  clientsOf(topic: string): Iterable<string> {
    return this.topicClients.get(topic) ?? [];
  }

  /** Whether any topic of a route (by its prefix) has a subscriber here. */
  hasUnder(prefix: string): boolean {
    return this.prefixCounts.has(prefix);
  }
}

/** The count after the change. */
function bump(counts: Map<string, number>, key: string, by: number): number {
  const next = (counts.get(key) ?? 0) + by;
  if (next <= 0) counts.delete(key);
  else counts.set(key, next);
  return Math.max(next, 0);
}
