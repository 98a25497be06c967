import type { FastifyInstance } from 'fastify';

/** A worker that runs beside an application: the saga runner, the pipeline runtime. */
export interface BackgroundWorker {
  start(): void;
  stop(): Promise<void>;
}

/**
 * Runs this process's background work with an application: the saga workers and the pipeline
 * runtime start once it is ready and stop when it closes, before the database does (app.close()
 * comes first in a shutdown). The management API carries it unless BACKGROUND_WORK=off; a `worker`
 * process always does.
 */
export function runBackgroundWork(app: FastifyInstance, work: { sagas: BackgroundWorker; pipelines: BackgroundWorker }): void {
  app.addHook('onReady', async () => {
    work.sagas.start();
    work.pipelines.start();
  });
  app.addHook('onClose', async () => {
    // Pipelines first: a stopping pipeline hands its lease over; a saga step under way is let finish.
    await work.pipelines.stop();
    await work.sagas.stop();
  });
}
