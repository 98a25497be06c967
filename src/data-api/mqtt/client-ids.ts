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
