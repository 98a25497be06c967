import { validationFailed } from '../errors.js';
import type { StaRequest } from './types.js';

/**
 * The JSON batch format of OData 4.01 (§19 of the JSON format), as FROST-Server takes it:
 * `{"requests": [{"id", "method", "url", "body"?, "headers"?, "atomicityGroup"?, "dependsOn"?}]}`.
 * The whole envelope is checked before any request runs, so that a malformed batch changes
 * nothing and its 400 names the first field at fault (`requests[3].method`).
 */

/** The contract's default for STA_BATCH_MAX_REQUESTS (`config.dataApi.limits.batchMaxRequests`). */
export const DEFAULT_BATCH_MAX_REQUESTS = 1000;

export interface BatchEntry {
  index: number;
  id: string;
  method: StaRequest['method'];
  /** As the client wrote it: relative to the service root, absolute, or starting with `$<id>`. */
  url: string;
  body: unknown;
  /** Header names lower-cased. */
  headers: Record<string, string>;
  atomicityGroup?: string;
  /** Ids of earlier requests or names of earlier atomicity groups. */
  dependsOn: string[];
  /** The earlier request whose created entity `$<id>` at the start of the url stands for. */
  urlReference?: string;
}

const METHODS: Record<string, StaRequest['method']> = { get: 'GET', post: 'POST', patch: 'PATCH', put: 'PUT', delete: 'DELETE' };
const KNOWN_FIELDS = new Set(['id', 'method', 'url', 'body', 'headers', 'atomicityGroup', 'dependsOn']);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `$1/Datastreams` → `1`; undefined when the url does not start with a reference. */
export const urlReferenceOf = (url: string) => /^\$([^/?]+)/.exec(url)?.[1];

/** Whether an absolute url lies below the base (`…/sensors/Things`, not `…/sensors2/Things`). */
export const isOnBase = (url: string, baseUrl: string) => url.startsWith(baseUrl) && /^($|[/?])/.test(url.slice(baseUrl.length));

/** The service-root-relative path of a url with the base and the `v1.1` alias taken off, without query. */
export function pathPartOf(url: string, baseUrl: string): string {
  let rest = url.split('?', 1)[0] ?? '';
  if (isOnBase(rest, baseUrl)) rest = rest.slice(baseUrl.length);
  rest = rest.replace(/^\/+/, '');
  return withoutTrailingSlashes(rest.replace(/^v1\.1(\/|$)/, ''));
}

/**
 * By hand, not `replace(/\/+$/, '')`: that pattern retries from every slash of a run that does not
 * end the text, so a batch url with a megabyte of slashes in its middle takes quadratic time.
 */
export function withoutTrailingSlashes(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 0x2f) end--;
  return text.slice(0, end);
}

export function parseBatchEnvelope(body: unknown, baseUrl: string, maxRequests = DEFAULT_BATCH_MAX_REQUESTS): BatchEntry[] {
  if (!isObject(body) || !Array.isArray(body['requests'])) throw validationFailed('requests', 'must be an array of requests');
  const requests = body['requests'] as unknown[];
  // Counted before any request is looked at: the envelope's own checks are linear in its length.
  if (requests.length > maxRequests) {
    throw validationFailed('requests', `holds ${requests.length} requests; a batch takes at most ${maxRequests} (limit batchMaxRequests)`);
  }
  const entries: BatchEntry[] = [];
  const requestIds = new Set<string>();
  const closedGroups = new Set<string>();
  const allGroups = new Set<string>();
  requests.forEach((raw, index) => {
    const entry = parseEntry(raw, index, baseUrl);
    const field = `requests[${index}]`;
    if (requestIds.has(entry.id) || allGroups.has(entry.id)) throw validationFailed(`${field}.id`, `${entry.id} is used already`);
    const previousGroup = entries[index - 1]?.atomicityGroup;
    if (entry.atomicityGroup !== undefined) {
      // OData asks a group's requests to be adjacent; it is also what lets one transaction hold them.
      if (closedGroups.has(entry.atomicityGroup) || requestIds.has(entry.atomicityGroup)) {
        throw validationFailed(`${field}.atomicityGroup`, `${entry.atomicityGroup} names an earlier request or a group that is not adjacent`);
      }
    }
    if (previousGroup !== undefined && previousGroup !== entry.atomicityGroup) closedGroups.add(previousGroup);
    if (entry.atomicityGroup !== undefined) allGroups.add(entry.atomicityGroup);
    entry.dependsOn.forEach((name, k) => {
      if (name === entry.atomicityGroup) throw validationFailed(`${field}.dependsOn[${k}]`, 'a request cannot depend on its own atomicity group');
      if (!requestIds.has(name) && !closedGroups.has(name)) throw validationFailed(`${field}.dependsOn[${k}]`, `${name} is no earlier request or atomicity group`);
    });
    if (entry.urlReference !== undefined && !requestIds.has(entry.urlReference)) {
      throw validationFailed(`${field}.url`, `$${entry.urlReference} names no earlier request`);
    }
    requestIds.add(entry.id);
    entries.push(entry);
  });
  return entries;
}

function parseEntry(raw: unknown, index: number, baseUrl: string): BatchEntry {
  const field = `requests[${index}]`;
  if (!isObject(raw)) throw validationFailed(field, 'must be a request object');
  const unknown = Object.keys(raw).find((key) => !KNOWN_FIELDS.has(key));
  if (unknown !== undefined) throw validationFailed(`${field}.${unknown}`, 'is not a field of a batch request');
  const id = raw['id'];
  if (typeof id !== 'string' || id === '' || id.startsWith('$')) throw validationFailed(`${field}.id`, 'must be a non-empty string (not starting with $)');
  const method = typeof raw['method'] === 'string' ? METHODS[raw['method'].toLowerCase()] : undefined;
  if (!method) throw validationFailed(`${field}.method`, 'must be one of get, post, patch, put, delete');
  const url = raw['url'];
  if (typeof url !== 'string' || url.trim() === '') throw validationFailed(`${field}.url`, 'must be a non-empty string');
  const path = pathPartOf(url, baseUrl);
  if (path === '$batch') throw validationFailed(`${field}.url`, 'a batch cannot contain another $batch');
  if (/^[a-z][a-z0-9+.-]*:/i.test(url) && !isOnBase(url, baseUrl)) throw validationFailed(`${field}.url`, `is not on this service (${baseUrl})`);
  const entry: BatchEntry = { index, id, method, url, body: raw['body'], headers: parseHeaders(raw['headers'], `${field}.headers`), dependsOn: [] };
  const reference = urlReferenceOf(url);
  if (reference !== undefined) entry.urlReference = reference;
  const group = raw['atomicityGroup'];
  if (group !== undefined) {
    if (typeof group !== 'string' || group === '') throw validationFailed(`${field}.atomicityGroup`, 'must be a non-empty string');
    entry.atomicityGroup = group;
  }
  const dependsOn = raw['dependsOn'];
  if (dependsOn !== undefined) {
    if (!Array.isArray(dependsOn)) throw validationFailed(`${field}.dependsOn`, 'must be an array of request ids or atomicity groups');
    dependsOn.forEach((name, k) => {
      if (typeof name !== 'string' || name === '') throw validationFailed(`${field}.dependsOn[${k}]`, 'must be a request id or an atomicity group');
    });
    entry.dependsOn = dependsOn as string[];
  }
  return entry;
}

function parseHeaders(raw: unknown, field: string): Record<string, string> {
  if (raw === undefined) return {};
  if (!isObject(raw)) throw validationFailed(field, 'must be an object of header names and string values');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (typeof value !== 'string') throw validationFailed(`${field}.${name}`, 'must be a string');
    headers[name.toLowerCase()] = value;
  }
  return headers;
}
