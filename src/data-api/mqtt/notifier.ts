import type { StaServer } from '../../sta/types.js';
import { publicBaseOf, type PayloadRoute, type RouteTable } from '../route-table.js';
import type { StaChange } from './change-feed.js';
import type { SubscriptionIndex } from './subscriptions.js';
import { pathsOfChange, routeTopicPrefix, topicsOfPath, TO_ONE_LINKS } from './topics.js';

export interface NotifierDeps {
  sta: StaServer;
  routes: RouteTable;
  subscriptions: SubscriptionIndex;
  dataApiUrl: string;
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
/** Property values remembered per entity, to tell a changed property from one merely written again. */
const MAX_REMEMBERED_ENTITIES = 10_000;
/** Changes fetched before their messages go out together (one check of the subscribers' rights). */
const BATCH_CHANGES = 50;

interface Pending { change: StaChange; route: PayloadRoute }
interface Message { topic: string; text: string }

/**
 * Turns committed changes into MQTT messages for this broker's subscribers (OGC 18-088 §14.2):
 * the entity as a GET answers it, on its entity set, itself and the navigation collections of its
 * to-one links; on a property topic, `{"name": value}` when the value differs from the last one
 * seen. Deletes are not announced (the standard notifies creates and updates). A change is only
 * fetched when some topic of its route has a subscriber here; fetches run one at a time so that a
 * bulk insert followed by subscribers does not flood the database.
 */
export class ChangeNotifier {
  private queue: Pending[] = [];
  private draining = false;
  private dropping = false;
  private readonly remembered = new Map<string, Map<string, string>>();

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
    void this.drain();
  };

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.queue.length > 0) {
        const messages: Message[] = [];
        for (const next of this.queue.splice(0, BATCH_CHANGES)) {
          try {
            await this.compose(next, messages);
          } catch (error) {
            // The entity may be gone again, or the schema unprovisioned: nothing to announce.
            this.deps.log.debug({ err: { message: (error as Error).message }, change: next.change }, 'MQTT notifications: change not announced');
          }
        }
        await this.publish(messages);
      }
    } finally {
      this.draining = false;
      this.dropping = false;
    }
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

  /** Adds the messages of one change to `messages`. */
  private async compose({ change, route }: Pending, messages: Message[]): Promise<void> {
    const { entitySet, id } = change;
    const links = TO_ONE_LINKS[entitySet] ?? [];
    const answer = await this.deps.sta.handle({
      method: 'GET',
      path: `/${entitySet}(${id})`,
      // Only the ids of the to-one links are asked for: they name the navigation collections.
      query: links.length > 0 ? `$expand=${links.map((link) => `${link.navigation}($select=id)`).join(',')}` : '',
      body: undefined,
      preferMinimal: false,
      baseUrl: publicBaseOf(this.deps.dataApiUrl, route),
      schema: route.storageSchema,
      rights: { read: true, write: false },
    });
    if (answer.status !== 200 || typeof answer.body !== 'object' || answer.body === null) return;
    const entity = { ...(answer.body as Record<string, unknown>) };
    const linkIds = new Map<string, number>();
    for (const link of links) {
      const linked = entity[link.navigation] as Record<string, unknown> | undefined;
      if (linked && typeof linked['@iot.id'] === 'number') linkIds.set(link.navigation, linked['@iot.id']);
      // The message is the entity as a plain GET answers it, without the expansion.
      delete entity[link.navigation];
    }
    const message = JSON.stringify(entity);
    const publishOn = (path: string, text: string) => {
      for (const topic of topicsOfPath(route.datasetId, route.slug, path)) {
        if (this.deps.subscriptions.has(topic)) messages.push({ topic, text });
      }
    };
    for (const path of pathsOfChange(entitySet, id, linkIds)) publishOn(path, message);
    this.notifyProperties(route, `/${entitySet}(${id})`, entity, publishOn);
  }

  private notifyProperties(route: PayloadRoute, entityPath: string, entity: Record<string, unknown>, publishOn: (path: string, text: string) => void): void {
    const properties = Object.keys(entity).filter((name) => !name.includes('@'));
    const followed = properties.filter((name) => topicsOfPath(route.datasetId, route.slug, `${entityPath}/${name}`).some((topic) => this.deps.subscriptions.has(topic)));
    const key = `${route.datasetId}/${route.slug}${entityPath}`;
    if (followed.length === 0) return void this.remembered.delete(key);
    const before = this.remembered.get(key);
    const now = new Map(properties.map((name) => [name, JSON.stringify(entity[name] ?? null)]));
    for (const name of followed) {
      if (before?.get(name) !== now.get(name)) publishOn(`${entityPath}/${name}`, `{${JSON.stringify(name)}:${now.get(name)}}`);
    }
    this.remembered.delete(key);
    this.remembered.set(key, now);
    if (this.remembered.size > MAX_REMEMBERED_ENTITIES) this.remembered.delete(this.remembered.keys().next().value!);
  }
}
