import type { RenderedChange } from './renderer.js';
import { parseTopic, pathsOfChange, routeTopicPrefix, selected, topicsOfPath } from './topics.js';

/** The topics messages are composed for: a broker's own subscribers', or the cluster's (cluster-publisher.ts). */
export interface WantedTopics {
  /** Whether any topic of a route (by its prefix) is wanted. */
  hasUnder(prefix: string): boolean;
  has(topic: string): boolean;
  /** The wanted topics that are a resource's topic with a query (`…/Things?$select=name` of `…/Things`). */
  variantsOf(resource: string): Iterable<string>;
}

export interface NotifierDeps {
  subscriptions: WantedTopics;
  /**
   * Called before each batch of messages goes out, with their topics: brings their subscribers'
   * rights up to date, so that each delivery is then decided at once on current rights. A failure
   * withholds the batch.
   */
  beforePublish(topics: ReadonlySet<string>): Promise<void>;
  publish(topic: string, message: string): void;
  /** Rendered changes no subscriber of this broker wanted (they cost a parse, nothing else). */
  unwanted(count: number): void;
  log: { warn(details: object, message: string): void; debug(details: object, message: string): void };
}

/** `$select` topics whose parse is kept. */
const MAX_SELECTIONS = 10_000;
interface Message { topic: string; text: string }

/**
 * Turns rendered changes (see renderer.ts: rendered once, by the process that committed them)
 * into MQTT messages for this broker's subscribers (OGC 18-088 §14.2): the entity as a GET
 * answers it, on its entity set, itself and the navigation collections of its to-one links, and
 * only the properties named on their `?$select=…` variants; on a property topic, `{"name": value}`
 * when the entity was created, or updated with that property's stored value changed (the writer
 * compares the row before and after and says which properties changed, so every process decides
 * alike, whatever it saw before). Nothing is read from the database but the subscribers' rights.
 */
export class ChangeNotifier {
  /** The JSON keys of each `$select` topic subscribed (parsed once; cleared when it grows large). */
  private readonly selections = new Map<string, string[] | undefined>();
  /** Deliveries take turns, so that messages keep the order their changes were rendered in. */
  private delivering: Promise<void> = Promise.resolve();

  constructor(private readonly deps: NotifierDeps) {}

  readonly deliver = (changes: readonly RenderedChange[]): Promise<void> => {
    const messages: Message[] = [];
    let unwanted = 0;
    for (const change of changes) {
      const before = messages.length;
      if (this.deps.subscriptions.hasUnder(routeTopicPrefix(change.datasetId, change.slug))) this.compose(change, messages);
      if (messages.length === before) unwanted++;
    }
    if (unwanted > 0) this.deps.unwanted(unwanted);
    const turn = this.delivering.then(() => this.publish(messages));
    this.delivering = turn;
    return turn;
  };

  private async publish(messages: Message[]): Promise<void> {
    if (messages.length === 0) return;
    try {
      await this.deps.beforePublish(new Set(messages.map((message) => message.topic)));
    } catch (error) {
      this.deps.log.warn({ err: { message: (error as Error).message }, messages: messages.length }, 'MQTT notifications: subscribers\' rights could not be checked; messages withheld');
      return;
    }
    // Synchronously after the check: no revocation seen by it can be missed by these deliveries.
    for (const { topic, text } of messages) {
      if (this.deps.subscriptions.has(topic)) this.deps.publish(topic, text);
    }
  }

  /** Adds the messages of one rendered change to `messages`. */
  private compose(change: RenderedChange, messages: Message[]): void {
    const { datasetId, slug, entitySet, id, text } = change;
    let entity: Record<string, unknown> | undefined;
    const entityOf = () => (entity ??= JSON.parse(text) as Record<string, unknown>);
    const publishOn = (path: string, message: string) => {
      for (const topic of topicsOfPath(datasetId, slug, path)) {
        if (this.deps.subscriptions.has(topic)) messages.push({ topic, text: message });
      }
    };
    for (const path of pathsOfChange(entitySet, id, new Map(Object.entries(change.linkIds)))) {
      publishOn(path, text);
      // `…?$select=name,description`: the entity with those properties only.
      for (const topic of topicsOfPath(datasetId, slug, path)) {
        for (const variant of this.deps.subscriptions.variantsOf(topic)) {
          const select = this.selectionOf(variant);
          if (select) messages.push({ topic: variant, text: JSON.stringify(selected(entityOf(), select)) });
        }
      }
    }
    // An update says which properties it changed; a writer that does not know counts as all.
    const changed = change.kind === 'update' && change.properties ? new Set(change.properties) : null;
    for (const name of Object.keys(entityOf())) {
      if (name.includes('@') || (changed && !changed.has(name))) continue;
      publishOn(`/${entitySet}(${id})/${name}`, `{${JSON.stringify(name)}:${JSON.stringify(entityOf()[name] ?? null)}}`);
    }
  }

  private selectionOf(topic: string): string[] | undefined {
    if (!this.selections.has(topic)) {
      if (this.selections.size >= MAX_SELECTIONS) this.selections.clear();
      this.selections.set(topic, parseTopic(topic)?.select);
    }
    return this.selections.get(topic);
  }
}
