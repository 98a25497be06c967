import type { Connector, ConnectorContext, ConnectorFactory, SourceRecord } from '../types.js';
import { depthExceededAt } from '../../http/json-body.js';
import { durationMs } from './durations.js';
import { DEFAULT_HTTP_LIMITS, describeUrl, fetchAnswer, PollFailure, type HttpLimits } from './http-answer.js';
import { pointerTokens, resolvePointer } from './json-pointer.js';
import { Backoff, pause, reasonOf, stateReporter, stoppable, unlessAborted } from './polling.js';

/**
 * The HTTP polling connector: GETs `url` every `interval`, conditionally (the previous answer's
 * ETag and Last-Modified), and delivers the records at `records_pointer` of each new answer. A
 * failed poll (an error status, no connection, a timeout, a body that is not JSON or too large)
 * is reported RETRYING and tried again with a growing wait, capped at the interval.
 */

export interface HttpConnectorLimits extends HttpLimits {
  /** The deepest nesting of arrays and objects an answer may have (as DATA_API_JSON_MAX_DEPTH for bodies). */
  maxDepth: number;
  /** Records per `deliver`: a large answer is committed in several transactions. */
  chunkSize: number;
}

const DEFAULTS: HttpConnectorLimits = { ...DEFAULT_HTTP_LIMITS, maxDepth: 64, chunkSize: 1_000 };
const MAX_BACKOFF_MS = 5 * 60_000;

interface HttpSettings {
  url: URL;
  headers: Headers;
  intervalMs: number;
  pointer: string | null;
}

/** A connector factory with other limits (the runtime passes the configured JSON depth). */
export function createHttpConnector(overrides: Partial<HttpConnectorLimits> = {}): ConnectorFactory {
  const limits = { ...DEFAULTS, ...overrides };
  return async (context) => {
    const stopper = stoppable(context.signal);
    const running = poll(context, limits, stopper.signal).catch((error: unknown) => {
      context.log.error({ err: reasonOf(error), dataSourceId: context.dataSource.id }, 'HTTP connector stopped on an unexpected error');
    });
    const connector: Connector = {
      async stop() {
        stopper.stop();
        await running;
      },
    };
    return connector;
  };
}

export const httpConnector: ConnectorFactory = createHttpConnector();

async function poll(context: ConnectorContext, limits: HttpConnectorLimits, signal: AbortSignal) {
  const report = stateReporter(context);
  const settings = readSettings(context.dataSource.configuration);
  if (typeof settings === 'string') {
    // Nothing to retry until the data source is changed (which restarts the pipeline).
    report({ state: 'RETRYING', message: settings });
    return;
  }
  const requestLimits = { ...limits, timeoutMs: Math.min(limits.timeoutMs, settings.intervalMs) };
  const backoff = new Backoff(Math.min(settings.intervalMs, MAX_BACKOFF_MS));
  let etag: string | null = null;
  let lastModified: string | null = null;
  const running = `polling ${describeUrl(settings.url)} every ${settings.intervalMs / 1000} s`;

  while (!signal.aborted) {
    const started = Date.now();
    let wait: number;
    try {
      const headers = new Headers(settings.headers);
      if (etag) headers.set('if-none-match', etag);
      if (lastModified) headers.set('if-modified-since', lastModified);
      const answer = await fetchAnswer(settings.url, headers, requestLimits, signal);
      if (answer.kind === 'body') {
        const records = recordsOf(answer.bytes, answer.receivedAt, settings, limits.maxDepth);
        for (let at = 0; at < records.length && !signal.aborted; at += limits.chunkSize) {
          // Awaited: the next chunk (and the next poll) waits for this one's commit.
          await unlessAborted(context.deliver({ records: records.slice(at, at + limits.chunkSize) }), signal);
        }
        if (signal.aborted) return;
        // Kept only once delivered: an answer that was not stored must not be skipped as "not modified".
        etag = answer.etag;
        lastModified = answer.lastModified;
      }
      report({ state: 'RUNNING', message: running });
      backoff.reset();
      wait = settings.intervalMs - (Date.now() - started);
    } catch (error) {
      if (signal.aborted) return;
      if (!(error instanceof PollFailure)) {
        // `deliver` rejects only when the pipeline is stopping: stop too.
        context.log.info({ dataSourceId: context.dataSource.id, reason: reasonOf(error) }, 'HTTP connector stops: delivery refused');
        return;
      }
      wait = backoff.next();
      report({ state: 'RETRYING', message: `${error.message}; retrying in ${Math.round(wait / 1000)} s` });
    }
    if (!(await pause(wait, signal))) return;
  }
}

/** The answer's records, or a PollFailure when the body is not JSON (a broken answer is retried, not stored). */
function recordsOf(bytes: Uint8Array, receivedAt: Date, settings: HttpSettings, maxDepth: number): SourceRecord[] {
  const where = describeUrl(settings.url);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new PollFailure(`${where}: the answer is not UTF-8 text`);
  }
  const tooDeepAt = depthExceededAt(text, maxDepth);
  if (tooDeepAt >= 0) throw new PollFailure(`${where}: the answer nests arrays and objects deeper than ${maxDepth} levels at offset ${tooDeepAt}`);
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new PollFailure(`${where}: the answer is not JSON (${reasonOf(error).slice(0, 120)})`);
  }
  if (settings.pointer === null) return recordsAt(document, receivedAt);
  const resolved = resolvePointer(document, settings.pointer);
  if (!resolved.found) return [{ value: undefined, unreadable: resolved.reason, receivedAt }];
  return recordsAt(resolved.value, receivedAt, settings.pointer);
}

function recordsAt(value: unknown, receivedAt: Date, pointer = ''): SourceRecord[] {
  if (Array.isArray(value)) return value.map((element) => ({ value: element, receivedAt }));
  if (value !== null && typeof value === 'object') return [{ value, receivedAt }];
  const what = value === null ? 'null' : typeof value;
  return [{ value, unreadable: `the answer holds ${what} at records_pointer "${pointer}", not an array or object of records`, receivedAt }];
}

/** The settings, or why the configuration cannot be polled (naming members, never their secret values). */
function readSettings(configuration: Record<string, unknown>): HttpSettings | string {
  const { url: rawUrl, method, headers: rawHeaders, interval, records_pointer: pointer, user, password } = configuration;
  if (typeof rawUrl !== 'string') return 'configuration.url is missing';
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return 'configuration.url is not an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'configuration.url must be an http or https URL';
  if (method !== undefined && method !== null && method !== 'GET') return 'configuration.method: only GET is supported';
  const intervalMs = interval === undefined || interval === null ? 60_000 : durationMs(interval);
  if (intervalMs === null || intervalMs < 1_000) return 'configuration.interval must be a duration of at least 1s';
  if (pointer !== undefined && pointer !== null && (typeof pointer !== 'string' || pointerTokens(pointer) === null)) {
    return 'configuration.records_pointer is not a JSON Pointer';
  }

  const headers = new Headers({ accept: 'application/json' });
  if (rawHeaders !== undefined && rawHeaders !== null) {
    if (typeof rawHeaders !== 'object' || Array.isArray(rawHeaders)) return 'configuration.headers must be an object';
    for (const [name, value] of Object.entries(rawHeaders)) {
      try {
        headers.set(name, String(value));
      } catch {
        // undici's own message quotes the value, which may be a secret: name the header only.
        return `configuration.headers: the header ${JSON.stringify(name.slice(0, 64))} is not a valid header`;
      }
    }
  }
  // Credentials written into the URL are used like user/password (fetch refuses a URL holding them).
  const urlUser = percentDecoded(url.username);
  const urlPassword = percentDecoded(url.password);
  url.username = '';
  url.password = '';
  const basicUser = typeof user === 'string' && user !== '' ? user : urlUser;
  const basicPassword = typeof user === 'string' && user !== '' ? (typeof password === 'string' ? password : '') : urlPassword;
  if (basicUser !== '') headers.set('authorization', `Basic ${Buffer.from(`${basicUser}:${basicPassword}`, 'utf8').toString('base64')}`);

  return { url, headers, intervalMs, pointer: typeof pointer === 'string' ? pointer : null };
}

const percentDecoded = (text: string) => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};

// Fatal: an answer in another charset is refused rather than stored garbled. A BOM is dropped.
const utf8 = new TextDecoder('utf-8', { fatal: true });
