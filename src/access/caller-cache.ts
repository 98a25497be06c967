import { LRUCache } from 'lru-cache';
import type { Database } from '../db/client.js';
import { accessVersion } from '../db/sequence-version.js';
import { loadCaller, type Caller } from './caller.js';

type Identity = Parameters<typeof loadCaller>[1];

/**
 * Callers by identity, valid while the access version (migrations 0013, 0014) stands still: a request
 * costs one read of a counter instead of the grants query, and any change to users, memberships,
 * groups, assignments or role permissions, committed by any process, makes the next request load
 * afresh. For the data API's hot path, where the same clients read again and again.
 * Cached callers are shared between requests and never changed.
 */
export class CallerCache {
  private readonly entries: LRUCache<string, { version: string; caller: Caller }>;
  private nextVersionRead: Promise<string> | null = null;
  /** Loads under way, by key and version: requests of one identity arriving together share one grants query. */
  private readonly loading = new Map<string, Promise<Caller>>();

  constructor(private readonly db: Database, maxEntries = 10_000) {
    this.entries = new LRUCache({ max: maxEntries });
  }

  async load(identity: Identity, allowedScopeIds: ReadonlySet<string> | null): Promise<Caller> {
    return this.loadAt(identity, allowedScopeIds, await this.versionAfterArrival());
  }

  /** The access version as of now; reads asked for in the same turn of the event loop share one query. */
  currentVersion(): Promise<string> {
    return this.versionAfterArrival();
  }

  /**
   * The caller as of `version`, read by `currentVersion` before this call (long-lived sessions, as
   * MQTT's, keep the version they were loaded at and reload when it moved).
   */
  async loadAt(identity: Identity, allowedScopeIds: ReadonlySet<string> | null, version: string): Promise<Caller> {
    const key = [identity.subject, identity.email ?? '', allowedScopeIds ? [...allowedScopeIds].sort().join(',') : '*'].join('\u0000');
    const cached = this.entries.get(key);
    if (cached?.version === version) return cached.caller;
    const pendingKey = `${key}\u0000${version}`;
    let pending = this.loading.get(pendingKey);
    if (!pending) {
      // Read after the version: a change committed in between makes the next request reload.
      pending = loadCaller(this.db, identity, allowedScopeIds).then((loaded) => {
        const caller = Object.freeze(loaded);
        this.entries.set(key, { version, caller });
        return caller;
      }).finally(() => this.loading.delete(pendingKey));
      this.loading.set(pendingKey, pending);
    }
    return pending;
  }

  /**
   * Requests that arrive in the same turn of the event loop share one read of the version, which
   * starts after all of them arrived: still exact (a change committed before a request arrived is
   * seen by it), and under load one query serves many requests.
   */
  private versionAfterArrival(): Promise<string> {
    this.nextVersionRead ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      this.nextVersionRead = null;
      return accessVersion(this.db);
    });
    return this.nextVersionRead;
  }
}
