import { spawn } from 'node:child_process';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** A baseline server of the bench running as a child process. */
export interface ChildServer {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * Starts a baseline server script (`bench/limits/*-server.ts`) as a child process under the same
 * Node and TypeScript loader as this process (tsx's flags in execArgv), with its settings in
 * `<dir>/<name>.json` (given as its argument), and waits until its `/health` answers 200.
 */
export async function startChildServer(script: string, settings: { port: number }, dir: string, name: string, logFile: string): Promise<ChildServer> {
  const settingsFile = join(dir, `${name}.json`);
  writeFileSync(settingsFile, JSON.stringify(settings));
  const log = openSync(logFile, 'a');
  const child = spawn(process.execPath, [...process.execArgv, script, settingsFile], { stdio: ['ignore', log, log] });
  closeSync(log);
  const url = `http://127.0.0.1:${settings.port}`;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    if (!(await Promise.race([exited.then(() => true), sleep(5000).then(() => false)]))) child.kill('SIGKILL');
  };
  for (const deadline = Date.now() + 15_000; ; await sleep(50)) {
    if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}); see ${logFile}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${name} did not listen within 15 s; see ${logFile}`);
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
