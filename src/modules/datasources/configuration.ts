import type { ConnectorType } from '../../db/schema.js';
import type { FieldError } from '../../errors.js';

/**
 * The typed `configuration` of each connector, checked here rather than by the route schema:
 * existing clients send members of other connectors (or misspelled ones), which the contract
 * drops instead of refusing, and the route validator never drops anything.
 */

type Config = Record<string, unknown>;
type Check = (value: unknown) => string | null;

export const MASK = '********';

const DURATION = /^(?:\d+(?:\.\d+)?(?:h|m|s|ms))+$/;
const DURATION_PART = /(\d+(?:\.\d+)?)(h|ms|m|s)/g;
const UNIT_SECONDS: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 0.001 };

/** Seconds of a duration such as `1h30m` or `500ms` (already matched by DURATION). */
export function durationSeconds(text: string): number {
  let total = 0;
  for (const [, amount, unit] of text.matchAll(DURATION_PART)) total += Number(amount) * UNIT_SECONDS[unit!]!;
  return total;
}

const string: Check = (v) => (typeof v === 'string' ? null : 'must be a string');
const stringArray: Check = (v) => (Array.isArray(v) && v.every((item) => typeof item === 'string') ? null : 'must be an array of strings');
const duration: Check = (v) => (typeof v === 'string' && DURATION.test(v) ? null : 'must be a duration such as 30s, 5m or 1h30m');
const nonNegativeInteger: Check = (v) => (Number.isInteger(v) && (v as number) >= 0 ? null : 'must be an integer of at least 0');
const brokerUrls: Check = (v) => stringArray(v) ?? ((v as string[]).every((url) => /^[a-z][a-z0-9+.-]*:\/\/\S+$/i.test(url)) ? null : 'must be broker URLs such as tcp://broker:1883');
const qos: Check = (v) => (v === 0 || v === 1 || v === 2 ? null : 'must be 0, 1 or 2');
const tls: Check = (v) =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).every((k) => k === 'enabled') && typeof (v as Config)['enabled'] === 'boolean'
    ? null : 'must be an object {"enabled": boolean}';
const httpUrl: Check = (v) => {
  if (typeof v !== 'string') return 'must be a string';
  try {
    const url = new URL(v);
    return url.protocol === 'http:' || url.protocol === 'https:' ? null : 'must be an absolute http or https URL';
  } catch {
    return 'must be an absolute http or https URL';
  }
};
const method: Check = (v) => (v === 'GET' ? null : 'must be GET');
const headers: Check = (v) =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((item) => typeof item === 'string')
    ? null : 'must be an object of header names to strings';
const interval: Check = (v) => duration(v) ?? (durationSeconds(v as string) >= 1 ? null : 'must be at least 1s');
const jsonPointer: Check = (v) => (typeof v === 'string' && /^(\/([^~/]|~[01])*)*$/.test(v) ? null : 'must be a JSON Pointer (RFC 6901) such as /data/items');

interface Member { check: Check; default: unknown; secret?: boolean }

const m = (check: Check, defaultValue: unknown = null, secret = false): Member => ({ check, default: defaultValue, secret });

export const CONNECTORS: Record<ConnectorType, Record<string, Member>> = {
  MQTT: {
    urls: m(brokerUrls), topics: m(stringArray), qos: m(qos), keepalive: m(duration), connect_timeout: m(duration),
    client_id: m(string), user: m(string), password: m(string, null, true), tls: m(tls, { enabled: false }),
  },
  SQL: {
    driver: m(string), dsn: m(string), table: m(string), columns: m(stringArray), where: m(string), prefix: m(string), suffix: m(string),
    init_statement: m(string), user: m(string), password: m(string, null, true), conn_max_idle_time: m(duration), conn_max_life_time: m(duration),
    conn_max_idle: m(nonNegativeInteger, 2), conn_max_open: m(nonNegativeInteger, 0),
    // Ours (not CIVITAS/CORE's): the column whose growing value says where the last poll stopped.
    cursor_column: m(string),
  },
  HTTP: {
    url: m(httpUrl), method: m(method, 'GET'), headers: m(headers, {}), interval: m(interval, '60s'), records_pointer: m(jsonPointer),
    user: m(string), password: m(string, null, true),
  },
};

/** The members the release of a data source needs (a DRAFT one may lack them). */
export const REQUIRED_FOR_RELEASE: Record<ConnectorType, string[]> = {
  MQTT: ['urls', 'topics', 'qos'], SQL: ['driver', 'dsn', 'table', 'columns'], HTTP: ['url'],
};

/** Header names whose values are credentials: masked like passwords. */
export const isSecretHeader = (name: string) => /^(authorization|proxy-authorization|cookie)$/i.test(name) || /token|secret|key/i.test(name);

export function isObject(value: unknown): value is Config {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * `headers` as written, with `********` for a secret header keeping the stored value of the same
 * header (by name, any case) and dropping the header when none is stored.
 */
function headersKeepingSecrets(written: Record<string, string>, stored: unknown): Record<string, string> {
  const before = isObject(stored) ? (stored as Record<string, string>) : {};
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(written)) {
    if (value !== MASK || !isSecretHeader(name)) { out[name] = value; continue; }
    const kept = Object.entries(before).find(([storedName]) => storedName.toLowerCase() === name.toLowerCase());
    if (kept) out[name] = kept[1];
  }
  return out;
}

/**
 * Takes credentials out of a URL-style DSN (`postgres://user:pw@host/db?sslmode=require`, or
 * `postgres://host/db?password=pw`, which libpq reads too): the DSN without them, and what they
 * were (null when absent). Left in the DSN, a password would be answered and stored in clear.
 */
function splitDsn(dsn: string): { dsn: string; user: string | null; password: string | null } {
  const decode = (text: string) => { try { return decodeURIComponent(text); } catch { return text; } };
  const decodeParam = (text: string) => decode(text.replace(/\+/g, ' '));
  let user: string | null = null;
  let password: string | null = null;
  const match = /^([a-z][a-z0-9+.-]*:\/\/)([^@/?#]*)@(.*)$/is.exec(dsn);
  if (match) {
    const [, scheme, userinfo, rest] = match;
    const colon = userinfo!.indexOf(':');
    user = decode(colon < 0 ? userinfo! : userinfo!.slice(0, colon)) || null;
    password = colon < 0 ? null : decode(userinfo!.slice(colon + 1)) || null;
    dsn = `${scheme}${rest}`;
  }
  const query = /^([a-z][a-z0-9+.-]*:\/\/[^?#]*)\?([^#]*)(#.*)?$/is.exec(dsn);
  if (query) {
    const [, head, params, fragment] = query;
    const kept: string[] = [];
    for (const param of params!.split('&')) {
      const equals = param.indexOf('=');
      const name = decodeParam(equals < 0 ? param : param.slice(0, equals)).toLowerCase();
      if (name === 'password') password ??= (equals < 0 ? null : decodeParam(param.slice(equals + 1)) || null);
      else kept.push(param);
    }
    dsn = `${head}${kept.length > 0 ? `?${kept.join('&')}` : ''}${fragment ?? ''}`;
  }
  return { dsn, user, password };
}

/**
 * The configuration to store after a write, or the problems of it (each naming
 * `configuration.<member>`). `written` is the body's `configuration` (undefined, null or an
 * object); `base` the stored members this write starts from (PATCH: the stored configuration of
 * the same connector; PUT or a new connector: none); `stored` the stored configuration whose
 * secrets `********` keeps. Members the connector does not have are dropped.
 */
export function writeConfiguration(
  connector: ConnectorType, written: unknown, base: Config, stored: Config,
): { configuration: Config; problems: FieldError[] } {
  const members = CONNECTORS[connector];
  const problems: FieldError[] = [];
  if (written !== undefined && written !== null && !isObject(written)) {
    return { configuration: {}, problems: [{ field: 'configuration', message: 'must be an object' }] };
  }
  const given = (written ?? {}) as Config;
  const out: Config = {};
  for (const name of Object.keys(members)) if (base[name] !== undefined && base[name] !== null) out[name] = base[name];
  for (const [name, value] of Object.entries(given)) {
    const member = members[name];
    if (!member) continue; // another connector's member or a misspelling: dropped, as the contract says
    if (value === null) { delete out[name]; continue; }
    if (member.secret && value === MASK) {
      if (stored[name] !== undefined && stored[name] !== null) out[name] = stored[name]; else delete out[name];
      continue;
    }
    const problem = member.check(value);
    if (problem) { problems.push({ field: `configuration.${name}`, message: problem }); continue; }
    out[name] = name === 'headers' ? headersKeepingSecrets(value as Record<string, string>, stored['headers']) : value;
  }
  if (connector === 'SQL' && typeof out['dsn'] === 'string') {
    const split = splitDsn(out['dsn']);
    out['dsn'] = split.dsn;
    // Credentials written into the DSN fill user and password where this write does not give them.
    if (split.user !== null && (given['user'] === undefined || given['user'] === null)) out['user'] = split.user;
    if (split.password !== null && (given['password'] === undefined || given['password'] === null)) out['password'] = split.password;
  }
  return { configuration: out, problems };
}

/** Every member of the connector: stored values, defaults for the others, secrets masked. */
export function readConfiguration(connector: ConnectorType, stored: Config): Config {
  const out: Config = {};
  for (const [name, member] of Object.entries(CONNECTORS[connector])) {
    const value = stored[name];
    if (member.secret) out[name] = value === undefined || value === null ? null : MASK;
    else if (name === 'headers' && isObject(value)) {
      out[name] = Object.fromEntries(Object.entries(value).map(([header, text]) => [header, isSecretHeader(header) ? MASK : text]));
    } else out[name] = value === undefined || value === null ? member.default : value;
  }
  return out;
}

/** The release problems of a configuration: each required member missing (or an empty list). */
export function missingForRelease(connector: ConnectorType, stored: Config): FieldError[] {
  return REQUIRED_FOR_RELEASE[connector]
    .filter((name) => stored[name] === undefined || stored[name] === null || (Array.isArray(stored[name]) && (stored[name] as unknown[]).length === 0))
    .map((name) => ({ field: `configuration.${name}`, message: 'is required to release the data source' }));
}
