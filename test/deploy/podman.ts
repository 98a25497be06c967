import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Runs podman (and the other tools the image test drives) as a user would from a shell, with a
 * containers.conf of the test's own (see writeContainersConf).
 */

export interface RunResult { stdout: string; stderr: string; ms: number }

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  /** Where stdout and stderr go besides the result (a build's long output, kept for a failure). */
  logFile?: string;
  /** Killed after this long: a hung build fails the test instead of the whole run. */
  timeoutMs?: number;
  /** Exit codes that are not a failure. */
  okCodes?: number[];
}

const TAIL_CHARS = 4_000;

/** Runs `command args` without a shell, stdin closed; rejects with the output's tail on a failing exit. */
export function run(command: string, args: string[], options: RunOptions = {}): Promise<RunResult & { code: number }> {
  const startedAt = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const log = options.logFile ? fs.createWriteStream(options.logFile, { flags: 'a' }) : null;
    log?.write(`\n$ ${command} ${args.join(' ')}\n`);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk; log?.write(chunk); });
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk; log?.write(chunk); });
    const timer = options.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), options.timeoutMs) : null;
    child.on('error', (error) => { if (timer) clearTimeout(timer); log?.end(); reject(error); });
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      log?.end();
      const ms = performance.now() - startedAt;
      const exit = code ?? -1;
      if (exit === 0 || options.okCodes?.includes(exit)) return resolve({ stdout, stderr, ms, code: exit });
      const how = signal ? `was killed (${signal}${timer && ms >= options.timeoutMs! ? `, after the ${options.timeoutMs} ms allowed` : ''})` : `exited ${exit}`;
      const tail = `${stdout}\n${stderr}`.trim().slice(-TAIL_CHARS);
      reject(new Error(`${command} ${args.slice(0, 3).join(' ')} … ${how}${options.logFile ? ` (full output: ${options.logFile})` : ''}:\n${tail}`));
    });
  });
}

/** The hard limit of `name` ("Max open files", "Max processes") of this process, from /proc/self/limits. */
function hardLimit(name: string): number | null {
  const line = fs.readFileSync('/proc/self/limits', 'utf8').split('\n').find((row) => row.startsWith(name));
  const hard = line?.slice(name.length).trim().split(/\s+/)[1];
  return hard && /^\d+$/.test(hard) ? Number(hard) : null;
}

/**
 * A containers.conf for every podman call of the test (CONTAINERS_CONF), for what a sandboxed VM
 * like this one refuses that a usual host allows:
 * - rootful podman raises each container's open-files and process limits above the caller's, which
 *   needs CAP_SYS_RESOURCE, withheld here: the limits are set to what this process has (a process
 *   limit equal to it was still refused, hence a lower one, ample for node and mapserv workers);
 * - crun refuses the hybrid cgroup layout (v1 controllers beside a v2 tree holding one) that this
 *   VM mounts; runc accepts it, so runc runs the containers.
 * Neither changes the image: they are how this machine runs containers, as a host's own
 * configuration would be.
 */
export function writeContainersConf(dir: string): string {
  const files = hardLimit('Max open files') ?? 1024;
  const processes = Math.min(hardLimit('Max processes') ?? 4096, 4096) - 1;
  const file = path.join(dir, 'containers.conf');
  fs.writeFileSync(file, [
    '[containers]',
    `default_ulimits = ["nofile=${files}:${files}", "nproc=${processes}:${processes}"]`,
    '[engine]',
    'runtime = "runc"',
    '',
  ].join('\n'));
  return file;
}

/** podman with the test's containers.conf. */
export function podmanRunner(containersConf: string, logFile: string) {
  const env = { ...process.env, CONTAINERS_CONF: containersConf };
  return (args: string[], options: Omit<RunOptions, 'env' | 'logFile'> = {}) => run('podman', args, { ...options, env, logFile });
}
