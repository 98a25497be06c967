/**
 * One bounded HTTP GET of a polled source: redirects followed by hand (a few, http and https
 * only, credentials dropped when one leaves the origin), a deadline over the whole exchange, and
 * a body read up to a limit and no further. Every failure is a `PollFailure` whose message names
 * the URL without credentials or query, fit for a pipeline's status.
 */

export interface HttpLimits {
  /** The longest a request may take, body included; the connector lowers it to the interval. */
  timeoutMs: number;
  /** The largest answer body read, after content decoding; a larger one is refused, not buffered. */
  maxBodyBytes: number;
  maxRedirects: number;
}

export const DEFAULT_HTTP_LIMITS: HttpLimits = { timeoutMs: 30_000, maxBodyBytes: 16 * 1024 * 1024, maxRedirects: 5 };

export type Answer =
  | { kind: 'not-modified' }
  | { kind: 'body'; bytes: Uint8Array; etag: string | null; lastModified: string | null; receivedAt: Date };

/** A poll that got no usable answer; the message is safe to show (no credential, no query). */
export class PollFailure extends Error {}

/** The URL as status messages name it: origin and path, never userinfo or query (either may carry a key). */
export const describeUrl = (url: URL) => `${url.origin}${url.pathname}`;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Headers that carry credentials: not sent on to another origin after a redirect. */
const isCredentialHeader = (name: string) => /^(authorization|proxy-authorization|cookie)$/i.test(name) || /token|secret|key/i.test(name);

export async function fetchAnswer(start: URL, headers: Headers, limits: HttpLimits, stop: AbortSignal): Promise<Answer> {
  const signal = AbortSignal.any([stop, AbortSignal.timeout(limits.timeoutMs)]);
  let url = start;
  let sent = headers;
  try {
    for (let redirects = 0; ; redirects++) {
      const response = await fetch(url, { method: 'GET', headers: sent, redirect: 'manual', signal });
      if (REDIRECTS.has(response.status)) {
        await response.body?.cancel();
        if (redirects >= limits.maxRedirects) throw new PollFailure(`${describeUrl(start)}: more than ${limits.maxRedirects} redirects`);
        const next = redirectTarget(url, response.headers.get('location'));
        if (next.origin !== url.origin) sent = withoutCredentials(sent);
        url = next;
        continue;
      }
      if (response.status === 304) {
        await response.body?.cancel();
        return { kind: 'not-modified' };
      }
      if (response.status < 200 || response.status > 299) {
        await response.body?.cancel();
        throw new PollFailure(`${describeUrl(url)} answered ${response.status}${response.statusText ? ` ${printable(response.statusText)}` : ''}`);
      }
      const bytes = await readBounded(response, limits.maxBodyBytes, url);
      return {
        kind: 'body', bytes, receivedAt: new Date(),
        etag: response.headers.get('etag'), lastModified: response.headers.get('last-modified'),
      };
    }
  } catch (error) {
    if (error instanceof PollFailure || stop.aborted) throw error;
    throw new PollFailure(`${describeUrl(url)}: ${fetchProblem(error, limits.timeoutMs)}`);
  }
}

function redirectTarget(from: URL, location: string | null): URL {
  let next: URL;
  try {
    if (!location) throw new Error('no Location');
    next = new URL(location, from);
  } catch {
    throw new PollFailure(`${describeUrl(from)} redirected without a usable Location`);
  }
  if (next.protocol !== 'http:' && next.protocol !== 'https:') {
    throw new PollFailure(`${describeUrl(from)} redirected to a ${printable(next.protocol)} URL (only http and https are followed)`);
  }
  // fetch refuses a URL with userinfo; credentials come from the data source, never from an answer.
  next.username = '';
  next.password = '';
  return next;
}

function withoutCredentials(headers: Headers): Headers {
  const kept = new Headers();
  for (const [name, value] of headers) if (!isCredentialHeader(name)) kept.append(name, value);
  return kept;
}

/** The body, or a refusal as soon as it is known to pass `max` bytes (declared or counted). */
async function readBounded(response: Response, max: number, url: URL): Promise<Uint8Array> {
  const tooLarge = () => new PollFailure(`${describeUrl(url)}: the answer is larger than ${max} bytes, refused`);
  const declared = Number(response.headers.get('content-length') ?? NaN);
  // A declared length counts encoded bytes; it only proves too much when nothing is compressed.
  if (declared > max && !response.headers.get('content-encoding')) {
    await response.body?.cancel();
    throw tooLarge();
  }
  if (!response.body) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/** What went wrong with a request, in words: undici's "fetch failed" says nothing by itself. */
function fetchProblem(error: unknown, timeoutMs: number): string {
  if (error instanceof DOMException && error.name === 'TimeoutError') return `no answer within ${timeoutMs / 1000} s`;
  const cause = error instanceof Error ? (error.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  if (cause && typeof cause.code === 'string') return `request failed (${cause.code})`;
  if (cause && typeof cause.message === 'string') return `request failed (${printable(cause.message)})`;
  return `request failed (${printable(error instanceof Error ? error.message : String(error))})`;
}

// Text from the far side or from an error goes into a status: bounded and printable.
const printable = (text: string) => text.replace(/[^\x20-\x7e]/g, '?').slice(0, 120);
