import { randomUUID } from 'node:crypto';
import type { Caller } from '../../access/caller.js';
import type { CallerCache } from '../../access/caller-cache.js';
import { digestOfPresented, identityOf, isPersonalAccessToken } from '../../access/credentials.js';
import { TokenRejectedError, type TokenVerifier } from '../../http/token-verifier.js';
import { decidePayloadAccess, type PayloadDecision, type PayloadOperation } from '../payload-access.js';
import type { PayloadRoute, RouteTable } from '../route-table.js';

/**
 * Who an MQTT connection acts for. The password of CONNECT is an access token or a personal access
 * token (the username is ignored); no password is an anonymous client. An MQTT connection lives for
 * hours, so its rights are those of the access version (migration 0013) they were loaded at, and
 * are loaded again when that version moved: before a SUBSCRIBE or PUBLISH is decided, and before
 * the notifier publishes a batch (`bringCurrent`, the access version as the process's clock knows it). A delivery is
 * then decided at once on those rights, and a token past its `exp` (or a personal access token past
 * its `expiresAt`) counts as no token.
 */
export interface MqttSession {
  /**
   * Who holds the connection's client id: `token:{subject}` (a personal access token's subject is
   * `pat:{id}`), or, for an anonymous client, a name of its own per connection (nobody can prove to
   * be the same anonymous client again).
   */
  identity: string;
  /**
   * Null for an anonymous client. An access token's identity, or a personal access token's digest
   * (never the secret): a deleted one leaves the session without rights at the next reload.
   */
  token: ({ identity: ReturnType<typeof identityOf> } | { digest: string }) & { expiresAtMs: number } | null;
  /** The rights as of `version`; null for an anonymous client, and after a reload that failed. */
  caller: Caller | null;
  /** The access version `caller` was loaded at; null: load again before the next decision. */
  version: string | null;
}

export type TopicDecision = PayloadDecision & { route?: PayloadRoute };

export interface AccessLog {
  warn(details: object, message: string): void;
}

export class MqttAccess {
  constructor(private readonly deps: { callers: CallerCache; verifier: TokenVerifier; routes: RouteTable; log: AccessLog; now?: () => number }) {}

  /** A session for a CONNECT; null when a token was given but does not verify (CONNACK 5). */
  async connect(password: Buffer | undefined): Promise<MqttSession | null> {
    if (password === undefined || password.length === 0) return { identity: `anonymous:${randomUUID()}`, token: null, caller: null, version: null };
    const secret = password.toString('utf8');
    if (isPersonalAccessToken(secret)) return this.connectWithPersonalAccessToken(secret);
    let verified;
    try {
      verified = await this.deps.verifier.verify(secret);
    } catch (error) {
      if (error instanceof TokenRejectedError) return null;
      throw error;
    }
    const identity = identityOf(verified);
    const session: MqttSession = { identity: `token:${identity.subject}`, token: { identity, expiresAtMs: verified.expiresAt * 1000 }, caller: null, version: null };
    await this.load([session], await this.deps.callers.currentVersion());
    if (session.version === null) throw new Error('the caller could not be loaded');
    return session;
  }

  /** A personal access token's session: null for an unknown, deleted or expired one (CONNACK 5). */
  private async connectWithPersonalAccessToken(secret: string): Promise<MqttSession | null> {
    const digest = digestOfPresented(secret);
    if (digest === null) return null;
    const version = await this.deps.callers.currentVersion();
    const found = await this.deps.callers.tokenAt(digest, version);
    const caller = found && await this.deps.callers.personalAccessTokenAt(digest, version, this.now());
    if (!found || !caller) return null;
    return { identity: `token:${caller.subject}`, token: { digest, expiresAtMs: found.token.expiresAtMs }, caller, version };
  }

  /** The payload decision for a read (SUBSCRIBE) or write (PUBLISH) of a route, on current rights. */
  async decide(session: MqttSession, datasetId: string, slug: string, operation: PayloadOperation): Promise<TopicDecision> {
    await this.bringCurrent([session]);
    // An anonymous client and one whose token expired are treated alike: open data reads only.
    const decide = () => {
      const route = this.deps.routes.lookup(datasetId, slug);
      return { ...decidePayloadAccess(this.callerNow(session), route, operation), ...(route ? { route } : {}) };
    };
    const decided = decide();
    if (decided.outcome === 'allow') return decided;
    // As on HTTP: a refusal first reads the route version (a release committed before this packet is known).
    await this.deps.routes.catchUp();
    return decide();
  }

  /**
   * Brings the rights of these sessions to the access version as of now (AccessVersionClock: exact
   * for this process's changes, within 0.8 s for another's), and one load per token whose
   * session was loaded at another version. A session whose load fails keeps no rights (it gets open
   * data only) until a later call loads it.
   */
  async bringCurrent(sessions: Iterable<MqttSession>): Promise<void> {
    const withToken = [...sessions].filter((session) => session.token !== null);
    if (withToken.length === 0) return;
    const version = await this.deps.callers.currentVersion();
    await this.load(withToken.filter((session) => session.version !== version), version);
  }

  /**
   * Whether a message of a route may go to this subscriber now: decided at once (aedes asks
   * synchronously, once per message and subscriber) on the rights `bringCurrent` left, with the
   * token's expiry checked against the clock.
   */
  mayReadNow(session: MqttSession, route: PayloadRoute | undefined): boolean {
    return decidePayloadAccess(this.callerNow(session), route, 'read').outcome === 'allow';
  }

  private callerNow(session: MqttSession): Caller | null {
    return session.token && this.now() < session.token.expiresAtMs ? session.caller : null;
  }

  private async load(sessions: MqttSession[], version: string): Promise<void> {
    // Sessions of one token identity share one load (the caller cache joins loads under way).
    await Promise.all(sessions.map(async (session) => {
      const token = session.token!;
      let caller: Caller | null;
      try {
        // A deleted personal access token loads as no rights, at this version (not retried until it moves).
        caller = 'digest' in token ? await this.deps.callers.personalAccessTokenAt(token.digest, version, this.now()) : await this.deps.callers.loadAt(token.identity, null, version);
      } catch (error) {
        this.deps.log.warn({ err: { message: (error as Error).message } }, 'MQTT: could not load a subscriber\'s rights; it gets open data only until they load');
        if (session.version === null || BigInt(session.version) <= BigInt(version)) {
          session.caller = null;
          session.version = null;
        }
        return;
      }
      // A slower load of an older version never replaces the rights of a newer one.
      if (session.version !== null && BigInt(session.version) > BigInt(version)) return;
      session.caller = caller;
      session.version = version;
    }));
  }

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }
}
