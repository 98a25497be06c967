import { sql } from 'kysely';
import { AppError, validationFailed } from '../errors.js';
import { ENTITIES, entityBySet, type EntityDef, type NavigationDef } from './model.js';
import { tableOf } from './sql-context.js';
import { exists, scopeOf, type Target } from './target.js';
import { setThingLocations } from './thing-locations.js';
import { afterStreamLinked, otherStreamCleared, refuseRankedLinkRef } from './multi-datastream.js';
import { checkLinked, recordChange, type WriteContext } from './write-sql.js';
import { inTransaction, type WriteDeps } from './write.js';
import type { StaResponse } from './types.js';

/**
 * Links written OData-style, as FROST-Server serves them (`$ref` at the end of a navigation):
 * - `POST {base}/Things(1)/Locations/$ref` with `{"@iot.id": 5}` (or `{"@odata.id": "<url>"}`)
 *   adds Location 5 to Thing 1's Locations;
 * - `PUT {base}/Datastreams(1)/Sensor/$ref` with the same body replaces a to-one link;
 * - `DELETE {base}/Things(1)/Locations(5)/$ref`, or `DELETE {base}/Things(1)/Locations/$ref?$id=<url>`,
 *   removes a link.
 * Each answers 204 without a body. A link every entity must have (a Datastream's Thing, an
 * Observation's Datastream, ...) cannot be removed, only replaced: 400.
 */

export interface RefWriteRequest {
  method: 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  body: unknown;
  /** The raw query string (`$id=…` of a DELETE on a collection's `$ref`). */
  query: string;
  baseUrl: string;
}

const MAX_ID_URL = 2048;
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The id an entity reference names, of the type `expected`: a URL of ours (absolute on this base,
 * or relative, `Locations(5)`, `../../Locations(5)`) or a bare id.
 */
function idFromUrl(value: unknown, baseUrl: string, expected: EntityDef, field: string): number {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_ID_URL) {
    throw validationFailed(field, `must be the URL of a ${expected.singular} (at most ${MAX_ID_URL} characters)`);
  }
  let path = value;
  if (/^[a-z][a-z0-9+.-]*:/i.test(path)) {
    if (!path.startsWith(`${baseUrl}/`)) throw validationFailed(field, `must be a URL on this service (${baseUrl}/…)`);
    path = path.slice(baseUrl.length + 1);
  }
  path = path.replace(/^(?:\.{1,2}\/)+/, '').replace(/^\/+/, '').replace(/^v1\.1\//, '');
  const match = /^([A-Za-z]+)\((\d{1,18})\)$/.exec(path);
  const entity = match ? entityBySet(match[1]!) : undefined;
  const id = match ? Number(match[2]) : NaN;
  if (!entity || !Number.isSafeInteger(id) || id < 1) throw validationFailed(field, `must name one entity, e.g. ${expected.set}(1)`);
  if (entity !== expected) throw validationFailed(field, `names a ${entity.singular}; a ${expected.singular} is expected here`);
  return id;
}

/** The entity a POST or PUT `$ref` body points at: `{"@iot.id": 5}` or `{"@odata.id": "<url>"}`. */
function linkedIdOf(body: unknown, baseUrl: string, expected: EntityDef): number {
  if (!isObject(body)) throw validationFailed('body', 'must be {"@iot.id": <id>} or {"@odata.id": "<url>"}');
  const keys = Object.keys(body);
  if (keys.length !== 1 || (keys[0] !== '@iot.id' && keys[0] !== '@odata.id')) {
    throw validationFailed('body', 'must hold only "@iot.id" or only "@odata.id"');
  }
  if (keys[0] === '@odata.id') return idFromUrl(body['@odata.id'], baseUrl, expected, '@odata.id');
  const raw = body['@iot.id'];
  const id = typeof raw === 'string' && /^\d{1,18}$/.test(raw) ? Number(raw) : raw;
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) throw validationFailed('@iot.id', 'must be a positive integer');
  return id;
}

export async function writeRef(deps: WriteDeps, request: RefWriteRequest, target: Target): Promise<StaResponse> {
  if (request.method === 'POST') {
    if (target.kind !== 'collection' || !target.parent) {
      throw new AppError('MALFORMED_REQUEST', 'POST $ref adds a link to a navigation collection, e.g. Things(1)/Locations/$ref', { status: 405 });
    }
    const { parent } = target;
    const id = linkedIdOf(request.body, request.baseUrl, target.entity);
    await inTransaction(deps, (w) => addLink(w, parent.entity, parent.id, parent.nav, id));
    return { status: 204 };
  }
  if (request.method === 'PUT') {
    if (target.kind !== 'entity' || !target.via || target.via.nav.toMany) {
      throw new AppError('MALFORMED_REQUEST', 'PUT $ref replaces a single-valued link, e.g. Datastreams(1)/Sensor/$ref', { status: 405 });
    }
    const { via } = target;
    const id = linkedIdOf(request.body, request.baseUrl, target.entity);
    await inTransaction(deps, (w) => setToOne(w, via.entity, via.id, via.nav, id));
    return { status: 204 };
  }
  if (request.method === 'DELETE') {
    if (target.kind === 'entity' && target.via) {
      const { via, id } = target;
      await inTransaction(deps, (w) => removeLink(w, via.entity, via.id, via.nav, id));
      return { status: 204 };
    }
    if (target.kind === 'collection' && target.parent) {
      const { parent } = target;
      const named = new URLSearchParams(request.query).getAll('$id');
      if (named.length !== 1) throw validationFailed('$id', 'names the entity whose link to remove, once: …/$ref?$id=<url>');
      const id = idFromUrl(named[0], request.baseUrl, target.entity, '$id');
      await inTransaction(deps, async (w) => {
        if (!(await exists(w.trx, w.ctx, target.entity, id, (alias) => scopeOf(w.ctx, parent.nav, parent.id, alias)))) {
          throw new AppError('NOT_FOUND', `${target.entity.singular} ${id} of ${parent.entity.singular} ${parent.id} does not exist`);
        }
        await removeLink(w, parent.entity, parent.id, parent.nav, id);
      });
      return { status: 204 };
    }
    throw new AppError('MALFORMED_REQUEST', 'DELETE $ref removes a link reached through a navigation, e.g. Things(1)/Locations(5)/$ref', { status: 405 });
  }
  throw new AppError('MALFORMED_REQUEST', `${request.method} does not apply to $ref; use POST, PUT or DELETE`, { status: 405 });
}

async function addLink(w: WriteContext, entity: EntityDef, parentId: number, nav: NavigationDef, id: number) {
  await checkLinked(w, nav.target, id, '@iot.id');
  const target = ENTITIES[nav.target];
  if (nav.join.kind === 'fkThere') {
    // The child moves here: its to-one link names this entity from now on.
    await sql`update ${tableOf(w.ctx, target)} set ${sql.id(nav.join.column)} = ${parentId}${otherStreamCleared(target, nav.join.column)} where id = ${id}`.execute(w.trx);
    await afterStreamLinked(w, target, id, nav.join.column);
    recordChange(w, target, id, 'update');
    return;
  }
  if (nav.join.kind !== 'link') throw new AppError('MALFORMED_REQUEST', `${nav.name} is not a collection`, { status: 405 });
  refuseRankedLinkRef(nav.join.table);
  const linked = await sql`select 1 from ${sql.id(w.ctx.schema, nav.join.table)}
    where ${sql.id(nav.join.here)} = ${parentId} and ${sql.id(nav.join.there)} = ${id}`.execute(w.trx);
  if (linked.rows.length > 0) return;
  if (nav.join.table === 'thing_locations') {
    // A Thing that gains a Location: it is (also) there now, kept as a HistoricalLocation.
    const [thingId, locationId] = entity === ENTITIES.Things ? [parentId, id] : [id, parentId];
    await setThingLocations(w, thingId, [locationId], false);
    return;
  }
  await sql`insert into ${sql.id(w.ctx.schema, nav.join.table)} (${sql.id(nav.join.here)}, ${sql.id(nav.join.there)})
    values (${parentId}, ${id})`.execute(w.trx);
}

async function setToOne(w: WriteContext, entity: EntityDef, entityId: number, nav: NavigationDef, id: number) {
  if (nav.join.kind !== 'fkHere') throw new AppError('MALFORMED_REQUEST', `${nav.name} is not a single-valued link`, { status: 405 });
  await checkLinked(w, nav.target, id, '@iot.id');
  await sql`update ${tableOf(w.ctx, entity)} set ${sql.id(nav.join.column)} = ${id}${otherStreamCleared(entity, nav.join.column)} where id = ${entityId}`.execute(w.trx);
  await afterStreamLinked(w, entity, entityId, nav.join.column);
  recordChange(w, entity, entityId, 'update');
}

async function removeLink(w: WriteContext, entity: EntityDef, parentId: number, nav: NavigationDef, id: number) {
  const target = ENTITIES[nav.target];
  if (nav.join.kind === 'link') {
    refuseRankedLinkRef(nav.join.table);
    await sql`delete from ${sql.id(w.ctx.schema, nav.join.table)}
      where ${sql.id(nav.join.here)} = ${parentId} and ${sql.id(nav.join.there)} = ${id}`.execute(w.trx);
    return;
  }
  // Every to-one link of the model is required: it can be replaced (PUT $ref), not removed.
  const [owner, ownerNav] = nav.join.kind === 'fkHere' ? [entity, nav] : [target, target.navigations.find((n) => n.name === nav.inverse)!];
  throw validationFailed('$ref', `a ${owner.singular} must have its ${ownerNav.name}; link it to another one, or delete the ${owner.singular}`);
}
