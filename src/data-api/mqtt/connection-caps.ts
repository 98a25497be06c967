import { isIPv4 } from 'node:net';

export interface ConnectionCapSettings {
  maxConnections: number;
  maxConnectionsPerAddress: number;
}

/**
 * The MQTT connections of one process, in all and per client address, counted from accept to close
 * over TCP and WebSocket together. The address is the socket's own remote address: a header such as
 * `X-Forwarded-For` is the client's to write, so it never decides whose share a connection takes.
 */
export class ConnectionCaps {
  private total = 0;
  private readonly perAddress = new Map<string, number>();

  constructor(private readonly settings: ConnectionCapSettings) {}

  /**
   * Counts a new connection; returns its release (to call once, when it closed), or null when a cap
   * is reached or the socket has no address any more (it closed already): then it is not counted.
   */
  admit(remoteAddress: string | undefined): (() => void) | null {
    if (remoteAddress === undefined) return null;
    const address = canonicalAddress(remoteAddress);
    const held = this.perAddress.get(address) ?? 0;
    if (this.total >= this.settings.maxConnections || held >= this.settings.maxConnectionsPerAddress) return null;
    this.total++;
    this.perAddress.set(address, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.perAddress.get(address) ?? 1) - 1;
      if (left === 0) this.perAddress.delete(address);
      else this.perAddress.set(address, left);
    };
  }
}

/** An IPv4 client seen through a dual-stack listener (`::ffff:192.0.2.1`) is the same client as over IPv4. */
function canonicalAddress(address: string): string {
  const mapped = /^::ffff:(.+)$/i.exec(address);
  return mapped && isIPv4(mapped[1]!) ? mapped[1]! : address.toLowerCase();
}
