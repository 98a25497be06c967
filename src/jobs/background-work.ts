import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';

/**
 * Runs this process's background work with an application: the saga workers and the pipeline
 * runtime start once it is ready and stop when it closes, before the database does (app.close()
 * comes first in a shutdown). The management API carries it unless BACKGROUND_WORK=off; a `worker`
 * process always does.
 */
export function runBackgroundWork(app: FastifyInstance, ctx: Pick<AppContext, 'sagas' | 'pipelines'>): void {
  app.addHook('onReady', async () => {
    ctx.sagas.start();
    ctx.pipelines.start();
  });
  app.addHook('onClose', async () => {
    // Pipelines first: a stopping pipeline hands its lease over; a saga step under way is let finish.
    await ctx.pipelines.stop();
    await ctx.sagas.stop();
  });
}
