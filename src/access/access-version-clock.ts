import type { Database } from '../db/client.js';
import { processWrites, type LocalWrites } from '../db/local-writes.js';
import { accessVersion } from '../db/versions.js';

/**
 * How long a read of the access version stands for the current one: a change committed by another
 * process reaches every request within this time (the contract's 1 s, with room for the read
 * itself). Under load a read in the background renews it every VERSION_RENEW_MS, so that no
 * request waits for it and another process's change arrives within about that time.
 */
export const VERSION_FRESH_MS = 800;
export const VERSION_RENEW_MS = 100;

/** A read of the access version: its value, when it started, and this process's writes then. */
interface VersionRead { version: string; startedAt: number; localWrites: number }

/**
 * The access version (migrations 0013, 0014) as a process knows it, read at most every
 * VERSION_RENEW_MS under load instead of once per request. Exact for this process's own changes:
 * a write it completed (LocalWrites) makes the next request read the version afresh. Another
 * process's change arrives within VERSION_FRESH_MS. One per process and database, shared by every
 * cache of callers on it (the context's, the MQTT broker's), so that all of them move together;
 * each reads through its own database handle.
 */
export class AccessVersionClock {
  private lastRead: VersionRead | null = null;
  private nextRead: Promise<string> | null = null;
  private renewing = false;

  constructor(private readonly localWrites: LocalWrites = processWrites) {}

  /**
   * The last read while it is fresh: younger than VERSION_FRESH_MS, and no write of this process
   * completed since it started (renewed in the background once older than VERSION_RENEW_MS).
   * Otherwise a read that starts after the request arrived, shared by the requests of the same
   * turn of the event loop: exact.
   */
  current(db: Database): Promise<string> {
    const last = this.lastRead;
    if (last && last.localWrites === this.localWrites.completed) {
      const age = performance.now() - last.startedAt;
      if (age < VERSION_FRESH_MS) {
        if (age >= VERSION_RENEW_MS) this.renewInBackground(db);
        return Promise.resolve(last.version);
      }
    }
    this.nextRead ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      this.nextRead = null;
      return this.read(db);
    });
    return this.nextRead;
  }

  /** One read of the version, remembered when it is the newest started. */
  private async read(db: Database): Promise<string> {
    const started = { startedAt: performance.now(), localWrites: this.localWrites.completed };
    const version = await accessVersion(db);
    if (!this.lastRead || this.lastRead.startedAt < started.startedAt) this.lastRead = { version, ...started };
    return version;
  }

  /** A failed renewal is no request's: the read ages out, and the next request reads itself (and fails, if the database is gone). */
  private renewInBackground(db: Database): void {
    if (this.renewing) return;
    this.renewing = true;
    this.read(db).catch(() => {}).finally(() => { this.renewing = false; });
  }
}
