import { AppError, accessDenied, problemOf, validationFailed } from '../errors.js';
import type { Database } from '../db/client.js';
import { retriedOnConflict } from '../db/constraint-errors.js';
import { announceChanges, type Change } from './write-sql.js';
import type { ServeWith, StaServerDeps } from './server-deps.js';
import type { StaRequest, StaResponse } from './types.js';
import { parseBatchEnvelope, pathPartOf, type BatchEntry } from './batch-envelope.js';

/**
 * `POST {base}/$batch` in the JSON batch format of OData 4.01. The requests run one after the
 * other, in the order given, each authorized on its own with the caller's rights and answered on
 * its own: a failure is that request's problem object, never the batch's (which answers 200 once
 * its envelope is valid). The requests of one atomicity group share one transaction: the first
 * failure rolls the group back, that member answers its error and the others 424.
 */

export interface BatchResponse {
  id: string;
  status: number;
  atomicityGroup?: string;
  headers?: Record<string, string>;
  body?: unknown;
}

/** What later requests may refer to: every answered request's status and the Location it created. */
interface BatchState {
  answered: Map<string, { status: number; location?: string }>;
  failedGroups: Set<string>;
}

/** A batch request that did not run because one it depends on failed (the contract's 424). */
export const failedDependency = (detail: string) => new AppError('FAILED_DEPENDENCY', detail);

/** Thrown inside a group's transaction to roll it back once a member has answered an error. */
class GroupRolledBack extends Error {}

export async function serveBatch(deps: StaServerDeps, request: StaRequest, serve: ServeWith): Promise<StaResponse> {
  if (request.method !== 'POST') throw new AppError('MALFORMED_REQUEST', '$batch takes POST only', { status: 405 });
  const entries = parseBatchEnvelope(request.body, request.baseUrl, deps.limits?.batchMaxRequests);
  const state: BatchState = { answered: new Map(), failedGroups: new Set() };
  const responses: BatchResponse[] = [];
  for (let start = 0; start < entries.length;) {
    const group = entries[start]!.atomicityGroup;
    let end = start + 1;
    if (group === undefined) {
      responses.push(await runOne(deps, request, serve, entries[start]!, state));
    } else {
      // The envelope checked that a group's members are adjacent.
      while (end < entries.length && entries[end]!.atomicityGroup === group) end++;
      responses.push(...await runGroup(deps, request, serve, entries.slice(start, end), state));
    }
    start = end;
  }
  return { status: 200, body: { responses } };
}

async function runGroup(deps: StaServerDeps, batch: StaRequest, serve: ServeWith, members: BatchEntry[], state: BatchState): Promise<BatchResponse[]> {
  const group = members[0]!.atomicityGroup!;
  // Changes are announced only once the group's transaction has committed.
  const held: Change[] = [];
  const answers: BatchResponse[] = [];
  try {
    // A group writing Observations to several streams locks them statement by statement (the
    // triggers of derived.ts), so two groups can deadlock; PostgreSQL then aborts one, which runs
    // again from the start: nothing of it was committed.
    await retriedOnConflict(() => deps.db.transaction().execute(async (trx) => {
      held.length = 0;
      answers.length = 0;
      const inner: StaServerDeps = { ...deps, db: trx as Database, onChange: (change) => held.push(change) };
      for (const entry of members) {
        const answer = await runOne(inner, batch, serve, entry, state);
        answers.push(answer);
        if (answer.status >= 400) throw new GroupRolledBack();
      }
    }));
  } catch (error) {
    if (!(error instanceof GroupRolledBack)) throw error;
    state.failedGroups.add(group);
    return members.map((entry, k) => {
      const own = answers[k];
      if (own && own.status >= 400) return own;
      const error = failedDependency(`The atomicity group ${group} was rolled back: request ${answers[answers.length - 1]!.id} failed`);
      return errorResponse(entry, batch, state, error);
    });
  }
  announceChanges(deps.onChange, held);
  return answers;
}

async function runOne(deps: StaServerDeps, batch: StaRequest, serve: ServeWith, entry: BatchEntry, state: BatchState): Promise<BatchResponse> {
  try {
    const blocker = entry.dependsOn.find((name) => (state.answered.get(name)?.status ?? 0) >= 400 || state.failedGroups.has(name));
    if (blocker !== undefined) throw failedDependency(`Request ${entry.id} depends on ${blocker}, which failed`);
    const { path, query } = resolveUrl(entry, batch.baseUrl, state);
    const right = entry.method === 'GET' ? 'read' : 'write';
    if (!batch.rights[right]) throw accessDenied(right === 'read' ? 'DATASET_PAYLOAD_READ' : 'DATASET_PAYLOAD_WRITE');
    const body = entry.method === 'GET' || entry.method === 'DELETE' ? undefined : withReferences(entry.body, state);
    const answer = await serve(deps, {
      method: entry.method, path, query, body,
      preferMinimal: /\breturn=minimal\b/i.test(entry.headers['prefer'] ?? ''),
      baseUrl: batch.baseUrl, schema: batch.schema, rights: batch.rights,
    });
    const location = answer.headers?.['location'];
    state.answered.set(entry.id, { status: answer.status, ...(location ? { location } : {}) });
    return {
      id: entry.id, status: answer.status,
      ...(entry.atomicityGroup ? { atomicityGroup: entry.atomicityGroup } : {}),
      ...(answer.headers ? { headers: answer.headers } : {}),
      ...(answer.body === undefined ? {} : { body: answer.body }),
    };
  } catch (error) {
    // Anything but a domain error is a fault of the service: the batch answers 500, logged once.
    if (!(error instanceof AppError)) throw error;
    return errorResponse(entry, batch, state, error);
  }
}

function errorResponse(entry: BatchEntry, batch: StaRequest, state: BatchState, error: AppError): BatchResponse {
  state.answered.set(entry.id, { status: error.status });
  return batchErrorResponse(entry, batch.baseUrl, error);
}

/** One request's answer inside the batch's answer when it failed: its problem object. */
export function batchErrorResponse(entry: BatchEntry, baseUrl: string, error: AppError): BatchResponse {
  const instance = `${new URL(baseUrl).pathname}/${pathPartOf(entry.url, baseUrl)}`;
  return {
    id: entry.id, status: error.status,
    ...(entry.atomicityGroup ? { atomicityGroup: entry.atomicityGroup } : {}),
    headers: { 'content-type': 'application/problem+json' },
    body: problemOf(error, instance),
  };
}

/** The Location created by an earlier request, which `$<id>` stands for. */
function locationOf(reference: string, state: BatchState, field: string): string {
  const referenced = state.answered.get(reference);
  if (!referenced || referenced.status >= 400) throw failedDependency(`$${reference} refers to request ${reference}, which failed`);
  if (!referenced.location) throw validationFailed(field, `$${reference} refers to request ${reference}, which created no entity`);
  return referenced.location;
}

/** The request's path below the service root (percent-decoded, as the gateway gives it) and raw query. */
function resolveUrl(entry: BatchEntry, baseUrl: string, state: BatchState): { path: string; query: string } {
  let url = entry.url;
  if (entry.urlReference !== undefined) url = locationOf(entry.urlReference, state, 'url') + url.slice(entry.urlReference.length + 1);
  const queryAt = url.indexOf('?');
  const query = queryAt < 0 ? '' : url.slice(queryAt + 1);
  const rawPath = pathPartOf(url, baseUrl);
  let path: string;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    throw validationFailed('url', 'has malformed percent-encoding');
  }
  // The envelope refused a literal one; this catches one spelled with percent-encoding.
  if (path === '$batch') throw validationFailed('url', 'a batch cannot contain another $batch');
  return { path: path === '' ? '' : `/${path}`, query };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The body with every `{"@iot.id": "$<id>"}` naming an earlier request replaced by the id it created. */
function withReferences(value: unknown, state: BatchState): unknown {
  if (Array.isArray(value)) return value.map((item) => withReferences(item, state));
  if (!isObject(value)) return value;
  const result: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const reference = key === '@iot.id' && typeof item === 'string' && item.startsWith('$') ? item.slice(1) : undefined;
    if (reference !== undefined && state.answered.has(reference)) {
      const id = /\((\d+)\)$/.exec(locationOf(reference, state, '@iot.id'))?.[1];
      result[key] = Number(id);
    } else {
      result[key] = withReferences(item, state);
    }
  }
  return result;
}
