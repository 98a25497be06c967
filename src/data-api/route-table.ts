import { sql } from 'kysely';
import type { ConnectionLog, Database } from '../db/client.js';
import { listenForNotifications, type Listener } from '../db/notifications.js';
import { routeVersion } from '../db/versions.js';

/** One published payload route: a named API of an AVAILABLE dataset whose release has finished. */
export interface PayloadRoute {
  datasetId: string;
  slug: string;
  standard: 'OWS' | 'STA';
  openDataAccess: boolean;
  datapoolId: string | null;
  /** The dataset's storage schema, where the payload lives. */
  storageSchema: string;
  /** Upstream mode: the SensorThings server this API is proxied to (null: ours, or the global STA_UPSTREAM_URL). */
  upstreamUrl: string | null;
}

export interface RouteTableOptions {
  /** PostgreSQL URL to LISTEN on (null: polling only, as on PGlite, and the misses' version reads). */
  listenUrl: string | null;
  /**
   * How often the version is polled (default 500 ms: a release shows within 1 s without LISTEN).
   * 0: never, so that only NOTIFY (and the reload after a LISTEN reconnects) brings changes; a test
   * of NOTIFY uses it, since polling would make it pass without NOTIFY working.
   */
  pollMs?: number;
  log: ConnectionLog;
  /** Called after every reload with the routes now published (the OWS server drops maps of vanished routes). */
  onReload?: (routes: PayloadRoute[]) => void;
}

const key = (datasetId: string, slug: string) => `${datasetId}/${slug}`;

/**
 * Tells every gateway process that what a route serves changed without a dataset change (a feature
 * collection was created or dropped): they reload their routes, and with them their OWS maps.
 */
export async function announceRouteChange(trx: Database): Promise<void> {
  // Migration 0021: the counter moves (and the NOTIFY goes out) when `trx` commits.
  await sql`select announce_gateway_route_change()`.execute(trx);
}

/** The public base URL of a route (its `previewUrl`): every link the payload servers answer starts with it. */
export const publicBaseOf = (dataApiUrl: string, route: Pick<PayloadRoute, 'datasetId' | 'slug'>) =>
  `${dataApiUrl}/v1/datasets/${route.datasetId}/${encodeURIComponent(route.slug)}`;

/**
 * The gateway's copy of the `gateway_routes` view, so that a payload request costs a map lookup,
 * not a query. It reloads the whole view (small: one row per published API) when the route version
 * changes: at once on a NOTIFY (PostgreSQL), and by polling the version otherwise. A reload that
 * fails (database down) keeps the last known routes and is tried again at the next poll.
 *
 * The version moves at commit (migration 0021) and is read before the rows, so the table never
 * records a version newer than the rows it holds: a missed notification is repaired by the next
 * poll. A request the table would refuse reads the version first (`catchUp`), so that a release or
 * an opening committed before the request arrived is served even before its NOTIFY or poll.
 */
export class RouteTable {
  private routes = new Map<string, PayloadRoute>();
  private loadedVersion: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  private listener: Listener | null = null;
  private reloading: Promise<void> | null = null;
  private reloadAgain = false;
  private nextCatchUp: Promise<void> | null = null;

  constructor(private readonly db: Database, private readonly options: RouteTableOptions) {}

  /** The route as this table last loaded it (see `catchUp` for a refusal's second look). */
  lookup(datasetId: string, slug: string): PayloadRoute | undefined {
    return this.routes.get(key(datasetId, slug));
  }

  /** Every published route over a storage schema (a dataset's named APIs), for change notifications. */
  routesOfSchema(schema: string): PayloadRoute[] {
    return [...this.routes.values()].filter((route) => route.storageSchema === schema);
  }

  async start(): Promise<void> {
    await this.reload();
    const pollMs = this.options.pollMs ?? 500;
    const poll = () => {
      this.timer = setTimeout(() => void this.pollOnce().finally(() => { if (this.timer) poll(); }), pollMs);
      this.timer.unref();
    };
    if (pollMs > 0) poll();
    if (this.options.listenUrl) {
      this.listener = listenForNotifications(this.options.listenUrl, 'gateway_routes', {
        onNotify: () => void this.reload(),
        onReconnect: () => void this.reload(),
      }, this.options.log);
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.listener?.close();
    this.listener = null;
    await this.reloading;
  }

  /**
   * Reloads when the route version moved past the one this table holds: for callers that must not
   * wait for NOTIFY or the poll (the MQTT broker before a delivery). A failed version read throws.
   */
  async reloadIfBehind(): Promise<void> {
    if ((await routeVersion(this.db)) !== this.loadedVersion) await this.reload();
  }

  /**
   * Brings the table up to the route version as of now, for a request about to be refused on what
   * the table holds (no route, or not open to this caller): the request is then decided again on
   * the table as it is (whoever reloaded it meanwhile). The version read starts after this call, in
   * the next turn of the event loop, and is shared by every refusal of that turn (a client probing
   * unknown paths costs one query per turn, not one per request). A failed read leaves the table as
   * it is: with the database down nothing newer can be known.
   */
  catchUp(): Promise<void> {
    this.nextCatchUp ??= new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      this.nextCatchUp = null;
      try {
        await this.reloadIfBehind();
      } catch (error) {
        this.options.log.warn({ err: { message: (error as Error).message } }, 'gateway routes: could not read the route version before refusing a request');
      }
    });
    return this.nextCatchUp;
  }

  private async pollOnce(): Promise<void> {
    try {
      await this.reloadIfBehind();
    } catch (error) {
      this.options.log.warn({ err: { message: (error as Error).message } }, 'gateway routes: could not poll the route version');
    }
  }

  /**
   * One reload at a time. Whoever asks for one while one runs gets a read that starts after the
   * asking (one more round of the running loop, shared by everyone who asked meanwhile).
   */
  reload(): Promise<void> {
    this.reloadAgain = true;
    this.reloading ??= this.reloadRounds();
    return this.reloading;
  }

  private async reloadRounds(): Promise<void> {
    // Not before `reloading` holds this promise: the loop below must never end unseen by reload().
    await null;
    while (this.reloadAgain) {
      this.reloadAgain = false;
      try {
        // The version is read first: a change committed during the read makes the next poll reload again.
        const version = await routeVersion(this.db);
        const rows = await this.db.selectFrom('gateway_routes').selectAll().execute();
        this.routes = new Map(rows.map((row) => [key(row.dataset_id, row.slug), {
          datasetId: row.dataset_id, slug: row.slug, standard: row.standard,
          openDataAccess: row.open_data_access, datapoolId: row.datapool_id, storageSchema: row.storage_schema, upstreamUrl: row.upstream_url,
        }]));
        this.loadedVersion = version;
        this.options.onReload?.([...this.routes.values()]);
      } catch (error) {
        this.options.log.warn({ err: { message: (error as Error).message } }, 'gateway routes: reload failed; keeping the last known routes');
      }
    }
    // In the same synchronous step as the last check of reloadAgain: a reload() asked for after that
    // check starts a loop of its own instead of joining this finished one (with `.finally` it could
    // join in between, and be answered by a read that started before it asked).
    this.reloading = null;
  }
}
