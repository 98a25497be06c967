import { setImmediate as nextTurn } from 'node:timers/promises';
import { AppError } from '../errors.js';
import type { QueryOptions, ResourcePath } from './query/ast.js';
import { parseResourcePath } from './query/parse-path.js';
import { parseQueryOptions } from './query/parse-options.js';
import { provisionStorage } from './storage.js';
import { staDownload } from './downloads.js';
import { resolveTarget } from './target.js';
import { getTarget, serviceRoot } from './get.js';
import { createAt, deleteAt, updateAt, type WriteDeps } from './write.js';
import { writeRef, type RefWriteRequest } from './ref-writes.js';
import type { ReadContext } from './read.js';
import { AliasNames } from './sql-context.js';
import type { StaRequest, StaResponse, StaServer } from './types.js';
import { serveBatch } from './batch.js';
import { createObservations } from './create-observations.js';
import type { Operation, ServeWith, StaServerDeps } from './server-deps.js';

/**
 * Requests that are not resources but operations (`$batch`, the data-array `CreateObservations`)
 * are served by their own modules; until they are wired here they answer 404.
 */
const OPERATIONS: Record<string, Operation | undefined> = {
  '/$batch': serveBatch,
  '/CreateObservations': createObservations,
};

/** A request whose path and options are parsed already: method × what the path addresses. */
export async function dispatch(deps: StaServerDeps, request: StaRequest, path: ResourcePath, options: QueryOptions): Promise<StaResponse> {
  const read: ReadContext = {
    db: deps.db, schema: request.schema, postgis: deps.postgis ?? false, pageSize: deps.pageSize ?? 100, maxTop: deps.maxTop ?? 1000,
    aliases: new AliasNames(),
  };
  const isRead = request.method === 'GET' || request.method === 'HEAD';
  if (path.length === 0) {
    if (!isRead) throw new AppError('MALFORMED_REQUEST', 'The service root takes GET only', { status: 405 });
    return serviceRoot(request.baseUrl, deps.mqttEndpoints);
  }
  const target = await resolveTarget(deps.db, read, path, isRead);
  if (isRead) return getTarget(read, request, target, options);
  const writeDeps: WriteDeps = { read, ...(deps.onChange ? { onChange: deps.onChange } : {}) };
  if (target.kind !== 'property' && target.ref) {
    return writeRef(writeDeps, { method: request.method as RefWriteRequest['method'], body: request.body, query: request.query, baseUrl: request.baseUrl }, target);
  }
  const write = { body: request.body, baseUrl: request.baseUrl, preferMinimal: request.preferMinimal, callerMayRead: request.rights.read };
  switch (request.method) {
    case 'POST': return createAt(writeDeps, write, target);
    case 'PATCH': return updateAt(writeDeps, write, target, 'patch');
    case 'PUT': return updateAt(writeDeps, write, target, 'put');
    default: return deleteAt(writeDeps, target);
  }
}

/**
 * An operation's requests served so that the operation gives the event loop back at least every
 * `TURN_MS`: a `$batch` of a thousand requests that each fail in the parser never waits for I/O
 * (an `await` of a settled promise runs on at once), and would otherwise hold every listener of the
 * process for as long as all of them take together.
 */
const TURN_MS = 10;

function takingTurns(serve: ServeWith): ServeWith {
  let turnStarted = performance.now();
  return async (inner, sub) => {
    if (performance.now() - turnStarted > TURN_MS) {
      await nextTurn();
      turnStarted = performance.now();
    }
    return serve(inner, sub);
  };
}

/**
 * Where clients reach the broker: `mqtt://{host of DATA_API_URL}:{MQTT_PORT}` (none when MQTT_PORT
 * is off) and MQTT over WebSocket at `{DATA_API_URL}/mqtt` (ws, or wss behind https).
 */
export function mqttEndpointsOf(dataApiUrl: string, mqttPort: number | null): string[] {
  const url = new URL(dataApiUrl);
  const endpoints: string[] = [];
  if (mqttPort !== null) endpoints.push(`mqtt://${url.hostname}:${mqttPort}`);
  const path = url.pathname.replace(/\/+$/, '');
  endpoints.push(`${url.protocol === 'https:' ? 'wss' : 'ws'}://${url.host}${path}/mqtt`);
  return endpoints;
}

export function createStaServer(deps: StaServerDeps): StaServer {
  return {
    async handle(request) {
      const pathText = request.path === '/' ? '' : request.path;
      if (Object.hasOwn(OPERATIONS, pathText)) {
        const operation = OPERATIONS[pathText];
        if (!operation) throw new AppError('NOT_FOUND', `${pathText.slice(1)} is not served yet`);
        return operation(deps, request, takingTurns((inner, sub) => createStaServer(inner).handle(sub)));
      }
      const normalized = { ...request, path: pathText };
      const path = pathText === '' ? [] : parseResourcePath(pathText);
      // Options matter to reads only; a write ignores them rather than failing on them.
      const isRead = request.method === 'GET' || request.method === 'HEAD';
      const options = isRead ? parseQueryOptions(request.query, deps.limits) : {};
      const response = await dispatch(deps, normalized, path, options);
      if (request.method !== 'HEAD') return response;
      const { body: _body, ...head } = response;
      return head;
    },
    provision: (trx, schema) => provisionStorage(trx, schema),
    download: (schema, path, fileStem) => staDownload(deps.db, deps.copyOut ?? null, schema, path, fileStem),
  };
}
