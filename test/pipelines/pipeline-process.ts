/**
 * A process of the service that runs pipelines and nothing else a test needs: the management app
 * on a context of the given PostgreSQL database (its onReady starts the sagas and the pipeline
 * runtime), no listener. Says `ready` on stdout once started. The takeover test starts two of
 * these and kills one with SIGKILL. It prints `running [ids]` whenever the pipelines it runs change.
 *
 *   DATABASE_URL=postgres://… tsx test/pipelines/pipeline-process.ts
 */
import { loadConfig } from '../../src/config.js';
import { createContext } from '../../src/runtime.js';
import { buildApp } from '../../src/app.js';
import { pino } from 'pino';
import { createLogger } from '../../src/logger.js';

const config = loadConfig({ ...process.env, LOG_LEVEL: 'silent', DEV_IDP: 'off' } as Record<string, string>);
// PIPELINE_PROCESS_LOG=info shows the runtime's lines on stderr (for a failing takeover test).
const log = process.env['PIPELINE_PROCESS_LOG'] ? createLogger(process.env['PIPELINE_PROCESS_LOG'], pino.destination(2)) : undefined;
const ctx = await createContext(config, { url: process.env['DATABASE_URL']!, dataDir: null, poolSize: 5 }, log);
const app = await buildApp(ctx);
await app.ready();
process.stdout.write('ready\n');

// Which pipelines this process runs, on every change: the takeover test kills the one running its pipeline.
let reported = '';
setInterval(() => {
  const running = JSON.stringify(ctx.pipelines.running);
  if (running === reported) return;
  reported = running;
  process.stdout.write(`running ${running}\n`);
}, 50);

process.on('SIGTERM', async () => {
  await app.close();
  await ctx.db.destroy();
  process.exit(0);
});
