import type { StaServer } from '../../sta/types.js';
import type { PayloadRoute } from '../route-table.js';
import { findEntities, type FoundEntity } from './entity-lookup.js';
import { routeTopicPrefix } from './topics.js';

/** One committed SensorThings write, as the store reports it. */
export interface StaChange {
  schema: string;
  entitySet: string;
  id: number;
  kind: 'create' | 'update' | 'delete';
  /** An update's changed properties, when the writer knew them (see the store's Change). */
  properties?: string[];
}

/**
 * A committed change rendered into what its MQTT messages carry, once, by the process that
 * committed it (contract "MQTT across replicas"): the entity as a GET of it answers, and the ids
 * of its to-one links (they name the navigation topics it is announced on). Every broker composes
 * its own subscribers' messages from it (topics, `$select` projections, property topics) without
 * reading the entity again.
 */
export interface RenderedChange {
  datasetId: string;
  slug: string;
  entitySet: string;
  id: number;
  kind: 'create' | 'update';
  /** An update's changed properties, when the writer knew them. */
  properties?: string[];
  /** The entity's JSON, exactly as `GET /{set}({id})` serializes it. */
  text: string;
  /** Navigation name (`Datastream`) → the linked entity's id. */
  linkIds: Record<string, number>;
}

export interface RendererDeps {
  sta: StaServer;
  routesOfSchema(schema: string): PayloadRoute[];
  /** Brings the route table up to date (a change in a schema it has no route for: it is behind, a release just committed). */
  catchUp(): Promise<void>;
  dataApiUrl: string;
  /** STA_EXPRESSION_MAX_BYTES: the `$filter` of a batched read stays within it. */
  filterMaxBytes: number;
  /** Whether some process has a subscriber under this route's topic prefix (`routeTopicPrefix`). */
  wanted(routePrefix: string): boolean;
  /** Hands rendered changes on (the outbox, or this process's broker); one call at a time. */
  deliver(changes: RenderedChange[]): Promise<void>;
  log: { warn(details: object, message: string): void; debug(details: object, message: string): void };
}

/** Beyond this many changes waiting to be rendered, new ones are dropped (with one warning per burst). */
const MAX_BACKLOG = 50_000;
/**
 * Changes read before they are handed on together. Their entities are read a few hundred per
 * query, so a large batch costs little more than a small one; under a thousand writes a second one
 * batch holds what came in while the last was read.
 */
const BATCH_CHANGES = 2_000;

interface Pending { change: StaChange; route: PayloadRoute }
/** Changes of one route and entity set are read together. */
const groupKey = ({ change, route }: Pending) => `${route.datasetId}\u0000${route.slug}\u0000${change.entitySet}`;

/**
 * Renders the changes this process committed: only those of a SensorThings route some process
 * has a subscriber under (a bulk insert into a dataset nobody follows costs a set lookup per
 * row), deletes never (the standard announces creates and updates). The waiting changes are read
 * in batches, one collection query per route, entity set and few hundred ids, one batch at a time:
 * a query per change could not keep up with a thousand writes a second, and one at a time keeps a
 * bulk insert from flooding the database.
 */
export class ChangeRenderer {
  private queue: Array<{ change: StaChange; route: PayloadRoute | null }> = [];
  private draining = false;
  private drainScheduled = false;
  private dropping = false;

  constructor(private readonly deps: RendererDeps) {}

  readonly onChanges = (changes: StaChange[]): void => {
    for (const change of changes) {
      if (change.kind === 'delete') continue;
      const routes = this.deps.routesOfSchema(change.schema);
      if (routes.length === 0) this.enqueue(change, null);
      for (const route of routes) this.enqueue(change, route);
    }
    // Started on the next turn: the rest of a burst joins this batch.
    if (this.queue.length > 0 && !this.drainScheduled) {
      this.drainScheduled = true;
      setImmediate(() => {
        this.drainScheduled = false;
        void this.drain();
      });
    }
  };

  /** Queues a change of a wanted route; one of a schema with no known route is queued to be looked at once the table caught up. */
  private enqueue(change: StaChange, route: PayloadRoute | null): void {
    if (route && (route.standard !== 'STA' || !this.deps.wanted(routeTopicPrefix(route.datasetId, route.slug)))) return;
    if (this.queue.length >= MAX_BACKLOG) {
      if (!this.dropping) this.deps.log.warn({ backlog: this.queue.length }, 'MQTT notifications: backlog full; dropping changes');
      this.dropping = true;
      return;
    }
    this.queue.push({ change, route });
  }

  /** The batch with its unrouted changes given their routes (after one catch-up of the table), those of unwanted routes left out. */
  private async routed(batch: Array<{ change: StaChange; route: PayloadRoute | null }>): Promise<Pending[]> {
    if (batch.every((item) => item.route !== null)) return batch as Pending[];
    try {
      await this.deps.catchUp();
    } catch (error) {
      this.deps.log.debug({ err: { message: (error as Error).message } }, 'MQTT notifications: the route table could not catch up');
    }
    const routed: Pending[] = [];
    for (const { change, route } of batch) {
      if (route) {
        routed.push({ change, route });
        continue;
      }
      for (const found of this.deps.routesOfSchema(change.schema)) {
        if (found.standard === 'STA' && this.deps.wanted(routeTopicPrefix(found.datasetId, found.slug))) routed.push({ change, route: found });
      }
    }
    return routed;
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.queue.length > 0) {
        const batch = await this.routed(this.queue.splice(0, BATCH_CHANGES));
        const found = await this.findAll(batch);
        const rendered: RenderedChange[] = [];
        // In the order the changes came: the messages of an entity set keep the order of its writes.
        for (const pending of batch) {
          const entity = found.get(groupKey(pending))?.get(pending.change.id);
          if (entity) rendered.push(renderedOf(pending, entity));
        }
        if (rendered.length === 0) continue;
        try {
          await this.deps.deliver(rendered);
        } catch (error) {
          this.deps.log.warn({ err: { message: (error as Error).message }, changes: rendered.length }, 'MQTT notifications: rendered changes could not be handed on; not announced');
        }
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
}

function renderedOf({ change, route }: Pending, entity: FoundEntity): RenderedChange {
  return {
    datasetId: route.datasetId, slug: route.slug, entitySet: change.entitySet, id: change.id, kind: change.kind as 'create' | 'update',
    ...(change.properties ? { properties: change.properties } : {}),
    text: entity.text, linkIds: Object.fromEntries(entity.linkIds),
  };
}
