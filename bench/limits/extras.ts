import { measureCreateVsCopy } from './create-vs-copy.js';
import { measureFanout } from './fanout.js';

/**
 * The two measurements that are not pairs of HTTP loads (bench/limits/fanout.ts and
 * create-vs-copy.ts): a failure of one is reported in the summary instead of losing the run.
 */

export interface ExtraResult { markdown: string; targetsMet: boolean }

export interface Extra { name: string; result?: ExtraResult; error?: string }

async function run(name: string, call: () => Promise<ExtraResult>): Promise<Extra> {
  try {
    return { name, result: await call() };
  } catch (error) {
    return { name, error: (error as Error).stack ?? String(error) };
  }
}

export const measureFanoutSafely = (options: Parameters<typeof measureFanout>[0]) =>
  run('MQTT fan-out (bench/limits/fanout.ts)', () => measureFanout(options));

export const measureCreateVsCopySafely = (options: Parameters<typeof measureCreateVsCopy>[0]) =>
  run('CreateObservations vs COPY (bench/limits/create-vs-copy.ts)', () => measureCreateVsCopy(options));
