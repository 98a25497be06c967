import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { processTree } from '../server-process.js';

/**
 * The baseline: nginx in front of a MapServer pool of its own. MapServer speaks FastCGI, so nginx's
 * counterpart of a kept-alive `proxy_pass` is `fastcgi_pass` to an `upstream` of the workers' unix
 * sockets with `keepalive` and `fastcgi_keep_conn on` (one FastCGI connection kept per worker, as
 * the service's pool keeps one). The workers are started exactly as src/ows/mapserver-pool.ts
 * starts the service's (`spawn-fcgi -n -s <socket> -M 0600 -- mapserv`, the libpq and
 * MAPSERVER_CONFIG_FILE environment), reading the same `mapserver.conf` and mapfiles.
 */

/** nginx in front of FastCGI sockets that exist already (workers of its own, or the service's). */
export interface NginxFrontOptions {
  dir: string;
  nginx: string;
  /** PG* and MAPSERVER_CONFIG_FILE: FastCGI params per request (libfcgi swaps a worker's environment for them). */
  env: Record<string, string>;
  /** Location name (a path segment) → map alias. */
  maps: Record<string, string>;
  /** nginx `worker_processes`. */
  nginxWorkers: string;
  /**
   * true: `keepalive 4` in the upstream and `fastcgi_keep_conn on` (FastCGI connections kept, as the
   * service keeps them); false: a FastCGI connection per request, closed by mapserv after its answer.
   */
  keepConn: boolean;
}

export interface NginxOptions extends NginxFrontOptions {
  workers: number;
  mapserv: string;
  spawnFcgi: string;
}

export interface NginxFront {
  /** `http://127.0.0.1:<port>`; `/<location>?…` reaches the map of that location. */
  url: string;
  nginxPid: number;
  config: string;
  stop(): Promise<void>;
}

export interface NginxBaseline extends NginxFront {
  workerPids: number[];
}

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function untilConnects(socketPath: string, child: ChildProcess, timeoutMs = 5000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(20)) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`spawn-fcgi for ${socketPath} exited (${child.exitCode ?? child.signalCode})`);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(socketPath);
      socket.once('connect', () => { socket.destroy(); resolve(true); });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
  }
  throw new Error(`no FastCGI socket at ${socketPath} within ${timeoutMs} ms`);
}

async function untilListens(url: string, child: ChildProcess, errorLog: string, timeoutMs = 5000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(20)) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`nginx exited (${child.exitCode ?? child.signalCode}): ${readLog(errorLog)}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await response.body?.cancel();
      return;
    } catch {
      // not listening yet
    }
  }
  throw new Error(`nginx not listening within ${timeoutMs} ms: ${readLog(errorLog)}`);
}

const readLog = (file: string) => { try { return readFileSync(file, 'utf8').slice(-2000); } catch { return '(no error log)'; } };

/** SIGTERM (nginx: fast shutdown), then SIGKILL of the process and what it started (nginx's workers). */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const tree = processTree(child.pid);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  if (await Promise.race([exited.then(() => true), sleep(3000).then(() => false)])) return;
  for (const pid of tree.reverse()) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
  await exited;
}

const nginxString = (value: string) => `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;

export function nginxConfig(opts: NginxFrontOptions, port: number, sockets: string[]): string {
  const params = Object.entries(opts.env).map(([name, value]) => `      fastcgi_param ${name} ${nginxString(value)};`).join('\n');
  const locations = Object.entries(opts.maps).map(([location, alias]) => `
    location = /${location} {
      fastcgi_pass mapserv;
      fastcgi_keep_conn ${opts.keepConn ? 'on' : 'off'};
      # Before the include: nginx sends both QUERY_STRING params, and mapserv (libfcgi) reads the first.
      fastcgi_param QUERY_STRING map=${alias}&$query_string;
      include /etc/nginx/fastcgi_params;
${params}
    }`).join('\n');
  // As root, nginx's workers would otherwise run as nobody and could not open the 0600 sockets.
  const user = process.getuid?.() === 0 ? 'user root;\n' : '';
  return `# generated by bench/ows/nginx.ts
${user}daemon off;
master_process on;
worker_processes ${opts.nginxWorkers};
error_log ${opts.dir}/error.log warn;
pid ${opts.dir}/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${opts.dir}/tmp/body;
  fastcgi_temp_path ${opts.dir}/tmp/fastcgi;
  proxy_temp_path ${opts.dir}/tmp/proxy;
  uwsgi_temp_path ${opts.dir}/tmp/uwsgi;
  scgi_temp_path ${opts.dir}/tmp/scgi;
  upstream mapserv {
${sockets.map((socket) => `    server unix:${socket};`).join('\n')}
${opts.keepConn ? '    keepalive 4;\n' : ''}  }
  server {
    listen 127.0.0.1:${port};
${locations}
  }
}
`;
}

/** nginx in front of the FastCGI `sockets` (which must accept connections already); `stop()` ends nginx only. */
export async function startNginxFront(opts: NginxFrontOptions, sockets: string[]): Promise<NginxFront> {
  mkdirSync(join(opts.dir, 'tmp'), { recursive: true });
  const port = await freePort();
  const config = nginxConfig(opts, port, sockets);
  const configFile = join(opts.dir, 'nginx.conf');
  writeFileSync(configFile, config);
  const nginx = spawn(opts.nginx, ['-c', configFile, '-p', opts.dir], { stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  try {
    await untilListens(`${url}/`, nginx, join(opts.dir, 'error.log'));
  } catch (error) {
    await stopChild(nginx);
    throw error;
  }
  return { url, nginxPid: nginx.pid!, config, stop: () => stopChild(nginx) };
}

/** Starts the MapServer pool and nginx in front of it; `stop()` ends both (also when starting fails half-way). */
export async function startNginxBaseline(opts: NginxOptions): Promise<NginxBaseline> {
  const children: ChildProcess[] = [];
  let front: NginxFront | null = null;
  const stop = async () => {
    await front?.stop();
    for (const child of [...children].reverse()) await stopChild(child);
  };
  try {
    mkdirSync(opts.dir, { recursive: true });
    const sockets: string[] = [];
    for (let i = 0; i < opts.workers; i++) {
      const socket = join(opts.dir, `nginx-mapserv-${i}.sock`);
      if (Buffer.byteLength(socket) > 107) throw new Error(`socket path too long: ${socket}`);
      rmSync(socket, { force: true });
      const child = spawn(opts.spawnFcgi, ['-n', '-s', socket, '-M', '0600', '--', opts.mapserv], {
        env: { ...opts.env, PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      children.push(child);
      await untilConnects(socket, child);
      sockets.push(socket);
    }
    front = await startNginxFront(opts, sockets);
    return { url: front.url, workerPids: children.map((child) => child.pid!), nginxPid: front.nginxPid, config: front.config, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
