import { fileURLToPath } from 'node:url';
import { freePort } from '../ows/nginx.js';
import type { CapturedQuery } from '../sql-alone.js';
import type { SqlServerSettings } from './sql-server.js';
import { startChildServer, type ChildServer } from './child-server.js';

/** `url`/`<name>` runs the statements of scenario `name`. */
export type SqlBaseline = ChildServer;

const SCRIPT = fileURLToPath(new URL('./sql-server.ts', import.meta.url));

/** Starts bench/limits/sql-server.ts as a child process with the statements of each scenario. */
export async function startSqlBaseline(dir: string, databaseUrl: string, poolSize: number, scenarios: Record<string, CapturedQuery[]>, logFile: string): Promise<SqlBaseline> {
  const settings: SqlServerSettings = {
    databaseUrl, poolSize, port: await freePort(),
    scenarios: Object.fromEntries(Object.entries(scenarios).map(([name, queries]) => [`/${name}`, queries])),
  };
  return startChildServer(SCRIPT, settings, dir, 'sql-server', logFile);
}
