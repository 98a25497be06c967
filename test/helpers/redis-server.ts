import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { eventually, freePort } from '../faults/harness.js';

/**
 * A redis-server of the test's own, on a free port, that keeps nothing on disk: the cluster mode's
 * tests stop and start it for real (Redis down, Redis back) without touching the machine's Redis,
 * and its pub/sub carries no other test's messages.
 */
export interface TestRedis {
  url: string;
  /** Ends it at once (SIGKILL), as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty, as a Redis that keeps nothing on disk comes back). */
  start(): Promise<void>;
}

export async function startTestRedis(): Promise<TestRedis> {
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await eventually('the test Redis to answer', 10_000, async () => {
      const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => {});
      try {
        await probe.connect();
        return (await probe.ping()) === 'PONG' ? true : undefined;
      } catch {
        return undefined;
      } finally {
        probe.disconnect();
      }
    });
  };
  const kill = async () => {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill('SIGKILL');
    });
  };
  await start();
  process.once('exit', () => { (child as ChildProcess | null)?.kill('SIGKILL'); });
  return { url: `redis://127.0.0.1:${port}`, kill, start };
}
