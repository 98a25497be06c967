import { spawn } from 'node:child_process';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../ows/nginx.js';
import type { CapturedQuery } from '../sql-alone.js';
import type { SqlServerSettings } from './sql-server.js';

export interface SqlBaseline {
  /** `http://127.0.0.1:<port>`; `/<name>` runs the statements of scenario `name`. */
  url: string;
  pid: number;
  stop(): Promise<void>;
}

const SCRIPT = fileURLToPath(new URL('./sql-server.ts', import.meta.url));

/**
 * Starts bench/limits/sql-server.ts as a child process with the statements of each scenario. It
 * runs under the same Node and TypeScript loader as this process (tsx's flags in execArgv).
 */
export async function startSqlBaseline(dir: string, databaseUrl: string, poolSize: number, scenarios: Record<string, CapturedQuery[]>, logFile: string): Promise<SqlBaseline> {
  const port = await freePort();
  const settings: SqlServerSettings = {
    databaseUrl, poolSize, port,
    scenarios: Object.fromEntries(Object.entries(scenarios).map(([name, queries]) => [`/${name}`, queries])),
  };
  const settingsFile = join(dir, 'sql-server.json');
  writeFileSync(settingsFile, JSON.stringify(settings));
  const log = openSync(logFile, 'a');
  const child = spawn(process.execPath, [...process.execArgv, SCRIPT, settingsFile], { stdio: ['ignore', log, log] });
  closeSync(log);
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    if (!(await Promise.race([exited.then(() => true), sleep(5000).then(() => false)]))) child.kill('SIGKILL');
  };
  for (const deadline = Date.now() + 15_000; ; await sleep(50)) {
    if (child.exitCode !== null) throw new Error(`the SQL server exited (${child.exitCode}); see ${logFile}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the SQL server did not listen within 15 s; see ${logFile}`);
    }
    try {
      const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) });
      await response.body?.cancel();
      if (response.status === 200) break;
    } catch {
      // not listening yet
    }
  }
  return { url, pid: child.pid!, stop };
}
