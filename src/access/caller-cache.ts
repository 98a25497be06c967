import { LRUCache } from 'lru-cache';
import type { Database } from '../db/client.js';
import { AccessVersionClock } from './access-version-clock.js';
import { loadCaller, type Caller, type CallerIdentity } from './caller.js';
import { findPersonalAccessToken, LastUseRecorder, loadTokenCaller, type PersonalAccessToken } from './credentials.js';

type Identity = CallerIdentity;

/** A personal access token's caller as of a version: null when no token has that digest. */
export interface TokenCaller { token: PersonalAccessToken; caller: Caller }

/**
 * Callers by identity, valid while the access version (migrations 0013, 0014) stands still: any
 * change to users, memberships, groups, assignments or role permissions moves it when it commits,
 * and the next request under the new version loads afresh. The version is known as the
 * AccessVersionClock knows it: a change committed by this process is seen by its very next
 * request, one committed by another process within VERSION_FRESH_MS (not a read per request). One per
 * process (the context's), shared by the management API and the data API: the same clients call
 * again and again, and the grants query was most of a management read's own work. Cached callers
 * are shared between requests and never changed.
 */
export class CallerCache {
  private readonly entries: LRUCache<string, { version: string; caller: Caller }>;
  /**
   * Personal access tokens by digest, under the same access version: deleting a token (or
   * changing its user's rights) moves it, so that a deleted token is refused on the next request.
   */
  private readonly tokens: LRUCache<string, { version: string; found: TokenCaller }>;
  /** Loads under way, by key and version: requests of one identity arriving together share one grants query. */
  private readonly loading = new Map<string, Promise<Caller>>();
  private readonly loadingTokens = new Map<string, Promise<TokenCaller | null>>();
  private readonly lastUse: LastUseRecorder;

  /**
   * `versions`: the process's clock of the access version on this database, when another cache
   * (with a pool of its own) already has one; by default a clock of its own.
   */
  constructor(private readonly db: Database, maxEntries = 10_000, onError?: (error: Error) => void, readonly versions = new AccessVersionClock()) {
    this.entries = new LRUCache({ max: maxEntries });
    this.tokens = new LRUCache({ max: maxEntries });
    this.lastUse = new LastUseRecorder(db, onError);
  }

  /**
   * The caller of a personal access token (by the digest of the presented secret) as of now: null
   * for an unknown, deleted or expired token. Once loaded it costs the shared version read only,
   * and marks the token used (written at most once a minute).
   */
  async personalAccessToken(digest: string): Promise<Caller | null> {
    return this.personalAccessTokenAt(digest, await this.versions.current(this.db));
  }

  /** As `personalAccessToken`, at a version read by `currentVersion` (MQTT sessions); null as there. */
  async personalAccessTokenAt(digest: string, version: string, nowMs = Date.now()): Promise<Caller | null> {
    const found = await this.tokenAt(digest, version);
    if (!found || nowMs >= found.token.expiresAtMs) return null;
    this.lastUse.used(found.token, nowMs);
    return found.caller;
  }

  /** The token behind a digest as of a version (expired ones included), cached; unknown digests are not. */
  async tokenAt(digest: string, version: string): Promise<TokenCaller | null> {
    const cached = this.tokens.get(digest);
    if (cached?.version === version) return cached.found;
    const pendingKey = `${digest}\u0000${version}`;
    let pending = this.loadingTokens.get(pendingKey);
    if (!pending) {
      pending = (async () => {
        const token = await findPersonalAccessToken(this.db, digest);
        if (!token) {
          this.tokens.delete(digest);
          return null;
        }
        const found = { token, caller: Object.freeze(await loadTokenCaller(this.db, token)) };
        this.tokens.set(digest, { version, found });
        return found;
      })().finally(() => this.loadingTokens.delete(pendingKey));
      this.loadingTokens.set(pendingKey, pending);
    }
    return pending;
  }

  async load(identity: Identity, allowedScopeIds: ReadonlySet<string> | null): Promise<Caller> {
    return this.loadAt(identity, allowedScopeIds, await this.versions.current(this.db));
  }

  /**
   * The access version: exact for this process's own changes, at most VERSION_FRESH_MS behind
   * another process's (AccessVersionClock); what the contract's "within 1 s" allows.
   */
  currentVersion(): Promise<string> {
    return this.versions.current(this.db);
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
}
