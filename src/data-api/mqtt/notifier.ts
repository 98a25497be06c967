import type { StaServer } from '../../sta/types.js';
import type { PayloadRoute, RouteTable } from '../route-table.js';
import type { StaChange } from './change-feed.js';
import type { SubscriptionIndex } from './subscriptions.js';
import { findEntities, type FoundEntity } from './entity-lookup.js';
import { parseTopic, pathsOfChange, routeTopicPrefix, selected, topicsOfPath } from './topics.js';

export interface NotifierDeps {
  sta: StaServer;
  routes: RouteTable;
  subscriptions: SubscriptionIndex;
  dataApiUrl: string;
  /** STA_EXPRESSION_MAX_BYTES: the `$filter` of a batched read stays within it. */
  filterMaxBytes: number;
  /**
   * Called before each batch of messages goes out, with their topics: brings their subscribers'
   * rights up to date, so that each delivery is then decided at once on current rights. A failure
   * withholds the batch.
   */
  beforePublish(topics: ReadonlySet<string>): Promise<void>;
  publish(topic: string, message: string): void;
  log: { warn(details: object, message: string): void; debug(details: object, message: string): void };
}

/** Beyond this many changes waiting to be fetched, new ones are dropped (with one warning per burst). */
const MAX_BACKLOG = 50_000;
/** `$select` topics whose parse is kept. */
const MAX_SELECTIONS = 10_000;
/**
 * Changes read before their messages go out together (one check of the subscribers' rights). Their
 * entities are read a few hundred per query, so a large batch costs little more than a small one;
 * under a thousand writes a second one batch holds what came in while the last was read.
 */
const BATCH_CHANGES = 2_000;

interface Pending { change: StaChange; route: PayloadRoute }
/** Changes of one route and entity set are read together. */
const groupKey = ({ change, route }: Pending) => `${route.datasetId}\u0000${route.slug}\u0000${change.entitySet}`;
interface Message { topic: string; text: string }

/**
 * Turns committed changes into MQTT messages for this broker's subscribers (OGC 18-088 §14.2):
 * the entity as a GET answers it, on its entity set, itself and the navigation collections of its
 * to-one links, and only the properties named on their `?$select=…` variants; on a property topic,
 * `{"name": value}` when the entity was created, or updated with that property's stored value
 * changed (the writer compares the row before and after and says which properties changed, so
 * every process decides alike, whatever it saw before). Deletes are not announced (the standard
 * notifies creates and updates). A change is only read when some topic of its route has a subscriber here. The changes waiting are read in
 * batches, one collection query per route, entity set and few hundred ids, one query at a time:
 * a query per change could not keep up with a thousand writes a second (its messages fell behind
 * by a second and more), and one at a time keeps a bulk insert followed by subscribers from
 * flooding the database.
 */
export class ChangeNotifier {
  private queue: Pending[] = [];
  private draining = false;
  private drainScheduled = false;
  private dropping = false;
  /** The JSON keys of each `$select` topic subscribed (parsed once; cleared when it grows large). */
  private readonly selections = new Map<string, string[] | undefined>();

  constructor(private readonly deps: NotifierDeps) {}

  readonly onChanges = (changes: StaChange[]): void => {
    for (const change of changes) {
      if (change.kind === 'delete') continue;
      for (const route of this.deps.routes.routesOfSchema(change.schema)) {
        if (route.standard !== 'STA' || !this.deps.subscriptions.hasUnder(routeTopicPrefix(route.datasetId, route.slug))) continue;
        if (this.queue.length >= MAX_BACKLOG) {
          if (!this.dropping) this.deps.log.warn({ backlog: this.queue.length }, 'MQTT notifications: backlog full; dropping changes');
          this.dropping = true;
          continue;
        }
        this.queue.push({ change, route });
      }
    }
    // Started on the next turn: the other NOTIFYs of a burst, read from the socket together, join this batch.
    if (this.queue.length > 0 && !this.drainScheduled) {
      this.drainScheduled = true;
      setImmediate(() => {
        this.drainScheduled = false;
        void this.drain();
      });
    }
  };

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, BATCH_CHANGES);
        const found = await this.findAll(batch);
        const messages: Message[] = [];
        // In the order the changes came: the messages of an entity set keep the order of its writes.
        for (const pending of batch) {
          const entity = found.get(groupKey(pending))?.get(pending.change.id);
          if (entity) this.compose(pending, entity, messages);
        }
        await this.publish(messages);
      }
    } finally {
      this.draining = false;
      this.dropping = false;
    }
  }

  /**
   * The changed entities of a batch, read per route and entity set (one query per few hundred ids).
   * A group whose read fails (the schema unprovisioned meanwhile) announces nothing; the others go on.
   */
  private async findAll(batch: Pending[]): Promise<Map<string, Map<number, FoundEntity>>> {
    const groups = new Map<string, { route: PayloadRoute; entitySet: string; ids: Set<number> }>();
    for (const pending of batch) {
      const key = groupKey(pending);
      let group = groups.get(key);
      if (!group) groups.set(key, group = { route: pending.route, entitySet: pending.change.entitySet, ids: new Set() });
      group.ids.add(pending.change.id);
    }
    const found = new Map<string, Map<number, FoundEntity>>();
    for (const [key, { route, entitySet, ids }] of groups) {
      try {
        found.set(key, await findEntities(this.deps.sta, this.deps.dataApiUrl, route, entitySet, [...ids], this.deps.filterMaxBytes));
      } catch (error) {
        this.deps.log.debug({ err: { message: (error as Error).message }, entitySet, changes: ids.size }, 'MQTT notifications: changes not announced');
      }
    }
    return found;
  }

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

  /** Adds the messages of one change, whose entity was found, to `messages`. */
  private compose({ change, route }: Pending, { text, entity, linkIds }: FoundEntity, messages: Message[]): void {
    const { entitySet, id } = change;
    const publishOn = (path: string, message: string) => {
      for (const topic of topicsOfPath(route.datasetId, route.slug, path)) {
        if (this.deps.subscriptions.has(topic)) messages.push({ topic, text: message });
      }
    };
    for (const path of pathsOfChange(entitySet, id, linkIds)) {
      publishOn(path, text);
      // `…?$select=name,description`: the entity with those properties only.
      for (const topic of topicsOfPath(route.datasetId, route.slug, path)) {
        for (const variant of this.deps.subscriptions.variantsOf(topic)) {
          const select = this.selectionOf(variant);
          if (select) messages.push({ topic: variant, text: JSON.stringify(selected(entity, select)) });
        }
      }
    }
    // An update says which properties it changed; a writer that does not know counts as all.
    const changed = change.kind === 'update' && change.properties ? new Set(change.properties) : null;
    for (const name of Object.keys(entity)) {
      if (name.includes('@') || (changed && !changed.has(name))) continue;
      publishOn(`/${entitySet}(${id})/${name}`, `{${JSON.stringify(name)}:${JSON.stringify(entity[name] ?? null)}}`);
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
