import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The two measurements other modules make (bench/limits/fanout.ts and create-vs-copy.ts), called
 * only when their file exists: the suite runs before they are written, and says so in its report.
 */

export interface ExtraResult { markdown: string; targetsMet: boolean }

export interface FanoutOptions { dataApiUrl: string; mqttUrl: string; token: string; staBase: string; datastreamId: number; rounds: number }
export interface CreateVsCopyOptions { databaseUrl: string; dataApiUrl: string; token: string; staBase: string; storageSchema: string; datastreamId: number; rounds: number }

interface Modules {
  fanout: { measureFanout(options: FanoutOptions): Promise<ExtraResult> };
  'create-vs-copy': { measureCreateVsCopy(options: CreateVsCopyOptions): Promise<ExtraResult> };
}

/** The module `name` of this folder, or null when its file is not there. */
async function optional<K extends keyof Modules>(name: K): Promise<Modules[K] | null> {
  if (!existsSync(fileURLToPath(new URL(`./${name}.ts`, import.meta.url)))) return null;
  // A computed specifier: the type checker must not require a file that may not exist yet.
  const specifier = `./${name}.js`;
  return (await import(specifier)) as Modules[K];
}

export interface Extra { name: string; ran: boolean; result?: ExtraResult; error?: string }

async function run(name: string, call: () => Promise<ExtraResult | null>): Promise<Extra> {
  try {
    const result = await call();
    return result ? { name, ran: true, result } : { name, ran: false };
  } catch (error) {
    return { name, ran: true, error: (error as Error).stack ?? String(error) };
  }
}

export async function measureFanoutIfPresent(options: FanoutOptions): Promise<Extra> {
  return run('MQTT fan-out (bench/limits/fanout.ts)', async () => (await optional('fanout'))?.measureFanout(options) ?? null);
}

export async function measureCreateVsCopyIfPresent(options: CreateVsCopyOptions): Promise<Extra> {
  return run('CreateObservations vs COPY (bench/limits/create-vs-copy.ts)', async () => (await optional('create-vs-copy'))?.measureCreateVsCopy(options) ?? null);
}
