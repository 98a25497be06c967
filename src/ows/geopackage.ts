import { spawn } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AppError } from '../errors.js';
import type { DownloadFile } from '../util/download.js';
import { libpqEnvironmentOf } from './libpq-environment.js';

/**
 * GeoPackages of OWS named APIs, made by GDAL's ogr2ogr reading the collections' PostGIS tables:
 * a GeoPackage is an SQLite database, which cannot be written as a stream, so each is made into a
 * file of a private temporary folder and streamed from there. Requests for the same data (schema
 * and data version) share one file; it is deleted when its last reader is done. At most
 * `concurrency` are made at once per process, and each within `timeoutMs`.
 */
export interface GeoPackageSettings {
  /** The PostgreSQL server ogr2ogr reads (libpq environment: no credential on its command line). */
  databaseUrl: string;
  /** GeoPackages made at once; more wait their turn, at most `queueTimeoutMs`. */
  concurrency: number;
  timeoutMs: number;
  queueTimeoutMs: number;
  /** Where the files are made (default: the system's temporary folder). */
  tempDir: string | null;
  /** ogr2ogr's path (default: OGR2OGR_PATH, else found on PATH). */
  ogr2ogr?: string;
}

interface Made { folder: string; file: string; size: number; readers: number; done: boolean }

/** A file being made or made, shared by the requests for the same data. */
interface Shared { made: Promise<Made>; waiters: number; stop: AbortController }

export class GeoPackageMaker {
  private readonly shared = new Map<string, Shared>();
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly settings: GeoPackageSettings) {}

  /**
   * The GeoPackage of `collections` in `schema` at data version `version`. `signal`: this client
   * went away; a file that no other request waits for is then not finished.
   */
  async make(schema: string, version: number, collections: readonly string[], signal: AbortSignal): Promise<DownloadFile> {
    const key = `${schema}@${version}`;
    let entry = this.shared.get(key);
    if (!entry) {
      const stop = new AbortController();
      const made = this.build(schema, collections, stop.signal);
      const created: Shared = { made, waiters: 0, stop };
      entry = created;
      this.shared.set(key, created);
      // A failed build is not kept: the next request tries again.
      made.catch(() => { if (this.shared.get(key) === created) this.shared.delete(key); });
    }
    const current = entry;
    current.waiters += 1;
    const leave = () => { current.waiters -= 1; if (current.waiters === 0) current.stop.abort(); };
    signal.addEventListener('abort', leave, { once: true });
    let made: Made;
    try {
      made = await current.made;
    } finally {
      signal.removeEventListener('abort', leave);
    }
    const dropIfUnused = () => {
      if (made.readers > 0 || current.waiters > 0 || made.done) return;
      made.done = true;
      if (this.shared.get(key) === current) this.shared.delete(key);
      void rm(made.folder, { recursive: true, force: true });
    };
    if (signal.aborted) {
      // Made after all, but nobody is left to read it.
      dropIfUnused();
      throw new Error('the client went away before the GeoPackage was made');
    }
    current.waiters -= 1;
    made.readers += 1;
    return {
      path: made.file,
      size: made.size,
      release: () => {
        made.readers -= 1;
        dropIfUnused();
      },
    };
  }

  private async build(schema: string, collections: readonly string[], signal: AbortSignal): Promise<Made> {
    await this.turn(signal);
    const folder = await mkdtemp(path.join(this.settings.tempDir ?? tmpdir(), 'gpkg-')).catch((error: unknown) => { this.next(); throw error; });
    const file = path.join(folder, 'download.gpkg');
    try {
      await this.runOgr2ogr(schema, collections, file, signal);
      const { size } = await stat(file);
      return { folder, file, size, readers: 0, done: false };
    } catch (error) {
      await rm(folder, { recursive: true, force: true });
      throw error;
    } finally {
      this.next();
    }
  }

  private runOgr2ogr(schema: string, collections: readonly string[], file: string, signal: AbortSignal): Promise<void> {
    // Layer names are collection names (validated identifiers); the schema is ours (ds_ and hex).
    const args = [
      '-f', 'GPKG', file, `PG:schemas=${schema}`, ...collections,
      '-lco', 'GEOMETRY_NAME=geom', '-lco', 'FID=fid',
      // One transaction per 100,000 features instead of per 100: the file is private until it is done.
      '-gt', '100000',
      '--config', 'OGR_SQLITE_SYNCHRONOUS', 'OFF',
      '-nomd',
    ];
    return new Promise((resolve, reject) => {
      const child = spawn(this.settings.ogr2ogr ?? process.env.OGR2OGR_PATH ?? 'ogr2ogr', args, {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...libpqEnvironmentOf(this.settings.databaseUrl) },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let errors = '';
      child.stderr.setEncoding('utf8').on('data', (text: string) => { if (errors.length < 4096) errors += text; });
      const timer = setTimeout(() => child.kill('SIGKILL'), this.settings.timeoutMs);
      const abort = () => child.kill('SIGKILL');
      signal.addEventListener('abort', abort, { once: true });
      child.once('error', (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', abort);
        reject(error.code === 'ENOENT'
          ? new AppError('SERVICE_UNAVAILABLE', 'GeoPackage downloads need GDAL\'s ogr2ogr, which this server does not have')
          : error);
      });
      child.once('close', (code, killedBy) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', abort);
        if (code === 0) return resolve();
        if (signal.aborted) return reject(new Error('the client went away before the GeoPackage was made'));
        reject(new GeoPackageFailedError(killedBy ? `ogr2ogr was stopped (${killedBy})` : `ogr2ogr failed (exit ${code}): ${errors.trim().split('\n').slice(-3).join(' ')}`));
      });
    });
  }

  /** Waits for a free place among the `concurrency` builds; 503 after `queueTimeoutMs`. */
  private turn(signal: AbortSignal): Promise<void> {
    if (this.running < this.settings.concurrency) {
      this.running += 1;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const go = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', leave);
        this.running += 1;
        resolve();
      };
      const leave = () => {
        clearTimeout(timer);
        const at = this.waiting.indexOf(go);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(signal.aborted ? new Error('the client went away') : new AppError('SERVICE_UNAVAILABLE', 'Too many GeoPackages are being made: try again in a minute'));
      };
      const timer = setTimeout(leave, this.settings.queueTimeoutMs);
      signal.addEventListener('abort', leave, { once: true });
      this.waiting.push(go);
    });
  }

  private next(): void {
    this.running -= 1;
    this.waiting.shift()?.();
  }
}

export class GeoPackageFailedError extends Error {
  override name = 'GeoPackageFailedError';
}
