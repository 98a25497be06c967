import type { Caller } from '../../access/caller.js';
import type { CallerCache } from '../../access/caller-cache.js';
import { identityOf } from '../../http/authentication.js';
import { TokenRejectedError, type TokenVerifier } from '../../http/token-verifier.js';
import { decidePayloadAccess, type PayloadDecision, type PayloadOperation } from '../payload-access.js';
import type { PayloadRoute, RouteTable } from '../route-table.js';

/**
 * Who an MQTT connection acts for. The password of CONNECT is an access token (the username is
 * ignored); no password is an anonymous client. The caller is loaded again (token verified, rights
 * read) once it is older than `CALLER_TTL_MS`, at a SUBSCRIBE, a PUBLISH or a message delivered: an
 * MQTT connection lives for hours, and a revoked permission or an expired token must bite within
 * seconds, not at the next reconnect, while a client publishing many observations a second should
 * not cost a permission query each (the caller cache makes a reload one sequence read when no
 * access changed).
 */
export const CALLER_TTL_MS = 5_000;

export interface MqttSession {
  /** The access token; null for an anonymous client. */
  token: string | null;
  /** Null for an anonymous client, and for one whose token stopped verifying since CONNECT. */
  caller: Caller | null;
  loadedAt: number;
  /** A reload under way, shared by whoever needs the caller meanwhile. */
  refreshing?: Promise<void> | undefined;
}

export type TopicDecision = PayloadDecision & { route?: PayloadRoute };

export class MqttAccess {
  constructor(private readonly deps: { callers: CallerCache; verifier: TokenVerifier; routes: RouteTable; now?: () => number }) {}

  /** A session for a CONNECT; null when a token was given but does not verify (CONNACK 5). */
  async connect(password: Buffer | undefined): Promise<MqttSession | null> {
    if (password === undefined || password.length === 0) return { token: null, caller: null, loadedAt: this.now() };
    const token = password.toString('utf8');
    const caller = await this.callerOf(token);
    return caller ? { token, caller, loadedAt: this.now() } : null;
  }

  /** The payload decision for a read (SUBSCRIBE) or write (PUBLISH) of a route, with a fresh enough caller. */
  async decide(session: MqttSession, datasetId: string, slug: string, operation: PayloadOperation): Promise<TopicDecision> {
    await this.refresh(session);
    const route = this.deps.routes.lookup(datasetId, slug);
    // An anonymous client and one whose token expired are treated alike: open data reads only.
    return { ...decidePayloadAccess(session.caller, route, operation), ...(route ? { route } : {}) };
  }

  /**
   * Whether a message of a route may still go to this subscriber, decided at once with the caller
   * as last loaded (aedes asks synchronously, once per message and subscriber); a stale caller is
   * reloaded in the background for the next message. So a revoked right, an expired token or a
   * dataset no longer open stops the messages within about CALLER_TTL_MS.
   */
  mayReadNow(session: MqttSession, route: PayloadRoute | undefined): boolean {
    if (session.token !== null && this.now() - session.loadedAt >= CALLER_TTL_MS) {
      this.refresh(session).catch(() => { /* kept as it was; the next message tries again */ });
    }
    return decidePayloadAccess(session.caller, route, 'read').outcome === 'allow';
  }

  private refresh(session: MqttSession): Promise<void> {
    if (session.token === null || this.now() - session.loadedAt < CALLER_TTL_MS) return Promise.resolve();
    const token = session.token;
    session.refreshing ??= this.callerOf(token).then((caller) => {
      session.caller = caller;
      session.loadedAt = this.now();
    }).finally(() => { session.refreshing = undefined; });
    return session.refreshing;
  }

  private async callerOf(token: string): Promise<Caller | null> {
    try {
      const verified = await this.deps.verifier.verify(token);
      return await this.deps.callers.load(identityOf(verified), null);
    } catch (error) {
      if (error instanceof TokenRejectedError) return null;
      throw error;
    }
  }

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }
}
