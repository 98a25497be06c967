// Supervises a fixed pool of FastCGI MapServer processes (never one process per request).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { FastCgiConnection, type CgiResponse } from './fastcgi.js';

export type { CgiResponse } from './fastcgi.js';

export interface MapServerPoolOptions {
  size: number;
  runtimeDir: string;
  mapserv: string;
  spawnFcgi: string;
  env: Record<string, string>;
  requestTimeoutMs: number;
  maxQueue: number;
  /** Requests of one caller handed to MapServer at once (default: no limit); the rest wait in its own line. */
  maxPerCaller?: number;
  /** How long a request may wait in its caller's line before it fails with MapServerQueueTimeoutError (default: no limit). */
  queueTimeoutMs?: number;
  log: {
    info(obj: object, msg: string): void;
    warn(obj: object, msg: string): void;
    error(obj: object, msg: string): void;
  };
}

export class MapServerBusyError extends Error {
  override name = 'MapServerBusyError';
}
export class MapServerTimeoutError extends Error {
  override name = 'MapServerTimeoutError';
}
export class MapServerFailedError extends Error {
  override name = 'MapServerFailedError';
}
export class MapServerQueueTimeoutError extends Error {
  override name = 'MapServerQueueTimeoutError';
}

function findOnPath(name: string, override: string | undefined): string | null {
  const candidates = override ? [override] : (process.env.PATH ?? '').split(path.delimiter).filter(Boolean).map((d) => path.join(d, name));
  for (const c of candidates) {
    try {
      fs.accessSync(c, fs.constants.X_OK);
      return c;
    } catch {
      /* try the next one */
    }
  }
  return null;
}

export function locateMapServer(): { mapserv: string; spawnFcgi: string } | null {
  const mapserv = findOnPath('mapserv', process.env.MAPSERV_PATH);
  const spawnFcgi = findOnPath('spawn-fcgi', process.env.SPAWN_FCGI_PATH);
  return mapserv && spawnFcgi ? { mapserv, spawnFcgi } : null;
}

const MIN_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 5000;
const STOP_GRACE_MS = 2000;
// spawn-fcgi binds the socket a few ms after fork and listens a moment later; a worker is ready once
// a connection to it is accepted into the socket's backlog (mapserv takes it once it has exec'd).
// The wait is a time, not a count of tries: on a machine busy with other work a process start can
// take a second or more, and a hundred 10 ms tries ran out before a worker that was merely slow
// to start listened (and its pool failed to start).
const READY_WITHIN_MS = 15_000;
const READY_RETRY_MS = 10;
/**
 * Requests handed to one worker at once: the one it serves and the next, each on a connection of
 * its own, the next waiting in the socket's backlog. mapserv takes it the moment it has answered
 * (it serves connections one after another), so it never idles while Node hands over the next.
 * Kept connections cannot do this: mapserv would serve the kept one until it closes.
 */
const DEPTH = 2;
/**
 * libfcgi drops a unix-socket connection that brings nothing to read within 2 s of its accept (and
 * the worker waits those 2 s): a spare connection is written to only while younger than this, so
 * that its request arrives well before (the accept is never before the connect). An older one is
 * closed, which mapserv skips at once.
 */
const SPARE_MAX_AGE_MS = 1000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How often a request whose connection was refused (nothing sent) is tried again, READY_RETRY_MS apart. */
const CONNECT_ATTEMPTS = 50;
const notConnected = (error: Error) => ['ECONNREFUSED', 'ENOENT', 'EAGAIN'].includes((error as NodeJS.ErrnoException).code ?? '');

// Last resort so workers never outlive Node if stop() is skipped; 'exit' handlers must be synchronous.
const liveChildren = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of liveChildren) child.kill('SIGKILL');
});

interface Job {
  params: Record<string, string>;
  body?: Buffer;
  timeoutMs: number;
  /** Whose request this is: the fair share is counted per caller. */
  caller: string;
  /** Runs while the job waits in its caller's line. */
  queueTimer: NodeJS.Timeout | null;
  waiting: boolean;
  /** Connections refused before anything was sent (see settle). */
  connectAttempts: number;
  resolve(r: CgiResponse): void;
  reject(e: Error): void;
}

/** A request handed to a worker, on its own connection; its timer runs while the worker serves it. */
interface InFlight {
  job: Job;
  conn: FastCgiConnection;
  timer: NodeJS.Timeout | null;
}

interface Worker {
  index: number;
  socketPath: string;
  child: ChildProcess | null;
  ready: boolean;
  /** In the order mapserv takes them: the first is being served, the others wait in its backlog. */
  jobs: InFlight[];
  /**
   * A connection opened behind the worker's requests, without a request yet: the next request
   * dispatched to the worker is written to it at once. mapserv, done with the requests before it,
   * accepts it and waits for that request, so it starts the moment Node writes it: no connect
   * (and its turn of Node's event loop) between one request's end and the next one's start.
   */
  spare: FastCgiConnection | null;
  spareOpenedAt: number;
  /**
   * Closes a spare no request came for: mapserv, having accepted it, would otherwise sit on it
   * until libfcgi gives up (2 s), while whatever else connects to the worker's socket waits.
   */
  spareExpiry: NodeJS.Timeout | null;
  connects: number;
  backoffMs: number;
  respawnTimer: NodeJS.Timeout | null;
  exited: Promise<void>;
  /** Set by reload(): on exit, spawn a replacement at once instead of after a back-off. */
  replacing: boolean;
}

/**
 * Waiting requests, one line per caller, served round-robin: the caller whose turn it is gives its
 * oldest request, unless it already has its share running while another caller waits. So one
 * caller's backlog never delays another caller's request by more than the requests already
 * running, and a caller alone still has every idle worker.
 */
class FairQueue {
  private readonly lines = new Map<string, Job[]>();
  /** Callers with waiting jobs, in turn order. */
  private turns: string[] = [];
  private readonly running = new Map<string, number>();
  size = 0;

  constructor(private readonly maxPerCaller: number) {}

  push(job: Job, front = false): void {
    const line = this.lines.get(job.caller);
    if (line) {
      if (front) line.unshift(job);
      else line.push(job);
    } else {
      this.lines.set(job.caller, [job]);
      if (front) this.turns.unshift(job.caller);
      else this.turns.push(job.caller);
    }
    this.size += 1;
    job.waiting = true;
  }

  /** Takes `job` out of its line (it timed out, or its client went away); false when it is no longer waiting. */
  remove(job: Job): boolean {
    const line = this.lines.get(job.caller);
    const at = line?.indexOf(job) ?? -1;
    if (at < 0) return false;
    line!.splice(at, 1);
    this.size -= 1;
    job.waiting = false;
    if (line!.length === 0) this.drop(job.caller);
    return true;
  }

  /**
   * The next job to hand to MapServer, counted as running: the oldest of the first caller in turn
   * that has less than its share running. With `beyondShare` (an idle worker: the share is
   * work-conserving), the first caller in turn when every waiting caller has its share running.
   * Undefined when nothing may go.
   */
  next(beyondShare = false): Job | undefined {
    const within = this.turns.findIndex((caller) => (this.running.get(caller) ?? 0) < this.maxPerCaller);
    const i = within >= 0 ? within : beyondShare && this.turns.length > 0 ? 0 : -1;
    if (i < 0) return undefined;
    const caller = this.turns[i]!;
    const line = this.lines.get(caller)!;
    const job = line.shift()!;
    this.size -= 1;
    job.waiting = false;
    // Its turn is used: it goes to the back, or out when it has nothing more waiting.
    this.turns.splice(i, 1);
    if (line.length > 0) this.turns.push(caller);
    else this.lines.delete(caller);
    this.running.set(caller, (this.running.get(caller) ?? 0) + 1);
    return job;
  }

  /** A job handed out by next() finished (or went back to its line). */
  done(job: Job): void {
    const left = (this.running.get(job.caller) ?? 1) - 1;
    if (left > 0) this.running.set(job.caller, left);
    else this.running.delete(job.caller);
  }

  drain(): Job[] {
    const all = [...this.lines.values()].flat();
    for (const job of all) job.waiting = false;
    this.lines.clear();
    this.turns = [];
    this.size = 0;
    return all;
  }

  private drop(caller: string): void {
    this.lines.delete(caller);
    this.turns = this.turns.filter((name) => name !== caller);
  }
}

export class MapServerPool {
  private readonly workers: Worker[] = [];
  private readonly queue: FairQueue;
  private stopping: Promise<void> | null = null;

  constructor(private readonly o: MapServerPoolOptions) {
    this.queue = new FairQueue(o.maxPerCaller ?? Number.POSITIVE_INFINITY);
  }

  /** FastCGI connections opened over all workers: one per request. */
  get connects(): number {
    return this.workers.reduce((n, w) => n + w.connects, 0);
  }

  async start(): Promise<void> {
    fs.mkdirSync(this.o.runtimeDir, { recursive: true });
    for (let i = 0; i < this.o.size; i++) {
      this.workers.push({
        index: i,
        socketPath: path.join(this.o.runtimeDir, `mapserv-${i}.sock`),
        child: null,
        ready: false,
        jobs: [],
        spare: null,
        spareOpenedAt: 0,
        spareExpiry: null,
        connects: 0,
        backoffMs: MIN_BACKOFF_MS,
        respawnTimer: null,
        exited: Promise.resolve(),
        replacing: false,
      });
    }
    const started = await Promise.all(this.workers.map((w) => this.spawnWorker(w)));
    if (!started.every(Boolean)) {
      await this.stop();
      throw new MapServerFailedError('MapServer workers did not start');
    }
  }

  /** Requests waiting in the callers' lines (for tests and health checks). */
  get waiting(): number {
    return this.queue.size;
  }

  pids(): number[] {
    return this.workers.flatMap((w) => (w.child?.pid !== undefined ? [w.child.pid] : []));
  }

  /**
   * timeoutMs overrides requestTimeoutMs for this request (e.g. a generous one for big GetMaps);
   * `caller` names whose request it is, for the fair share (maxPerCaller, round-robin).
   */
  run(params: Record<string, string>, body?: Buffer, timeoutMs = this.o.requestTimeoutMs, signal?: AbortSignal, caller = ''): Promise<CgiResponse> {
    if (this.stopping) return Promise.reject(new MapServerFailedError('MapServer pool is stopped'));
    return new Promise((resolve, reject) => {
      const job: Job = { params, body, timeoutMs, caller, queueTimer: null, waiting: false, connectAttempts: 0, resolve, reject };
      this.queue.push(job);
      this.pump();
      if (job.waiting && this.queue.size > this.o.maxQueue && this.queue.remove(job)) {
        reject(new MapServerBusyError('MapServer queue is full'));
        return;
      }
      const leave = (error: Error) => {
        if (!this.queue.remove(job)) return;
        if (job.queueTimer) clearTimeout(job.queueTimer);
        job.queueTimer = null;
        reject(error);
      };
      // A request whose client has gone is not drawn: under load, the queue holds only wanted work.
      signal?.addEventListener('abort', () => leave(new MapServerFailedError('The client went away before MapServer took the request')), { once: true });
      if (this.o.queueTimeoutMs !== undefined && job.waiting) {
        const waitMs = this.o.queueTimeoutMs;
        job.queueTimer = setTimeout(() => leave(new MapServerQueueTimeoutError(`waited ${waitMs} ms for MapServer`)), waitMs);
      }
    });
  }

  /**
   * A mapserv process reads its config file (MAPS aliases, ENV) once, at its first request,
   * and keeps it; config changes need fresh processes (mapfile edits do not: mapfiles are
   * loaded per request). Workers are replaced one at a time, each after finishing its
   * current request, so no request fails.
   */
  async reload(): Promise<void> {
    for (const w of this.workers) {
      if (this.stopping) return;
      w.ready = false; // takes no new work; queued requests go to the others
      while (w.jobs.length > 0) await sleep(5);
      const child = w.child;
      if (!child || child.exitCode !== null) continue;
      w.replacing = true;
      child.kill('SIGKILL'); // idle, so nothing is lost
      await w.exited;
      while (!this.stopping && !w.ready) await sleep(5);
    }
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    for (const job of this.queue.drain()) {
      if (job.queueTimer) clearTimeout(job.queueTimer);
      job.reject(new MapServerFailedError('MapServer pool is stopping'));
    }
    await Promise.all(
      this.workers.map(async (w) => {
        if (w.respawnTimer) clearTimeout(w.respawnTimer);
        // A worker reading its spare connection hears the SIGTERM only once it is closed.
        this.dropSpare(w);
        const child = w.child;
        if (child && child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          // mapserv's SIGTERM handler only flags "exit after the current request" and is one-shot,
          // so an idle worker needs a second SIGTERM to actually die.
          if (w.jobs.length === 0) setTimeout(() => child.kill('SIGTERM'), 50).unref();
          const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
          await w.exited;
          clearTimeout(timer);
        }
        for (const flight of w.jobs.splice(0)) flight.conn.destroy();
        fs.rmSync(w.socketPath, { force: true });
      }),
    );
  }

  /** Resolves true once the worker accepts FastCGI connections. */
  private async spawnWorker(w: Worker): Promise<boolean> {
    w.respawnTimer = null;
    if (this.stopping) return false;
    fs.rmSync(w.socketPath, { force: true });
    const child = spawn(this.o.spawnFcgi, ['-n', '-s', w.socketPath, '-M', '0600', '--', this.o.mapserv], {
      env: { ...this.o.env, PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    w.child = child;
    liveChildren.add(child);
    w.ready = false;
    w.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.onExit(w, child, code, signal);
        resolve();
      });
      child.once('error', (err) => {
        this.o.log.error({ worker: w.index, err: err.message }, 'MapServer worker could not be spawned');
        if (child.pid === undefined) {
          this.onExit(w, child, null, null);
          resolve();
        }
      });
    });
    child.stderr?.on('data', (d: Buffer) => this.o.log.warn({ worker: w.index, pid: child.pid }, d.toString().trim()));
    this.o.log.info({ worker: w.index, pid: child.pid, socket: w.socketPath }, 'MapServer worker spawned');

    const deadline = performance.now() + READY_WITHIN_MS;
    while (performance.now() < deadline) {
      if (w.child !== child || child.exitCode !== null || child.signalCode !== null) return false;
      if (await this.listens(w, child)) {
        w.ready = true;
        this.pump();
        return true;
      }
      await sleep(READY_RETRY_MS);
    }
    this.o.log.error({ worker: w.index, pid: child.pid }, 'MapServer worker does not accept connections; killing it');
    child.kill('SIGKILL');
    return false;
  }

  private onExit(w: Worker, child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    liveChildren.delete(child);
    // 'error' and 'exit' may both fire for one child: handle it once.
    if (w.child !== child) return;
    w.child = null;
    w.ready = false;
    this.dropSpare(w);
    this.failServed(w, new MapServerFailedError(`MapServer worker exited (code ${code}, signal ${signal})`));
    const log = this.stopping || w.replacing ? this.o.log.info : this.o.log.warn;
    log.call(this.o.log, { worker: w.index, pid: child.pid, code, signal }, 'MapServer worker exited');
    if (this.stopping) return;
    const delay = w.replacing ? 0 : w.backoffMs;
    if (!w.replacing) w.backoffMs = Math.min(w.backoffMs * 2, MAX_BACKOFF_MS);
    w.replacing = false;
    this.o.log.info({ worker: w.index, delayMs: delay }, 'MapServer worker respawn scheduled');
    w.respawnTimer = setTimeout(() => void this.spawnWorker(w), delay);
  }

  /** Hands waiting requests to free places, idle workers first, then workers' backlogs. */
  private pump(): void {
    while (this.queue.size > 0) {
      const idle = this.workers.find((w) => w.ready && w.jobs.length === 0);
      const worker = idle ?? this.workers.find((w) => w.ready && w.jobs.length < DEPTH);
      if (!worker) return;
      // An idle worker takes any waiting request, so none idles while one waits (the share is
      // work-conserving); a place in a busy worker's backlog goes only to a caller within its share.
      const job = this.queue.next(worker === idle);
      if (!job) return;
      if (job.queueTimer) clearTimeout(job.queueTimer);
      job.queueTimer = null;
      this.dispatch(worker, job);
    }
  }

  private dispatch(w: Worker, job: Job): void {
    if (w.spare && performance.now() - w.spareOpenedAt >= SPARE_MAX_AGE_MS) this.dropSpare(w);
    const conn = w.spare ?? new FastCgiConnection(w.socketPath, false);
    w.spare = null;
    if (w.spareExpiry) clearTimeout(w.spareExpiry);
    w.spareExpiry = null;
    const flight: InFlight = { job, conn, timer: null };
    w.jobs.push(flight);
    w.connects++;
    if (w.jobs.length === 1) this.startTimer(w, flight);
    flight.conn.request(job.params, job.body).then(
      (res) => this.settle(w, flight, res),
      (err: Error) => this.settle(w, flight, err),
    );
    // Opened after the request's own connection, so that it waits behind it.
    this.openSpare(w);
  }

  /**
   * The socket file exists from spawn-fcgi's bind(), a moment before its listen(): a connection
   * opened in between is refused, and a request written behind one would be taken for the request
   * the worker serves. So a worker counts as ready once a connection is accepted, and that
   * connection becomes its first spare.
   */
  private async listens(w: Worker, child: ChildProcess): Promise<boolean> {
    if (!fs.existsSync(w.socketPath)) return false;
    const conn = new FastCgiConnection(w.socketPath, false);
    const openedAt = performance.now();
    const accepted = await conn.connect().then(() => true, () => false);
    if (!accepted || w.child !== child || this.stopping) {
      conn.destroy();
      return false;
    }
    this.keepSpare(w, conn, openedAt);
    return true;
  }

  private openSpare(w: Worker): void {
    if (w.spare || !w.ready || this.stopping) return;
    const conn = new FastCgiConnection(w.socketPath, false);
    conn.preconnect();
    this.keepSpare(w, conn, performance.now());
  }

  private keepSpare(w: Worker, conn: FastCgiConnection, openedAt: number): void {
    w.spare = conn;
    w.spareOpenedAt = openedAt;
    w.spareExpiry = setTimeout(() => this.dropSpare(w), SPARE_MAX_AGE_MS);
    w.spareExpiry.unref();
  }

  private dropSpare(w: Worker): void {
    w.spare?.destroy();
    w.spare = null;
    if (w.spareExpiry) clearTimeout(w.spareExpiry);
    w.spareExpiry = null;
  }

  /** The time a request may take runs from when its worker takes it, not while it waits behind another. */
  private startTimer(w: Worker, flight: InFlight): void {
    const child = w.child;
    flight.timer = setTimeout(() => {
      if (w.jobs[0] !== flight) return;
      w.ready = false;
      this.failServed(w, new MapServerTimeoutError(`MapServer did not answer within ${flight.job.timeoutMs} ms`));
      // A stuck MapServer must not hold a slot: kill it, the exit handler respawns it.
      child?.kill('SIGKILL');
    }, flight.job.timeoutMs);
  }

  private settle(w: Worker, flight: InFlight, outcome: CgiResponse | Error): void {
    const at = w.jobs.indexOf(flight);
    if (at < 0) return; // already failed with its worker
    if (outcome instanceof Error && notConnected(outcome) && flight.job.connectAttempts < CONNECT_ATTEMPTS) {
      // Refused (its worker died a moment ago, its exit not yet seen), the connection carried
      // nothing to MapServer, so the request goes back to the front of its line.
      w.jobs.splice(at, 1);
      if (flight.timer) clearTimeout(flight.timer);
      flight.conn.destroy();
      // Refused, it carried no request: `connects` counts the connections that did.
      w.connects -= 1;
      this.queue.done(flight.job);
      flight.job.connectAttempts += 1;
      this.queue.push(flight.job, true);
      const next = w.jobs[0];
      if (next && !next.timer) this.startTimer(w, next);
      setTimeout(() => this.pump(), READY_RETRY_MS).unref();
      return;
    }
    if (outcome instanceof Error) {
      // A broken exchange (the worker died, or spoke nonsense) leaves it in an unknown state:
      // a fresh process is the known-good one.
      w.ready = false;
      this.failServed(w, new MapServerFailedError(`MapServer request failed: ${outcome.message}`));
      w.child?.kill('SIGKILL');
      return;
    }
    w.jobs.splice(at, 1);
    if (flight.timer) clearTimeout(flight.timer);
    flight.conn.destroy();
    w.backoffMs = MIN_BACKOFF_MS;
    this.queue.done(flight.job);
    flight.job.resolve(outcome);
    const next = w.jobs[0];
    if (next && !next.timer) this.startTimer(w, next);
    this.pump();
  }

  /**
   * The worker failed (exited, stuck): the request it was serving fails with `error`; those still in
   * its backlog were never read, so they go back to the front of the queue for the other workers.
   */
  private failServed(w: Worker, error: Error): void {
    const [served, ...waiting] = w.jobs.splice(0);
    for (const flight of [served, ...waiting]) {
      if (!flight) continue;
      if (flight.timer) clearTimeout(flight.timer);
      flight.conn.destroy();
      this.queue.done(flight.job);
    }
    served?.job.reject(error);
    if (this.stopping) {
      for (const flight of waiting) flight.job.reject(new MapServerFailedError('MapServer pool is stopping'));
      return;
    }
    // Back to the front of their callers' lines, in their order.
    for (const flight of [...waiting].reverse()) this.queue.push(flight.job, true);
    this.pump();
  }
}
