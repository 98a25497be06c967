import type { FastifyInstance } from 'fastify';
import type { GatewayContext } from '../gateway-context.js';
import { RouteTable } from '../route-table.js';

type RenderingContext = Pick<GatewayContext, 'config' | 'db' | 'databaseUrl' | 'staChanges'>;

/**
 * While the app runs, this process renders the SensorThings changes it commits, once, for the MQTT
 * subscribers of every process (see change-feed.ts): the gateway with its route table, a `worker`
 * process (whose pipelines write) with a table of its own (`ownRoutes`). The entities are read
 * through a pool of the feed's own (see runtime.ts), so that a render never queues behind the
 * HTTP requests.
 */
export function renderCommits(app: FastifyInstance, ctx: RenderingContext, routes: RouteTable | 'ownRoutes'): void {
  // Its own table polls (no LISTEN connection more): a change of a route it does not know yet makes it catch up first.
  const table = routes === 'ownRoutes' ? new RouteTable(ctx.db, { listenUrl: null, log: app.log }) : routes;
  let stop: (() => Promise<void>) | null = null;
  app.addHook('onReady', async () => {
    if (routes === 'ownRoutes') await table.start();
    stop = await ctx.staChanges.render({
      routesOfSchema: (schema) => table.routesOfSchema(schema), catchUp: () => table.reloadIfBehind(),
      dataApiUrl: ctx.config.dataApi.baseUrl, filterMaxBytes: ctx.config.dataApi.limits.expressionMaxBytes, log: app.log,
    }, routes === 'ownRoutes' ? 'standby' : 'first');
  });
  app.addHook('onClose', async () => {
    await stop?.();
    if (routes === 'ownRoutes') await table.stop();
  });
}
