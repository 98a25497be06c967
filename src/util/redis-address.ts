/**
 * Where the MQTT cluster's Redis is (MQTT_CLUSTER, contract "MQTT across replicas"): one server by
 * its URL, or a master found through Redis Sentinel. ioredis takes a Sentinel deployment as a list
 * of sentinel addresses and the master's name, which no `redis://` URL can carry, so that form has
 * a scheme of its own:
 *
 *   redis://[[user]:password@]host[:port][/db]            one server (rediss:// with TLS)
 *   redis-sentinel://[[user]:password@]host[:port][,host[:port]…]/master[/db]
 *                                                       the master the sentinels name (rediss-sentinel:// with TLS)
 *
 * The user and password are the master's (and its replicas'); sentinels that want a password of
 * their own take `?sentinelPassword=…`. Sentinel ports default to 26379.
 */
export type RedisAddress =
  | { kind: 'server'; url: string }
  | {
    kind: 'sentinel';
    sentinels: Array<{ host: string; port: number }>;
    /** The master's name, as the sentinels monitor it. */
    name: string;
    db: number;
    username: string | null;
    password: string | null;
    sentinelPassword: string | null;
    tls: boolean;
  };

export class RedisAddressError extends Error {
  override name = 'RedisAddressError';
}

const SENTINEL_PORT = 26379;
const MAX_SENTINELS = 16;
const SENTINEL_FORM = /^(rediss?)-sentinel:\/\/(?:([^@/]*)@)?([^/?#@]+)\/([^/?#]+)(?:\/([^/?#]*))?(?:\?([^#]*))?$/i;

/** The address `text` names; throws RedisAddressError saying what is wrong. */
export function parseRedisAddress(text: string): RedisAddress {
  const value = text.trim();
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(value)?.[1]?.toLowerCase();
  if (scheme === 'redis-sentinel' || scheme === 'rediss-sentinel') return parseSentinel(value);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new RedisAddressError('must be a redis://, rediss:// or redis-sentinel:// address');
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new RedisAddressError(`must be a redis://, rediss:// or redis-sentinel:// address (got the scheme ${JSON.stringify(url.protocol.replace(/:$/, ''))})`);
  }
  return { kind: 'server', url: value };
}

function parseSentinel(value: string): RedisAddress {
  const match = SENTINEL_FORM.exec(value);
  if (!match) throw new RedisAddressError('a redis-sentinel:// address is redis-sentinel://[[user]:password@]host[:port][,host[:port]…]/master[/db]');
  const [, base, credentials, hosts, name, dbText, query] = match;
  const sentinels = hosts!.split(',').map((host) => hostAndPort(host.trim()));
  if (sentinels.length > MAX_SENTINELS) throw new RedisAddressError(`names at most ${MAX_SENTINELS} sentinels`);
  if (dbText && !/^\d{1,2}$/.test(dbText)) throw new RedisAddressError(`has a database number that is not one (${JSON.stringify(dbText)})`);
  const db = dbText ? Number(dbText) : 0;
  const [user, password] = credentialsOf(credentials);
  const params = new URLSearchParams(query ?? '');
  for (const key of params.keys()) if (key !== 'sentinelPassword') throw new RedisAddressError(`takes no parameter ${JSON.stringify(key)} (only sentinelPassword)`);
  return {
    kind: 'sentinel', sentinels, name: decoded(name!), db, username: user, password,
    sentinelPassword: params.get('sentinelPassword'), tls: base!.toLowerCase() === 'rediss',
  };
}

function hostAndPort(text: string): { host: string; port: number } {
  // [::1]:26379, host:26379, host
  const match = /^(?:\[([0-9a-f:.]+)\]|([a-z0-9.-]+))(?::(\d{1,5}))?$/i.exec(text);
  const port = match?.[3] === undefined ? SENTINEL_PORT : Number(match[3]);
  if (!match || port < 1 || port > 65535) throw new RedisAddressError(`names a sentinel that is not host[:port] (${JSON.stringify(text)})`);
  return { host: match[1] ?? match[2]!, port };
}

function credentialsOf(text: string | undefined): [string | null, string | null] {
  if (text === undefined) return [null, null];
  const colon = text.indexOf(':');
  const user = colon < 0 ? text : text.slice(0, colon);
  const password = colon < 0 ? null : text.slice(colon + 1);
  return [user === '' ? null : decoded(user), password === null || password === '' ? null : decoded(password)];
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new RedisAddressError('has a badly escaped part (a % not followed by two hex digits)');
  }
}

/** The address for logs: without passwords. */
export function describeRedisAddress(address: RedisAddress): string {
  if (address.kind === 'sentinel') {
    const scheme = address.tls ? 'rediss-sentinel' : 'redis-sentinel';
    const hosts = address.sentinels.map(({ host, port }) => `${host.includes(':') ? `[${host}]` : host}:${port}`).join(',');
    return `${scheme}://${address.password ? '***@' : ''}${hosts}/${encodeURIComponent(address.name)}/${address.db}`;
  }
  try {
    const parsed = new URL(address.url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'redis://…';
  }
}
