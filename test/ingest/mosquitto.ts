import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { waitFor } from '../helpers/wait.js';

/**
 * A Mosquitto of the test's own, on a port of its choosing: for what the machine's broker cannot
 * show (a broker that comes up late, one with a password file, room for bursts queued while a
 * session is away). Skips name the Debian package when the program is missing.
 */

export const mosquittoMissing: string | false =
  spawnSync('mosquitto', ['-h'], { stdio: 'ignore' }).error ? 'mosquitto is not installed (Debian package mosquitto)' : false;

export interface BrokerOptions {
  /** user → password; none: anonymous access. */
  users?: Record<string, string>;
  maxQueuedMessages?: number;
  maxInflightMessages?: number;
}

export interface OwnBroker {
  port: number;
  url: string;
  stop(): Promise<void>;
}

export async function startMosquitto(port: number, options: BrokerOptions = {}): Promise<OwnBroker> {
  const dir = mkdtempSync(path.join(tmpdir(), 'mosquitto-test-'));
  // Started as root, Mosquitto drops to its own user before it reads the password file.
  chmodSync(dir, 0o755);
  const lines = [
    `listener ${port} 127.0.0.1`,
    'persistence false',
    `max_queued_messages ${options.maxQueuedMessages ?? 5000}`,
    `max_inflight_messages ${options.maxInflightMessages ?? 20}`,
  ];
  if (options.users) {
    const passwords = path.join(dir, 'passwords');
    writeFileSync(passwords, '');
    for (const [user, password] of Object.entries(options.users)) {
      const made = spawnSync('mosquitto_passwd', ['-b', passwords, user, password]);
      if (made.status !== 0) throw new Error(`mosquitto_passwd failed: ${made.stderr}`);
    }
    chmodSync(passwords, 0o644);
    lines.push('allow_anonymous false', `password_file ${passwords}`);
  } else {
    lines.push('allow_anonymous true');
  }
  const file = path.join(dir, 'mosquitto.conf');
  writeFileSync(file, `${lines.join('\n')}\n`);
  const child: ChildProcess = spawn('mosquitto', ['-c', file], { stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  child.stderr!.on('data', (chunk) => {
    output = (output + String(chunk)).slice(-4000);
  });
  let exited = false;
  child.on('exit', () => (exited = true));
  await waitFor(async () => {
    if (exited) throw new Error(`mosquitto exited: ${output}`);
    return accepts(port);
  }, { what: `mosquitto to listen on ${port}` });
  return {
    port,
    url: `tcp://127.0.0.1:${port}`,
    async stop() {
      if (!exited) {
        const gone = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await gone;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}
