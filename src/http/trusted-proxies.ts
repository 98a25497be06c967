import type { IncomingMessage } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';
import type { TrustedProxies } from '../config.js';

/** Whether the peer at `address`, `hop` steps from us (0: our TCP peer), is a proxy whose forwarding headers we believe. */
export type ProxyTrust = (address: string, hop: number) => boolean;

/**
 * TRUST_PROXY as one function, shared by Fastify (`request.ip`, `request.protocol`) and the MQTT
 * WebSocket upgrade, so that both see the same client behind the same proxies. Null trusts nobody.
 */
export function proxyTrustOf(setting: TrustedProxies | null): ProxyTrust | null {
  if (setting === null) return null;
  if ('hops' in setting) return (_address, hop) => hop < setting.hops;
  return proxyAddr.compile(setting.addresses);
}

/** The client's address: the TCP peer, or, behind trusted proxies, the nearest address they forwarded that is not one of them. */
export function clientAddressOf(request: IncomingMessage, trust: ProxyTrust | null): string | undefined {
  if (trust === null || request.socket.remoteAddress === undefined) return request.socket.remoteAddress;
  return proxyAddr(request, trust);
}
