import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { AppError, validationFailed } from '../errors.js';
import { depthExceededAt } from '../http/json-body.js';
import { DEFAULT_BATCH_MAX_REQUESTS } from './batch-envelope.js';

/**
 * The multipart batch format of the SensorThings 1.1 standard (OData 4.0 §11.7.7): a
 * `multipart/mixed` body whose parts are `application/http` requests, or change sets (a nested
 * `multipart/mixed` of requests that succeed or fail together). A part's `Content-ID` names it for
 * `$<Content-ID>` in the urls and bodies of later requests.
 *
 * Nothing here runs a request: the body is turned into the JSON batch envelope (`{"requests": […]}`,
 * a change set an atomicity group), which then goes through the very same checks, authorization
 * and execution as a JSON batch; the JSON answer is written back in the multipart format. Parsing
 * is bounded: the body's size (the route's body limit), the number of requests (the batch limit),
 * each part's header section and header count, and the nesting of change sets (one level).
 */

export interface MultipartLimits {
  /** STA_BATCH_MAX_REQUESTS: requests in the whole batch, change set members included. */
  maxRequests?: number;
  /** DATA_API_JSON_MAX_DEPTH: nesting of each request's JSON body. */
  jsonMaxDepth: number;
}

/**
 * A request line's url as the envelope takes it. The standard's examples write absolute paths
 * (`POST /v1.1/Things HTTP/1.1` with a Host header): a path on the public base becomes the
 * absolute url, a path starting with the version alias is relative to the service root.
 */
function envelopeUrl(url: string, baseUrl: string): string {
  if (!url.startsWith('/')) return url;
  const base = new URL(baseUrl);
  if (url === base.pathname || url.startsWith(`${base.pathname}/`) || url.startsWith(`${base.pathname}?`)) return `${base.origin}${url}`;
  const alias = /^\/v1\.[01](\/|$)/.exec(url);
  return alias ? url.slice(alias[0].length) : url;
}

/** The batch as parts: what the answer is written back from. */
export interface MultipartBatch {
  /** The JSON batch envelope the requests were turned into. */
  envelope: { requests: Array<Record<string, unknown>> };
  /** In order: a request by its envelope id, or a change set by its members' ids. */
  layout: Array<{ request: string } | { changeSet: string[] }>;
  /** Envelope id → the Content-ID the client gave, echoed in the answer. */
  contentIds: Map<string, string>;
}

/** The longest header section of a part or of an inner request (request line included). */
const MAX_HEADER_BYTES = 16 * 1024;
const MAX_HEADER_LINES = 100;
/** RFC 2046 §5.1.1: 1 to 70 characters of this set, not ending in a space. */
const BOUNDARY = /^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/;
const METHODS = new Set(['GET', 'POST', 'PATCH', 'PUT', 'DELETE']);

const malformed = (detail: string) => validationFailed('body', detail, `The multipart batch is malformed: ${detail}`);

/** Whether a Content-Type is `multipart/mixed` (any parameters). */
export const isMultipartMixed = (contentType: string | undefined) => /^\s*multipart\/mixed\s*(;|$)/i.test(contentType ?? '');

/** The `boundary` parameter of a `multipart/mixed` Content-Type, checked. */
export function boundaryOf(contentType: string, field = 'Content-Type'): string {
  let boundary: string | undefined;
  for (const parameter of contentType.split(';').slice(1)) {
    const at = parameter.indexOf('=');
    if (at < 0) continue;
    if (parameter.slice(0, at).trim().toLowerCase() !== 'boundary') continue;
    boundary = parameter.slice(at + 1).trim().replace(/^"(.*)"$/, '$1');
  }
  if (boundary === undefined || !BOUNDARY.test(boundary)) {
    throw validationFailed(field, 'a multipart/mixed body needs a boundary parameter of 1 to 70 characters (RFC 2046)');
  }
  return boundary;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Turns a multipart batch into the JSON batch envelope; throws 400 VALIDATION_FAILED when it is malformed. */
export function parseMultipartBatch(body: Buffer, contentType: string, baseUrl: string, limits: MultipartLimits): MultipartBatch {
  const boundary = boundaryOf(contentType);
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw malformed('it is not valid UTF-8');
  }
  const maxRequests = limits.maxRequests ?? DEFAULT_BATCH_MAX_REQUESTS;
  const counter = { requests: 0, max: maxRequests };
  const raw: Array<RawRequest | RawRequest[]> = [];
  for (const part of splitParts(text, boundary, 'the batch', counter)) {
    const headers = readHeaders(part, 'a part of the batch');
    const type = headers.fields.get('content-type') ?? '';
    if (isMultipartMixed(type)) {
      // Counted by its members, not as a request itself (a change set holds at least one).
      counter.requests--;
      const inner = boundaryOf(type, 'Content-Type of a change set');
      const members: RawRequest[] = [];
      for (const memberPart of splitParts(part.slice(headers.end), inner, 'a change set', counter)) {
        const memberHeaders = readHeaders(memberPart, 'a part of a change set');
        if (isMultipartMixed(memberHeaders.fields.get('content-type'))) throw malformed('a change set cannot hold another change set');
        const request = readRequest(memberPart, memberHeaders, 'a part of a change set');
        if (request.method === 'GET') throw malformed('a change set holds no GET requests (OData 4.0 §11.7.4)');
        members.push(request);
      }
      if (members.length === 0) throw malformed('a change set holds no request');
      raw.push(members);
    } else {
      raw.push(readRequest(part, headers, 'a part of the batch'));
    }
  }
  return toEnvelope(raw, baseUrl, limits.jsonMaxDepth);
}

interface RawRequest {
  method: string;
  url: string;
  contentId?: string;
  headers: Map<string, string>;
  body: string;
}

/**
 * The parts between the delimiters `--boundary` (each at the start of a line; CRLF or LF), the
 * preamble before the first and the epilogue after the closing `--boundary--` ignored. Counts
 * the parts against the batch's limit as it goes, so that a body of a million tiny parts stops
 * at the limit.
 */
function splitParts(text: string, boundary: string, what: string, counter: { requests: number; max: number }): string[] {
  const delimiter = `--${boundary}`;
  const parts: string[] = [];
  let at = delimiterAt(text, delimiter, 0);
  if (at < 0) throw malformed(`${what} has no part starting with --${boundary}`);
  for (;;) {
    let next = at + delimiter.length;
    if (text.startsWith('--', next)) return parts;
    // Transport padding (RFC 2046: linear whitespace) before the line break.
    while (text[next] === ' ' || text[next] === '\t') next++;
    if (text.startsWith('\r\n', next)) next += 2;
    else if (text[next] === '\n') next += 1;
    else throw malformed(`a delimiter of ${what} is not followed by a line break`);
    const end = delimiterAt(text, delimiter, next);
    if (end < 0) throw malformed(`${what} does not end with --${boundary}--`);
    // The line break before a delimiter belongs to it.
    const lineBreak = text[end - 1] === '\n' ? (text[end - 2] === '\r' ? 2 : 1) : 0;
    parts.push(text.slice(next, Math.max(next, end - lineBreak)));
    counter.requests++;
    if (counter.requests > counter.max) {
      throw validationFailed('body', `holds more than ${counter.max} requests; a batch takes at most ${counter.max} (limit batchMaxRequests)`);
    }
    at = end;
  }
}

/** Where the next delimiter at the start of a line begins (the body's start counts as one), or -1. */
function delimiterAt(text: string, delimiter: string, from: number): number {
  if (from === 0 && text.startsWith(delimiter)) return 0;
  let at = text.indexOf(`\n${delimiter}`, Math.max(0, from - 1));
  return at < 0 ? -1 : at + 1;
}

/** A header section (up to the blank line): lower-cased names, bounded; `end` is where the rest begins. */
function readHeaders(text: string, what: string, firstLine = false): { start?: string; fields: Map<string, string>; end: number } {
  const blank = /\r?\n\r?\n/.exec(text.slice(0, MAX_HEADER_BYTES + 4));
  // A part may be headers alone (a GET without a body, the last line break taken by the delimiter).
  const sectionEnd = blank ? blank.index : text.length;
  if (sectionEnd > MAX_HEADER_BYTES) throw malformed(`the headers of ${what} are longer than ${MAX_HEADER_BYTES} bytes`);
  const lines = text.slice(0, sectionEnd).split(/\r?\n/);
  if (lines.length > MAX_HEADER_LINES) throw malformed(`${what} has more than ${MAX_HEADER_LINES} header lines`);
  const start = firstLine ? lines.shift() : undefined;
  const fields = new Map<string, string>();
  for (const line of lines) {
    if (line === '') continue;
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trim().toLowerCase() : '';
    if (!/^[!#$%&'*+\-.^_`|~0-9a-z]+$/.test(name)) throw malformed(`${what} has a header line that is not "Name: value"`);
    fields.set(name, line.slice(colon + 1).trim());
  }
  return { ...(start !== undefined ? { start } : {}), fields, end: blank ? blank.index + blank[0].length : text.length };
}

/** One `application/http` part: its MIME headers, then the request line, headers and body. */
function readRequest(part: string, headers: ReturnType<typeof readHeaders>, what: string): RawRequest {
  const type = (headers.fields.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase();
  if (type !== 'application/http') throw malformed(`${what} must be of Content-Type application/http or multipart/mixed`);
  const encoding = headers.fields.get('content-transfer-encoding');
  if (encoding !== undefined && encoding.toLowerCase() !== 'binary') throw malformed(`${what} has Content-Transfer-Encoding ${printable(encoding)}; only binary is taken`);
  const message = part.slice(headers.end);
  const inner = readHeaders(message, `the request in ${what}`, true);
  const requestLine = /^([A-Za-z]+) (\S+)(?: HTTP\/1\.[01])?$/.exec(inner.start ?? '');
  if (!requestLine) throw malformed(`the request in ${what} does not start with a request line "METHOD url HTTP/1.1"`);
  const method = requestLine[1]!.toUpperCase();
  if (!METHODS.has(method)) throw malformed(`the request in ${what} has the method ${printable(requestLine[1]!)}; one of GET, POST, PATCH, PUT, DELETE is taken`);
  const contentId = headers.fields.get('content-id') ?? inner.fields.get('content-id');
  return {
    method, url: requestLine[2]!, headers: inner.fields, body: message.slice(inner.end),
    ...(contentId !== undefined ? { contentId: contentId.replace(/^<(.*)>$/, '$1') } : {}),
  };
}

// The headers of a request inside the batch that reach it; the others (Host, Content-Length) do not.
const PASSED_HEADERS = ['content-type', 'prefer', 'accept', 'if-match', 'if-none-match'];

function toEnvelope(raw: Array<RawRequest | RawRequest[]>, baseUrl: string, jsonMaxDepth: number): MultipartBatch {
  // Names for parts without a Content-ID and for change sets, different from every Content-ID.
  const taken = new Set(raw.flat().map((request) => request.contentId).filter((id): id is string => id !== undefined));
  const fresh = (stem: string) => {
    let name = stem;
    while (taken.has(name)) name = `_${name}`;
    taken.add(name);
    return name;
  };
  const requests: Array<Record<string, unknown>> = [];
  const layout: MultipartBatch['layout'] = [];
  const contentIds = new Map<string, string>();
  const add = (request: RawRequest, group?: string) => {
    const index = requests.length;
    const id = request.contentId ?? fresh(`part${index + 1}`);
    if (request.contentId !== undefined) contentIds.set(id, request.contentId);
    const headers = Object.fromEntries(PASSED_HEADERS.filter((name) => request.headers.has(name)).map((name) => [name, request.headers.get(name)!]));
    const body = bodyOf(request, index, jsonMaxDepth);
    requests.push({
      id, method: request.method.toLowerCase(), url: envelopeUrl(request.url, baseUrl),
      ...(body !== undefined ? { body } : {}),
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      ...(group !== undefined ? { atomicityGroup: group } : {}),
    });
    return id;
  };
  raw.forEach((item, k) => {
    if (!Array.isArray(item)) return void layout.push({ request: add(item) });
    const group = fresh(`changeset${k + 1}`);
    layout.push({ changeSet: item.map((member) => add(member, group)) });
  });
  return { envelope: { requests }, layout, contentIds };
}

/** A request's JSON body, parsed within the depth limit; undefined when it has none. */
function bodyOf(request: RawRequest, index: number, jsonMaxDepth: number): unknown {
  const field = `requests[${index}].body`;
  if (request.body.trim() === '') return undefined;
  const type = request.headers.get('content-type');
  if (type !== undefined && !/^\s*application\/([\w.+-]+\+)?json\s*(;|$)/i.test(type)) {
    throw validationFailed(field, `must be JSON (Content-Type: application/json), not ${printable(type)}`);
  }
  const tooDeepAt = depthExceededAt(request.body, jsonMaxDepth);
  if (tooDeepAt >= 0) throw validationFailed(field, `nests arrays and objects deeper than ${jsonMaxDepth} levels at offset ${tooDeepAt} (limit jsonMaxDepth)`);
  try {
    return JSON.parse(request.body) as unknown;
  } catch (error) {
    throw validationFailed(field, `is not JSON: ${(error as Error).message}`);
  }
}

/** One answer of the JSON batch format (what `serveBatch` and upstream mode answer). */
interface JsonAnswer { id?: unknown; status?: unknown; headers?: unknown; body?: unknown }

/**
 * The JSON batch answer written as the multipart answer: one `application/http` part per request,
 * a nested `multipart/mixed` per change set that succeeded, and for a change set that failed the
 * single answer of the request that made it fail (OData 4.0 §11.7.4).
 */
export function multipartAnswer(batch: MultipartBatch, responses: readonly unknown[]): { contentType: string; text: string } {
  const byId = new Map<string, JsonAnswer>();
  for (const response of responses) {
    const answer = response as JsonAnswer;
    if (typeof answer?.id === 'string' && !byId.has(answer.id)) byId.set(answer.id, answer);
  }
  const boundary = `batchresponse_${randomUUID()}`;
  const parts: string[] = [];
  for (const item of batch.layout) {
    if ('request' in item) {
      const answer = byId.get(item.request);
      if (answer) parts.push(httpPart(answer, batch.contentIds.get(item.request)));
      continue;
    }
    const answers = item.changeSet.map((id) => byId.get(id)).filter((answer): answer is JsonAnswer => answer !== undefined);
    const failed = answers.filter((answer) => statusOf(answer) >= 400);
    if (failed.length > 0) {
      const cause = failed.find((answer) => statusOf(answer) !== 424) ?? failed[0]!;
      parts.push(httpPart(cause, batch.contentIds.get(String(cause.id))));
      continue;
    }
    const inner = `changesetresponse_${randomUUID()}`;
    const members = answers.map((answer) => httpPart(answer, batch.contentIds.get(String(answer.id))));
    parts.push(`Content-Type: multipart/mixed; boundary=${inner}\r\n\r\n${joinParts(members, inner)}`);
  }
  return { contentType: `multipart/mixed; boundary=${boundary}`, text: joinParts(parts, boundary) };
}

const statusOf = (answer: JsonAnswer) => (typeof answer.status === 'number' ? answer.status : 500);

function joinParts(parts: string[], boundary: string): string {
  return `${parts.map((part) => `--${boundary}\r\n${part}\r\n`).join('')}--${boundary}--\r\n`;
}

function httpPart(answer: JsonAnswer, contentId: string | undefined): string {
  const status = statusOf(answer);
  const headers = new Map<string, string>();
  if (typeof answer.headers === 'object' && answer.headers !== null) {
    for (const [name, value] of Object.entries(answer.headers)) if (typeof value === 'string') headers.set(name.toLowerCase(), value);
  }
  let body = '';
  if (answer.body !== undefined) {
    body = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
    if (!headers.has('content-type')) headers.set('content-type', typeof answer.body === 'string' ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8');
  }
  const lines = [
    'Content-Type: application/http',
    'Content-Transfer-Encoding: binary',
    ...(contentId !== undefined ? [`Content-ID: ${contentId}`] : []),
    '',
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`.trimEnd(),
    ...[...headers].map(([name, value]) => `${headerName(name)}: ${value}`),
  ];
  if (answer.body !== undefined) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}

const headerName = (name: string) => name.replace(/(^|-)([a-z])/g, (_all, dash: string, letter: string) => dash + letter.toUpperCase());

// Text from the request that goes back into a problem: bounded, printable.
const printable = (text: string) => text.replace(/[^\x20-\x7e]/g, '?').slice(0, 40);

/** Used by the gateway: a `multipart/mixed` body on anything but `$batch`. */
export const multipartElsewhere = () =>
  new AppError('UNSUPPORTED_MEDIA_TYPE', 'Only $batch takes a multipart/mixed body; SensorThings requests take JSON (Content-Type: application/json)');
