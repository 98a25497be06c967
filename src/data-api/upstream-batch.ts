import { accessDenied, validationFailed } from '../errors.js';
import type { DataApiLimits } from '../config.js';
import { batchErrorResponse, failedDependency, isOnBase, parseBatchEnvelope, type BatchEntry, type BatchResponse } from '../sta/index.js';
import { encodePath, normalisedSegments, rebuildQuery } from './upstream-path.js';

/**
 * A `$batch` in upstream mode, authorized request by request as our own server does it: a GET
 * needs the read right, anything else the write right. The upstream trusts the gateway, so it
 * only ever receives a batch the gateway rebuilt from what it parsed, holding the requests the
 * caller may make. A refused request answers 403 in the batch's answer, as ours does; a request
 * that depends on it (`dependsOn`, a `$id` in its url or body) answers 424, and so does every
 * other member of its atomicity group (the group is all or nothing). The gateway answers those
 * itself and merges them, in order, with the upstream's answers to the rest.
 */

export interface Rights { read: boolean; write: boolean }

export interface BatchPlan {
  /** Every request of the batch, in order: what the gateway answers itself, or `undefined` (the upstream does). */
  answers: Array<{ entry: BatchEntry; local?: BatchResponse }>;
  /** The batch the upstream receives; null when the gateway answers every request itself. */
  forward: { requests: Array<Record<string, unknown>> } | null;
}

// The headers a request inside the batch may carry to the upstream; anything else is dropped.
const ENTRY_HEADERS = ['accept', 'content-type', 'prefer', 'if-match', 'if-none-match'];

export function planUpstreamBatch(body: unknown, publicBase: string, rights: Rights, limits: DataApiLimits): BatchPlan {
  const entries = parseBatchEnvelope(body, publicBase, limits.batchMaxRequests);
  // Every url is rebuilt (and checked to stay on the base) before anything is decided.
  const urls = entries.map((entry) => rebuildEntryUrl(entry, publicBase, limits));
  const failed = new Set<string>();
  const answers: BatchPlan['answers'] = [];
  for (let start = 0; start < entries.length;) {
    const group = entries[start]!.atomicityGroup;
    let end = start + 1;
    while (group !== undefined && end < entries.length && entries[end]!.atomicityGroup === group) end++;
    const members = entries.slice(start, end);
    const refusal = members.map((entry) => ({ entry, error: refusalOf(entry, rights, failed) })).find((item) => item.error !== undefined);
    for (const entry of members) {
      if (!refusal) {
        answers.push({ entry });
      } else if (entry === refusal.entry) {
        answers.push({ entry, local: batchErrorResponse(entry, publicBase, refusal.error!) });
      } else {
        const error = group === undefined ? refusal.error! : failedDependency(`The atomicity group ${group} was rolled back: request ${refusal.entry.id} failed`);
        answers.push({ entry, local: batchErrorResponse(entry, publicBase, error) });
      }
      if (refusal) failed.add(entry.id);
    }
    if (refusal && group !== undefined) failed.add(group);
    start = end;
  }
  const forwarded = answers.filter((answer) => answer.local === undefined).map(({ entry }) => rebuiltEntry(entry, urls[entry.index]!));
  return { answers, forward: forwarded.length > 0 ? { requests: forwarded } : null };
}

/** Why the gateway answers this request itself (403 or 424), or undefined when it may go upstream. */
function refusalOf(entry: BatchEntry, rights: Rights, failed: ReadonlySet<string>) {
  // In our server's order: dependencies and the url's reference, then the right, then the body's references.
  const blocker = [...entry.dependsOn, ...(entry.urlReference !== undefined ? [entry.urlReference] : [])].find((name) => failed.has(name));
  if (blocker !== undefined) return failedDependency(`Request ${entry.id} depends on ${blocker}, which failed`);
  const right = entry.method === 'GET' ? 'read' : 'write';
  if (!rights[right]) return accessDenied(right === 'read' ? 'DATASET_PAYLOAD_READ' : 'DATASET_PAYLOAD_WRITE');
  const referenced = entry.method === 'GET' || entry.method === 'DELETE' ? undefined : referencesIn(entry.body).find((name) => failed.has(name));
  if (referenced !== undefined) return failedDependency(`$${referenced} refers to request ${referenced}, which failed`);
  return undefined;
}

/**
 * The names `{"@iot.id": "$<name>"}` refers to anywhere in a body. Walked with a stack of its own:
 * a deeply nested body must not exhaust the call stack.
 */
function referencesIn(body: unknown): string[] {
  const names: string[] = [];
  const pending: unknown[] = [body];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value !== 'object' || value === null) continue;
    if (Array.isArray(value)) {
      for (const item of value) pending.push(item);
      continue;
    }
    for (const [key, item] of Object.entries(value)) {
      if (key === '@iot.id' && typeof item === 'string' && item.startsWith('$')) names.push(item.slice(1));
      else pending.push(item);
    }
  }
  return names;
}

/**
 * A request's url relative to the upstream's service root: the base (and its `v1.1` alias) taken
 * off an absolute one, the path normalised (nothing above the base, no nested `$batch`) and the
 * query rebuilt. `$<id>/…` stays a reference for the upstream to resolve.
 */
function rebuildEntryUrl(entry: BatchEntry, publicBase: string, limits: DataApiLimits): string {
  const field = `requests[${entry.index}].url`;
  let url = entry.url;
  if (isOnBase(url, publicBase)) url = url.slice(publicBase.length);
  const queryAt = url.indexOf('?');
  const rawPath = queryAt < 0 ? url : url.slice(0, queryAt);
  const segments = normalisedSegments(rawPath, field);
  if (segments.some((segment) => segment.toLowerCase().split(';', 1)[0] === '$batch')) throw validationFailed(field, 'a batch cannot contain another $batch');
  const query = queryAt < 0 ? '' : rebuildQuery(url.slice(queryAt + 1), limits, field);
  return `${encodePath(segments).slice(1)}${query === '' ? '' : `?${query}`}`;
}

function rebuiltEntry(entry: BatchEntry, url: string): Record<string, unknown> {
  const headers = Object.fromEntries(ENTRY_HEADERS.filter((name) => entry.headers[name] !== undefined).map((name) => [name, entry.headers[name]!]));
  return {
    id: entry.id,
    method: entry.method.toLowerCase(),
    url,
    ...(entry.body !== undefined && entry.method !== 'GET' && entry.method !== 'DELETE' ? { body: entry.body } : {}),
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(entry.atomicityGroup !== undefined ? { atomicityGroup: entry.atomicityGroup } : {}),
    ...(entry.dependsOn.length > 0 ? { dependsOn: entry.dependsOn } : {}),
  };
}

/**
 * The batch's answer: the gateway's own answers and the upstream's, in the order of the requests.
 * A caller who may write but not read gets an update's success as 204 without a body.
 */
export function mergeBatchAnswers(plan: BatchPlan, upstreamResponses: unknown[], rights: Rights): { responses: unknown[] } {
  const byId = new Map<string, unknown[]>();
  for (const response of upstreamResponses) {
    const id = String((response as { id?: unknown } | null)?.id ?? '');
    byId.set(id, [...(byId.get(id) ?? []), response]);
  }
  const responses: unknown[] = [];
  for (const { entry, local } of plan.answers) {
    if (local) {
      responses.push(local);
      continue;
    }
    for (const response of byId.get(entry.id) ?? []) responses.push(withoutStoredData(entry, response, rights));
    byId.delete(entry.id);
  }
  // Answers the upstream gave under ids the batch did not hold: kept, after the others.
  for (const rest of byId.values()) responses.push(...rest);
  return { responses };
}

function withoutStoredData(entry: BatchEntry, response: unknown, rights: Rights): unknown {
  if (rights.read || (entry.method !== 'PATCH' && entry.method !== 'PUT')) return response;
  const { id, status, atomicityGroup } = response as { id?: unknown; status?: unknown; atomicityGroup?: unknown };
  if (typeof status !== 'number' || status < 200 || status >= 300) return response;
  return { id, status: 204, ...(atomicityGroup !== undefined ? { atomicityGroup } : {}) };
}
