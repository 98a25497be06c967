import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/**
 * Which headers cross the gateway in upstream mode. The upstream trusts the gateway, so a request
 * carries only what SensorThings needs (an allowlist), never the caller's credentials, cookies or
 * scope header, never hop-by-hop headers, and never the client's own proxy headers: the
 * `X-Forwarded-*` and `Forwarded` it receives are the gateway's, from what the gateway knows
 * (the client's address as it connected, the public base of the route).
 */

const FORWARDED_REQUEST_HEADERS = [
  'accept', 'accept-language', 'content-type', 'prefer',
  'if-match', 'if-none-match', 'if-modified-since', 'if-unmodified-since',
];

// RFC 9110 §7.6.1, and those named by `Connection`; `Set-Cookie` would set a cookie of the upstream on our domain.
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade'];

/** The header names a `Connection` header lists (they are hop-by-hop too). */
function namedByConnection(headers: IncomingHttpHeaders): Set<string> {
  const value = headers['connection'];
  const text = Array.isArray(value) ? value.join(',') : String(value ?? '');
  return new Set(text.split(',').map((name) => name.trim().toLowerCase()).filter(Boolean));
}

export interface ForwardingFacts {
  /** The client's address as the gateway sees it (`request.ip`). */
  clientAddress: string;
  /** The route's public base: its scheme and host are what the client addressed. */
  publicBase: string;
  /** The request id the gateway uses (the client's `X-Request-Id` when it sent one). */
  requestId: string;
}

/**
 * The headers of the request to the upstream: the allowlist, the upstream's `host`, and the body's
 * `content-type` and `content-length` as the proxy computed them for the body it sends (none without one).
 */
export function upstreamRequestHeaders(client: IncomingHttpHeaders, prepared: IncomingHttpHeaders, facts: ForwardingFacts, withBody: boolean): IncomingHttpHeaders {
  const hopByHop = namedByConnection(client);
  const headers: IncomingHttpHeaders = {};
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const value = client[name];
    if (value !== undefined && !hopByHop.has(name)) headers[name] = value;
  }
  headers.host = prepared.host;
  delete headers['content-type'];
  if (withBody) {
    headers['content-type'] = prepared['content-type'];
    headers['content-length'] = prepared['content-length'];
  }
  const { protocol, host } = new URL(facts.publicBase);
  const proto = protocol.replace(/:$/, '');
  headers['x-request-id'] = facts.requestId;
  headers['x-forwarded-for'] = facts.clientAddress;
  headers['x-forwarded-proto'] = proto;
  headers['x-forwarded-host'] = host;
  const forAddress = facts.clientAddress.includes(':') ? `"[${facts.clientAddress}]"` : facts.clientAddress;
  headers['forwarded'] = `for=${forAddress};proto=${proto};host="${host}"`;
  return headers;
}

/** The upstream's answer headers as the client gets them: hop-by-hop ones and cookies dropped. */
export function clientResponseHeaders(upstream: OutgoingHttpHeaders | IncomingHttpHeaders): Record<string, string | string[] | number | undefined> {
  const dropped = new Set([...HOP_BY_HOP, ...namedByConnection(upstream as IncomingHttpHeaders), 'set-cookie']);
  const answer: Record<string, string | string[] | number | undefined> = {};
  for (const [name, value] of Object.entries(upstream)) {
    if (!dropped.has(name.toLowerCase())) answer[name] = value;
  }
  return answer;
}
