import { createHash } from 'node:crypto';
import type { DataSourceSpec } from '../types.js';
import { durationMs } from './durations.js';

/**
 * An MQTT data source's `configuration` (secrets opened) read into what the connector uses. The
 * management API checked it when it was stored and when the data source was released; it is read
 * defensively all the same, and a configuration the connector cannot run throws an error naming
 * the member (never its value: `password` may be the one at fault).
 */

export interface BrokerUrl {
  /** What MQTT.js connects to: scheme, host, port and (WebSocket) path, no credentials. */
  address: string;
  /** The same for messages and logs. */
  shown: string;
  /** Credentials written into the URL (`tcp://user:pw@host`): used where `user`/`password` are not given. */
  username?: string;
  password?: string;
}

export interface MqttSettings {
  urls: BrokerUrl[];
  topics: string[];
  qos: 0 | 1 | 2;
  clientId: string;
  keepaliveSeconds: number;
  connectTimeoutMs: number;
  username: string | undefined;
  password: string | undefined;
}

const DEFAULT_KEEPALIVE_SECONDS = 60;
const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;
/** The longest keepalive MQTT can carry (a 16-bit number of seconds). */
const MAX_KEEPALIVE_SECONDS = 65_535;

/** Scheme as configured → scheme MQTT.js knows, without and with `tls.enabled`. */
const SCHEMES: Record<string, { plain: string; secure: string }> = {
  tcp: { plain: 'mqtt', secure: 'mqtts' },
  mqtt: { plain: 'mqtt', secure: 'mqtts' },
  ssl: { plain: 'mqtts', secure: 'mqtts' },
  tls: { plain: 'mqtts', secure: 'mqtts' },
  mqtts: { plain: 'mqtts', secure: 'mqtts' },
  ws: { plain: 'ws', secure: 'wss' },
  wss: { plain: 'wss', secure: 'wss' },
};

export function mqttSettings(pipelineId: string, dataSource: DataSourceSpec): MqttSettings {
  const configuration = dataSource.configuration;
  const tlsMember = configuration['tls'];
  const tls = tlsMember !== null && typeof tlsMember === 'object' && (tlsMember as Record<string, unknown>)['enabled'] === true;
  const urls = stringList(configuration['urls'], 'urls').map((url) => brokerUrl(url, tls));
  const topics = [...new Set(stringList(configuration['topics'], 'topics'))];
  const qos = configuration['qos'];
  if (qos !== 0 && qos !== 1 && qos !== 2) throw invalid('qos', 'must be 0, 1 or 2');
  const keepaliveMs = optionalDuration(configuration['keepalive'], 'keepalive');
  const connectTimeoutMs = optionalDuration(configuration['connect_timeout'], 'connect_timeout');
  return {
    urls,
    topics,
    qos,
    clientId: optionalString(configuration['client_id'], 'client_id') || defaultClientId(pipelineId, dataSource.id),
    keepaliveSeconds: keepaliveMs === null ? DEFAULT_KEEPALIVE_SECONDS : Math.min(MAX_KEEPALIVE_SECONDS, Math.ceil(keepaliveMs / 1000)),
    connectTimeoutMs: connectTimeoutMs === null || connectTimeoutMs === 0 ? DEFAULT_CONNECT_TIMEOUT_MS : connectTimeoutMs,
    username: optionalString(configuration['user'], 'user') || undefined,
    password: optionalString(configuration['password'], 'password') ?? undefined,
  };
}

/**
 * 23 characters of [0-9a-z], which every MQTT 3.1.1 broker must accept (3.1.3.1), the same on every
 * start of the pipeline: the broker keeps the persistent session under it.
 */
export function defaultClientId(pipelineId: string, dataSourceId: string): string {
  return `pl${createHash('sha256').update(`${pipelineId}/${dataSourceId}`).digest('hex').slice(0, 21)}`;
}

function brokerUrl(text: string, tls: boolean): BrokerUrl {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid('urls', 'must be broker URLs such as tcp://broker:1883');
  }
  const scheme = SCHEMES[url.protocol.replace(/:$/, '').toLowerCase()];
  if (scheme === undefined || url.hostname === '') {
    throw invalid('urls', `must be broker URLs with a host and one of the schemes ${Object.keys(SCHEMES).join(', ')}`);
  }
  const protocol = tls ? scheme.secure : scheme.plain;
  const path = protocol.startsWith('ws') ? `${url.pathname}${url.search}` : '';
  // Credentials stay out of the address, which messages and logs show.
  const address = `${protocol}://${url.host}${path}`;
  const found: BrokerUrl = { address, shown: address };
  if (url.username !== '') found.username = percentDecoded(url.username);
  if (url.password !== '') found.password = percentDecoded(url.password);
  return found;
}

/** A URL's user or password, percent-decoded where that is valid (else as written). */
function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function stringList(value: unknown, member: string): string[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every((item) => typeof item === 'string' && item.length > 0)) {
    throw invalid(member, 'must be a non-empty array of non-empty strings');
  }
  return value as string[];
}

function optionalString(value: unknown, member: string): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'string') throw invalid(member, 'must be a string');
  return value;
}

function optionalDuration(value: unknown, member: string): number | null {
  if (value === null || value === undefined) return null;
  const ms = durationMs(value);
  if (ms === null) throw invalid(member, 'must be a duration such as 30s, 5m or 1h30m');
  return ms;
}

const invalid = (member: string, problem: string) => new Error(`MQTT data source: configuration.${member} ${problem}`);
