/**
 * Which identity holds each client id of this broker while its session lives: while a connection
 * with that id is open, and, after a CONNECT with clean session 0, for as long as the broker keeps
 * the session (until the same identity connects with clean session 1 and that connection ends).
 * MQTT lets a CONNECT take over the session of its client id; bound here, only the identity that
 * holds the id can, so nobody closes or inherits another's session by naming its id.
 */
export class ClientIdBindings {
  private readonly bindings = new Map<string, { owner: string; connections: Set<object>; persistent: boolean }>();

  /**
   * Binds `clientId` to `owner` for one connection, or answers false (CONNACK 0x02) when another
   * identity holds it. `persistent`: the CONNECT asked to keep its session (clean session 0).
   */
  claim(clientId: string, owner: string, connection: object, persistent: boolean): boolean {
    const binding = this.bindings.get(clientId);
    if (!binding) {
      this.bindings.set(clientId, { owner, connections: new Set([connection]), persistent });
      return true;
    }
    if (binding.owner !== owner) return false;
    binding.connections.add(connection);
    // A clean CONNECT ends a kept session (the broker drops its subscriptions); a persistent one keeps it.
    binding.persistent = persistent;
    return true;
  }

  /** A connection that claimed `clientId` ended; the id is free once no connection and no kept session hold it. */
  release(clientId: string, connection: object): void {
    const binding = this.bindings.get(clientId);
    if (!binding?.connections.delete(connection)) return;
    if (binding.connections.size === 0 && !binding.persistent) this.bindings.delete(clientId);
  }
}

/** How long a broker's mark of life lasts, and how often it is renewed. */
const BROKER_MARK_MS = 15_000;
const BROKER_RENEW_MS = 5_000;
const brokerKeyOf = (brokerId: string) => `sta:mqtt:broker:${brokerId}`;

/**
 * Takes a client id for an identity: when free, already the identity's, or held without a session
 * by a broker whose mark of life expired (it stopped). Answers 1, or 0 when another holds it.
 */
const CLAIM_SCRIPT = `
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner and owner ~= ARGV[1] then
  local broker = redis.call('HGET', KEYS[1], 'broker') or ''
  if redis.call('HGET', KEYS[1], 'persistent') == '1' or redis.call('EXISTS', KEYS[2] .. broker) == 1 then
    return 0
  end
end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'holder', ARGV[2], 'broker', ARGV[3], 'persistent', ARGV[4])
return 1`;

/** Frees a client id if this connection still holds it and keeps no session. */
const RELEASE_SCRIPT = `
if redis.call('HGET', KEYS[1], 'holder') == ARGV[1] and redis.call('HGET', KEYS[1], 'persistent') == '0' then
  return redis.call('DEL', KEYS[1])
end
return 0`;

/** The Redis commands ClusterClientIds needs (an ioredis connection). */
export interface ScriptRunner {
  eval(script: string, keys: number, ...args: string[]): Promise<unknown>;
  set(key: string, value: string, px: 'PX', ms: number): Promise<unknown>;
  del(key: string): Promise<unknown>;
}

/**
 * ClientIdBindings across the replicas of a Redis cluster (MQTT_CLUSTER): aedes closes a client id's
 * connection on every broker when another broker accepts that id, so the binding must be the
 * cluster's, or an identity could close or inherit another's session through another replica.
 * A binding is a Redis hash per client id: its identity, the connection holding it, that
 * connection's broker, and whether it keeps a session. Each broker renews a mark of life in Redis;
 * a binding without a session whose broker's mark expired (the broker stopped without releasing
 * it) is taken over; one with a session stays its identity's.
 */
export class ClusterClientIds {
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly redis: ScriptRunner, private readonly brokerId: string) {
    const mark = () => void this.redis.set(brokerKeyOf(brokerId), '1', 'PX', BROKER_MARK_MS).catch(() => {});
    mark();
    this.timer = setInterval(mark, BROKER_RENEW_MS);
    this.timer.unref();
  }

  /** True when `owner` now holds `clientId` for the connection `holder` (a unique id of it). */
  async claim(clientId: string, owner: string, holder: string, persistent: boolean): Promise<boolean> {
    return (await this.redis.eval(CLAIM_SCRIPT, 2, keyOf(clientId), brokerKeyOf(''), owner, holder, this.brokerId, persistent ? '1' : '0')) === 1;
  }

  async release(clientId: string, holder: string): Promise<void> {
    await this.redis.eval(RELEASE_SCRIPT, 1, keyOf(clientId), holder);
  }

  /** The broker stops: its mark goes, so that its bindings without a session are free at once. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.redis.del(brokerKeyOf(this.brokerId)).catch(() => {});
  }
}

const keyOf = (clientId: string) => `sta:mqtt:client-id:${encodeURIComponent(clientId)}`;
