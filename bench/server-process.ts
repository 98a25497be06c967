import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync, closeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** The real program as a child process, started the way an operator starts it. */
export interface ServerProcess {
  child: ChildProcess;
  /** Milliseconds from spawn to the first 200 of /health/ready. */
  readyMs: number;
  /** The pid of the node process that runs the server (npm and tsx wrap it in other processes). */
  serverPid(): number;
  stop(): Promise<number | null>;
}

export interface StartOptions {
  command: string;
  args: string[];
  env: Record<string, string>;
  readyUrl: string;
  logFile: string;
  /** A pattern of the server process's command line, to find it under npm or tsx. */
  serverCommandLine: RegExp;
  timeoutMs?: number;
}

export async function startServer(opts: StartOptions): Promise<ServerProcess> {
  const log = openSync(opts.logFile, 'a');
  const startedAt = performance.now();
  const child = spawn(opts.command, opts.args, {
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  let exited: number | null | undefined;
  child.on('exit', (code) => (exited = code));

  const deadline = startedAt + (opts.timeoutMs ?? 60_000);
  let readyMs: number | undefined;
  while (readyMs === undefined) {
    if (exited !== undefined) throw new Error(`server exited with ${exited} before it was ready; see ${opts.logFile}`);
    if (performance.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server not ready within ${opts.timeoutMs ?? 60_000} ms; see ${opts.logFile}`);
    }
    try {
      const response = await fetch(opts.readyUrl, { signal: AbortSignal.timeout(1000) });
      await response.body?.cancel();
      if (response.status === 200) readyMs = performance.now() - startedAt;
    } catch {
      // not listening yet
    }
    if (readyMs === undefined) await sleep(10);
  }

  const serverPid = () => {
    const found = processTree(child.pid!).find((pid) => opts.serverCommandLine.test(commandLine(pid)));
    if (found === undefined) throw new Error('server process not found');
    return found;
  };
  return {
    child,
    readyMs,
    serverPid,
    async stop() {
      if (exited !== undefined) return exited;
      const done = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      // npm does not forward signals to its script; the server itself gets the SIGTERM.
      process.kill(serverPid(), 'SIGTERM');
      const code = await Promise.race([done, sleep(15_000).then(() => 'timeout' as const)]);
      if (code === 'timeout') {
        for (const pid of processTree(child.pid!).reverse()) process.kill(pid, 'SIGKILL');
        return null;
      }
      return code;
    },
  };
}

/** The pid and every descendant, parents first. */
export function processTree(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    // gone
  }
  return [pid, ...children.flatMap(processTree)];
}

export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return '';
  }
}

/** Resident set size in MiB (VmRSS of /proc/<pid>/status). */
export function rssMiB(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for ${pid}`);
  return Number(match[1]) / 1024;
}

/**
 * Throws when the server has exited: on a shared machine something outside the benchmark may stop
 * it, and figures of refused connections mean nothing.
 */
export function assertServerRunning(server: ServerProcess | null, during: string, logFile: string): void {
  const child = server?.child;
  if (child && (child.exitCode !== null || child.signalCode !== null)) {
    throw new Error(`the server stopped during "${during}" (exit ${child.exitCode ?? child.signalCode}); see ${logFile}`);
  }
}

/** On SIGINT or SIGTERM: says so, runs `cleanUp` (database, processes), exits 130. */
export function cleanUpOnSignals(say: (message: string) => void, cleanUp: () => Promise<void>): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      say(`${signal}: cleaning up`);
      void cleanUp().finally(() => process.exit(130));
    });
  }
}
