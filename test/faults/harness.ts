import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect, type Server, type Socket } from 'node:net';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_EMAIL, DEV_PASSWORD, REALM, type TestApp } from '../helpers/test-app.js';
import { freePort } from '../helpers/ports.js';
import { nodeArgumentsFor } from '../helpers/programs.js';

export { freePort };

/**
 * What the fault tests need around the real program: free ports, the server as a child process
 * (its log lines collected), a TCP proxy that can cut the database off and bring it back, and
 * plain HTTP requests each on a connection of its own.
 */

/** Polls `check` until it returns a value other than undefined, or fails after `ms`. */
export async function eventually<T>(what: string, ms: number, check: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + ms;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    await sleep(100);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
}

/** A TCP proxy in front of PostgreSQL: `cut()` drops every connection and refuses new ones, `listen()` accepts again. */
export interface DatabaseProxy { port: number; url: string; listen(): Promise<void>; cut(): Promise<void>; close(): Promise<void> }

export async function databaseProxy(targetUrl: string, port?: number): Promise<DatabaseProxy> {
  const target = new URL(targetUrl);
  const listenPort = port ?? (await freePort());
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String(listenPort);
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const proxy: DatabaseProxy = {
    port: listenPort,
    url: url.toString(),
    listen: async () => {
      server = createServer((client) => {
        const upstream = connect(Number(target.port || 5432), target.hostname);
        track(client);
        track(upstream);
        client.pipe(upstream).pipe(client);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      await new Promise<void>((resolve) => server!.listen(listenPort, '127.0.0.1', resolve));
    },
    cut: async () => {
      const closing = server;
      server = null;
      for (const socket of sockets) socket.destroy();
      if (closing) await new Promise((resolve) => closing.close(resolve));
    },
    close: () => proxy.cut(),
  };
  return proxy;
}

export interface ChildServer {
  process: ChildProcess;
  apiUrl: string;
  idpUrl: string;
  /** Every log line so far, as written (JSON). */
  lines: string[];
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
  waitForLine(pattern: RegExp, ms?: number): Promise<string>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface ServerPorts { api: number; data: number; idp: number }

export async function serverPorts(): Promise<ServerPorts> {
  return { api: await freePort(), data: await freePort(), idp: await freePort() };
}

/** Runs the service (`src/server.ts <mode>`, default all: see nodeArgumentsFor) with the given database and ports. */
export function startServer(env: Record<string, string>, ports: ServerPorts, mode: 'all' | 'api' | 'data-api' | 'worker' = 'all'): ChildServer {
  const child = spawn(process.execPath, [...nodeArgumentsFor('src/server.ts'), mode], {
    env: {
      PATH: process.env['PATH'],
      HOST: '127.0.0.1',
      PORT: String(ports.api),
      DATA_PORT: String(ports.data),
      IDP_PORT: String(ports.idp),
      IDP_URL: `http://127.0.0.1:${ports.idp}`,
      BASE_URL: `http://127.0.0.1:${ports.api}`,
      LOG_LEVEL: 'info',
      // Several servers of one test run would all take the default MQTT port; a test that needs MQTT sets one.
      MQTT_PORT: 'off',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  const onData = (chunk: Buffer, rest: { text: string }) => {
    rest.text += chunk.toString();
    const parts = rest.text.split('\n');
    rest.text = parts.pop()!;
    for (const line of parts) {
      lines.push(line);
      for (const waiter of [...waiters]) {
        if (waiter.pattern.test(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    }
  };
  const out = { text: '' };
  const err = { text: '' };
  child.stdout!.on('data', (chunk: Buffer) => onData(chunk, out));
  child.stderr!.on('data', (chunk: Buffer) => onData(chunk, err));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    process: child,
    apiUrl: `http://127.0.0.1:${ports.api}`,
    idpUrl: `http://127.0.0.1:${ports.idp}`,
    lines,
    exited,
    waitForLine: (pattern, ms = 45_000) => {
      const seen = lines.find((line) => pattern.test(line));
      if (seen) return Promise.resolve(seen);
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no log line matching ${pattern} within ${ms} ms; log:\n${lines.slice(-20).join('\n')}`)), ms);
        const ended = () => { clearTimeout(timer); reject(new Error(`the server exited before logging ${pattern}; log:\n${lines.slice(-20).join('\n')}`)); };
        child.once('exit', ended);
        waiters.push({ pattern, resolve: (line) => { clearTimeout(timer); child.off('exit', ended); resolve(line); } });
      });
    },
    kill: async (signal = 'SIGKILL') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/**
 * `startServer` on fresh ports, resolved once its /health/ready answers 200. A free port can be taken
 * by another test's process between the probe and the child's listen: a child that exits on
 * EADDRINUSE is started again on other ports (three tries); any other exit, or no readiness within
 * `ms`, fails at once with the child's last log lines instead of polling a dead process.
 */
export async function startReadyServer(env: Record<string, string>, mode: 'all' | 'api' | 'data-api' | 'worker' = 'all', ms = 150_000): Promise<ChildServer> {
  for (let attempt = 1; ; attempt += 1) {
    const server = startServer(env, await serverPorts(), mode);
    let exitCode: number | null | undefined;
    void server.exited.then((code) => { exitCode = code; });
    const deadline = Date.now() + ms;
    while (exitCode === undefined && Date.now() < deadline) {
      const ready = await request(`${server.apiUrl}/health/ready`).catch(() => null);
      if (ready?.status === 200) return server;
      await sleep(100);
    }
    const log = server.lines.slice(-20).join('\n');
    if (exitCode === undefined) {
      await server.kill();
      throw new Error(`the server was not ready within ${ms} ms; its log:\n${log}`);
    }
    if (attempt === 3 || !server.lines.some((line) => line.includes('EADDRINUSE'))) {
      throw new Error(`the server exited (${exitCode}) before it was ready; its log:\n${log}`);
    }
  }
}

export async function adminToken(idpUrl: string): Promise<string> {
  const response = await fetch(`${idpUrl}/realms/${REALM}/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', client_id: 'api-access', username: ADMIN_EMAIL, password: DEV_PASSWORD }),
  });
  if (!response.ok) throw new Error(`token request failed: ${response.status}`);
  return ((await response.json()) as { access_token: string }).access_token;
}

export interface Answer { status: number; headers: http.IncomingHttpHeaders; body: any }

/** One request on a connection of its own (no keep-alive pool), so that each stands alone. */
export function request(url: string, options: { method?: string; token?: string; body?: unknown; headers?: Record<string, string>; onConnect?: () => void } = {}): Promise<Answer> {
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: options.method ?? 'GET',
      agent: false,
      headers: {
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
        ...(payload ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) } : {}),
        ...options.headers,
      },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => { text += chunk; });
      res.on('end', () => {
        let body: unknown = text;
        try { body = text ? JSON.parse(text) : undefined; } catch { /* not JSON: kept as text */ }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (options.onConnect) req.once('socket', (socket) => socket.once('connect', options.onConnect!));
    req.end(payload);
  });
}

/**
 * A second data-API process (`data-api` mode) on the test app's PostgreSQL database, trusting the
 * test's identity provider: another gateway of the same deployment. Resolves once it is ready.
 */
export async function startDataApiBeside(t: TestApp, env: Record<string, string> = {}): Promise<{ server: ChildServer; url: string }> {
  const ports = await serverPorts();
  const url = `http://127.0.0.1:${ports.data}`;
  const server = startServer({
    DATABASE_URL: t.ctx.databaseUrl!, DEV_IDP: 'off', OIDC_ISSUER: `${t.idpUrl}/realms/${REALM}`,
    DATA_API_URL: url, LOG_LEVEL: 'warn', ...env,
  }, ports, 'data-api');
  try {
    await eventually('the second data API to be ready', 30_000, async () => ((await request(`${url}/health/ready`)).status === 200 ? true : undefined));
  } catch (error) {
    // Nobody else holds the process yet: left running, its pipes would keep the test process alive for ever.
    await server.kill();
    throw error;
  }
  return { server, url };
}
