import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { eventually, freePort } from '../faults/harness.js';

/**
 * A redis-server of the test's own, on a free port, that keeps nothing on disk: the cluster mode's
 * tests stop and start it for real (Redis down, Redis back) without touching the machine's Redis,
 * and its pub/sub carries no other test's messages.
 */
export interface TestRedis {
  url: string;
  port: number;
  /** Ends it at once (SIGKILL), as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty, as a Redis that keeps nothing on disk comes back). */
  start(): Promise<void>;
}

/** A connection to 127.0.0.1:`port` that gives up at once (probes of the helpers below). */
export function probeConnection(port: number): Redis {
  const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1_000, commandTimeout: 1_000 });
  probe.on('error', () => {});
  return probe;
}

/**
 * What `ask` answers on a fresh probe connection, or undefined when the server does not answer
 * within 2 s: on a busy machine a probe's connect was seen to hang past a test's deadline.
 */
export async function probe<T>(port: number, ask: (connection: Redis) => Promise<T | undefined>): Promise<T | undefined> {
  const connection = probeConnection(port);
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      (async () => {
        await connection.connect();
        return ask(connection);
      })(),
      new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), 2_000); }),
    ]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
    connection.disconnect();
  }
}

const answers = (port: number) => probe(port, async (connection) => ((await connection.ping()) === 'PONG' ? true : undefined));

/** A server of its own; with `replicaOf`, a replica of the server on that port, attached before this resolves. */
export async function startTestRedis(options: { replicaOf?: number } = {}): Promise<TestRedis> {
  const port = await freePort();
  let child: ChildProcess | null = null;
  const replication = options.replicaOf === undefined ? [] : ['--replicaof', '127.0.0.1', String(options.replicaOf)];
  // A replica writes what its master sends to a file in its directory: one of its own.
  const dir = mkdtempSync(join(tmpdir(), 'test-redis-'));
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...replication], { stdio: 'ignore' });
    await eventually('the test Redis to answer', 10_000, () => answers(port));
    if (options.replicaOf !== undefined) await eventually('the replica to follow its master', 10_000, () => linkUp(port));
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
  process.once('exit', () => {
    (child as ChildProcess | null)?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  return { url: `redis://127.0.0.1:${port}`, port, kill, start };
}

const linkUp = (port: number) => probe(port, async (connection) => (/master_link_status:up/.test(await connection.info('replication')) ? true : undefined));

/** A Redis Sentinel of the test's own watching one master (quorum 1: it alone decides a failover, within about 2 s). */
export interface TestSentinel {
  port: number;
  /** The port of the server the sentinel names as `name`'s master now. */
  masterPort(): Promise<number | null>;
  kill(): Promise<void>;
}

export async function startTestSentinel(masterPort: number, name: string): Promise<TestSentinel> {
  const port = await freePort();
  // Sentinel rewrites its configuration file as it learns: a directory of its own.
  const dir = mkdtempSync(join(tmpdir(), 'test-sentinel-'));
  const configFile = join(dir, 'sentinel.conf');
  writeFileSync(configFile, [
    `port ${port}`, 'bind 127.0.0.1', `dir ${dir}`,
    `sentinel monitor ${name} 127.0.0.1 ${masterPort} 1`,
    `sentinel down-after-milliseconds ${name} 1000`,
    `sentinel failover-timeout ${name} 5000`,
    `sentinel parallel-syncs ${name} 1`,
  ].join('\n') + '\n');
  const child = spawn('redis-server', [configFile, '--sentinel'], { stdio: 'ignore' });
  process.once('exit', () => child.kill('SIGKILL'));
  const masterPortNow = async (): Promise<number | null> => (await probe(port, async (connection) => {
    const address = await connection.call('SENTINEL', 'get-master-addr-by-name', name) as [string, string] | null;
    return address ? Number(address[1]) : undefined;
  })) ?? null;
  await eventually('the sentinel to name the master', 10_000, async () => ((await masterPortNow()) === masterPort ? true : undefined));
  return {
    port,
    masterPort: masterPortNow,
    kill: async () => {
      if (child.exitCode === null) await new Promise<void>((resolve) => { child.once('exit', () => resolve()); child.kill('SIGKILL'); });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
