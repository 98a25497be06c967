import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request } from '../faults/harness.js';
import { freePorts } from '../helpers/ports.js';
import { ADMIN_EMAIL, DEV_PASSWORD, REALM } from '../helpers/test-app.js';
import { waitFor } from '../helpers/wait.js';
import { createDatabaseBeside, type DatabaseBeside } from '../helpers/database-beside.js';
import { startNginx, type Nginx } from './nginx.js';
import { REPOSITORY } from '../helpers/repository.js';

/**
 * N replicas of the compiled service (`node dist/server.js all`) on one fresh PostgreSQL
 * database, behind Debian's nginx, with the development identity provider as a process of its
 * own: what an operator runs, as real processes. The cluster test drives it; a benchmark can
 * start it with 1, 2 or 3 replicas. Every process logs to a file in the run's folder.
 */

const ROOT = REPOSITORY;
const SERVER = path.join(ROOT, 'dist', 'server.js');

export interface ClusterOptions {
  replicas: number;
  /** Any database URL of the PostgreSQL server to create the run's database on. */
  serverUrl: string;
  nginxBinary: string;
  /** More environment for every replica (PIPELINE_RECONCILE_MS, say). */
  env?: Record<string, string>;
}

export interface ReplicaPorts { api: number; data: number; mqtt: number }

export interface Replica {
  index: number;
  ports: ReplicaPorts;
  logFile: string;
  /** The running process, or null while stopped. */
  process: ChildProcess | null;
}

export interface Cluster {
  dir: string;
  database: DatabaseBeside;
  nginx: Nginx;
  /** nginx's public URLs: the management API, the data API, and MQTT over WebSocket. */
  apiUrl: string;
  dataUrl: string;
  mqttUrl: string;
  idpUrl: string;
  replicas: Replica[];
  token(email?: string): Promise<string>;
  /** Starts a stopped replica on its ports and waits until both its listeners are ready. */
  start(index: number): Promise<void>;
  /** SIGTERM (a graceful stop) or SIGKILL (a crash); resolves once the process is gone. */
  stop(index: number, signal: 'SIGTERM' | 'SIGKILL'): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The replicas' process ids (for lease holders found through PostgreSQL). */
  pidOf(index: number): number | null;
  /** The last lines of every log, for a failure message. */
  logTails(lines?: number): string;
  close(): Promise<void>;
}

function tail(file: string, lines: number): string {
  if (!existsSync(file)) return '(no log)';
  return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
}

/** Runs `node dist/server.js <mode>` with its output appended to `logFile` (kept after a kill -9). */
function spawnServer(mode: 'all' | 'idp', env: Record<string, string>, logFile: string): ChildProcess {
  const fd = openSync(logFile, 'a');
  try {
    return spawn(process.execPath, [SERVER, mode], { cwd: ROOT, env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', fd, fd] });
  } finally {
    closeSync(fd); // the child holds its own copy
  }
}

async function waitReady(child: ChildProcess, urls: string[], logFile: string, what: string): Promise<void> {
  await waitFor(async () => {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${tail(logFile, 20)}`);
    }
    for (const url of urls) {
      const answer = await request(`${url}/health/ready`).catch(() => null);
      if (answer?.status !== 200) return undefined;
    }
    return true;
  }, { what: `${what} to be ready`, timeoutMs: 60_000, intervalMs: 50 });
}

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  if (!existsSync(SERVER)) throw new Error(`${SERVER} is missing: run npm run build`);
  const dir = mkdtempSync(path.join(tmpdir(), 'cluster-'));
  const [nginxApi, nginxData, nginxIdp, idpPort] = await freePorts(4);
  const apiUrl = `http://127.0.0.1:${nginxApi}`;
  const dataUrl = `http://127.0.0.1:${nginxData}`;
  // The issuer is the public (nginx) URL: tokens name it, and the replicas fetch its keys there.
  const idpUrl = `http://127.0.0.1:${nginxIdp}`;
  const idpOwnUrl = `http://127.0.0.1:${idpPort}`;
  const replicas: Replica[] = [];
  for (let index = 0; index < options.replicas; index++) {
    const [api, data, mqtt] = await freePorts(3);
    replicas.push({ index, ports: { api: api!, data: data!, mqtt: mqtt! }, logFile: path.join(dir, `replica-${index}.log`), process: null });
  }

  let database: DatabaseBeside | null = null;
  let idp: ChildProcess | null = null;
  let nginx: Nginx | null = null;
  const idpLog = path.join(dir, 'idp.log');
  const secretsKey = randomBytes(32).toString('base64');

  const replicaEnv = (replica: Replica): Record<string, string> => ({
    HOST: '127.0.0.1',
    PORT: String(replica.ports.api),
    DATA_PORT: String(replica.ports.data),
    MQTT_PORT: String(replica.ports.mqtt),
    // Links in answers name the public (nginx) URLs, as clients reach the service.
    BASE_URL: apiUrl,
    DATA_API_URL: dataUrl,
    DATABASE_URL: database!.url,
    DEV_IDP: 'off',
    OIDC_ISSUER: `${idpUrl}/realms/${REALM}`,
    LOG_LEVEL: 'warn',
    // One key for every replica, kept apart from the data, as an operator sets it.
    SECRETS_KEY: secretsKey,
    ...options.env,
  });

  const start = async (index: number) => {
    const replica = replicas[index]!;
    if (replica.process) throw new Error(`replica ${index} is running`);
    const child = spawnServer('all', replicaEnv(replica), replica.logFile);
    replica.process = child;
    child.once('exit', () => { if (replica.process === child) replica.process = null; });
    await waitReady(child, [`http://127.0.0.1:${replica.ports.api}`, `http://127.0.0.1:${replica.ports.data}`], replica.logFile, `replica ${index}`);
  };

  const stop: Cluster['stop'] = async (index, signal) => {
    const child = replicas[index]!.process;
    if (!child) throw new Error(`replica ${index} is not running`);
    child.kill(signal);
    return exitOf(child);
  };

  const logTails = (lines = 15) => [
    ...replicas.map((replica) => `--- replica ${replica.index} (${replica.logFile})\n${tail(replica.logFile, lines)}`),
    `--- idp\n${tail(idpLog, lines)}`,
    `--- nginx error log\n${nginx?.errorTail(lines) ?? '(not started)'}`,
  ].join('\n');

  const close = async () => {
    const running = [...replicas.map((replica) => replica.process), idp].filter((child): child is ChildProcess => child !== null);
    for (const child of running) child.kill('SIGTERM');
    const killer = setTimeout(() => { for (const child of running) child.kill('SIGKILL'); }, 5_000);
    await Promise.all(running.map(exitOf));
    clearTimeout(killer);
    process.off('exit', killLeftovers);
    await nginx?.stop();
    await database?.drop();
    if (!process.env['CLUSTER_KEEP_DIR']) rmSync(dir, { recursive: true, force: true });
  };

  // Should this process end without close() (a crash, an uncaught error), no replica outlives it:
  // their output goes to files, so nothing else would stop them.
  const killLeftovers = () => {
    for (const child of [...replicas.map((replica) => replica.process), idp]) child?.kill('SIGKILL');
    nginx?.terminate(); // its master stops its workers
  };
  process.once('exit', killLeftovers);

  try {
    database = await createDatabaseBeside(options.serverUrl, 'cluster');
    idp = spawnServer('idp', {
      NODE_ENV: 'development', DEV_IDP: 'on', HOST: '127.0.0.1', IDP_PORT: String(idpPort), IDP_URL: idpUrl, LOG_LEVEL: 'warn',
      // Tokens outlive a run (a benchmark's too): the default 300 s would expire under load.
      DEV_IDP_TTL: '3600',
    }, idpLog);
    await waitFor(async () => {
      if (idp!.exitCode !== null) throw new Error(`the identity provider exited:\n${tail(idpLog, 20)}`);
      return (await request(`${idpOwnUrl}/realms/${REALM}/.well-known/openid-configuration`).catch(() => null))?.status === 200 ? true : undefined;
    }, { what: 'the identity provider', timeoutMs: 30_000, intervalMs: 50 });
    nginx = await startNginx(options.nginxBinary, dir, { api: nginxApi!, data: nginxData!, idp: nginxIdp!, idpTarget: idpPort! }, replicas.map((replica) => replica.ports));
    // The first replica migrates and bootstraps the fresh database alone; the others then start together.
    await start(0);
    await Promise.all(replicas.slice(1).map((replica) => start(replica.index)));
  } catch (error) {
    const logs = logTails();
    await close().catch(() => undefined);
    throw new Error(`${(error as Error).message}\n${logs}`);
  }

  const token = async (email = ADMIN_EMAIL) => {
    const response = await fetch(`${idpUrl}/realms/${REALM}/protocol/openid-connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', client_id: 'api-access', username: email, password: DEV_PASSWORD }),
    });
    if (!response.ok) throw new Error(`token request failed: ${response.status} ${await response.text()}`);
    return ((await response.json()) as { access_token: string }).access_token;
  };

  return {
    dir, database: database!, nginx: nginx!, apiUrl, dataUrl, mqttUrl: `${dataUrl.replace(/^http/, 'ws')}/mqtt`, idpUrl, replicas,
    token, start, stop, logTails, close,
    pidOf: (index) => replicas[index]!.process?.pid ?? null,
  };
}
