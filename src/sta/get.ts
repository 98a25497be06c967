import { AppError } from '../errors.js';
import type { QueryOptions } from './query/ast.js';
import { StaQueryError } from './query/errors.js';
import { ENTITY_SETS, ENTITIES, type EntityDef } from './model.js';
import { readCollection, readEntity, type ReadContext } from './read.js';
import { expandAll } from './expand.js';
import { entityWriter, shapedJson, shapedOf, shapedText, type Shaped } from './shaped.js';
import { propertyValue, rowId, selectionOf } from './serialize.js';
import { nextLinkFromQuery, selfLink } from './links.js';
import { parentMissing, rankOf, scopeOf, type Target } from './target.js';
import { dataArrayAnswer } from './data-array.js';
import type { StaResponse } from './types.js';

const MQTT_CREATE = 'http://www.opengis.net/spec/iot_sensing/1.1/req/create-observations-via-mqtt/observations-creation';
const MQTT_RECEIVE = 'http://www.opengis.net/spec/iot_sensing/1.1/req/receive-updates-via-mqtt/receive-updates';

/**
 * The conformance classes this server answers to, spelled as SensorThings 1.1 (OGC 18-088) and its
 * extensions name them, MultiDatastream (the optional extension of 18-088) included.
 */
export const CONFORMANCE = [
  'http://www.opengis.net/spec/iot_sensing/1.1/req/datamodel',
  'http://www.opengis.net/spec/iot_sensing/1.1/req/resource-path/resource-path-to-entities',
  'http://www.opengis.net/spec/iot_sensing/1.1/req/request-data',
  'http://www.opengis.net/spec/iot_sensing/1.1/req/create-update-delete',
  'http://www.opengis.net/spec/iot_sensing/1.1/req/batch-request/batch-request',
  'http://www.opengis.net/spec/iot_sensing/1.1/req/data-array/data-array',
  MQTT_CREATE,
  MQTT_RECEIVE,
  'http://www.opengis.net/spec/iot_sensing/1.1/req/multi-datastream',
];

/**
 * The service root. The MQTT extension's two classes carry the broker's `endpoints` under their own
 * key (as 18-088's example and FROST-Server show them); `mqttEndpoints` comes from the settings.
 */
export function serviceRoot(baseUrl: string, mqttEndpoints: readonly string[] = []): StaResponse {
  const serverSettings: Record<string, unknown> = { conformance: CONFORMANCE };
  if (mqttEndpoints.length > 0) {
    for (const key of [MQTT_CREATE, MQTT_RECEIVE]) serverSettings[key] = { endpoints: [...mqttEndpoints] };
  }
  return {
    status: 200,
    body: {
      value: ENTITY_SETS.map((name) => ({ name, url: `${baseUrl}/${name}` })),
      serverSettings,
    },
  };
}

export interface GetRequest {
  baseUrl: string;
  path: string;
  query: string;
  /** See StaRequest.answerAsText. */
  answerAsText?: boolean;
}

/** Only `$select` and `$expand` apply to one entity; the paging and filtering options make no sense there. */
function checkSingleEntityOptions(options: QueryOptions) {
  for (const [key, name] of [['top', '$top'], ['skip', '$skip'], ['count', '$count'], ['filter', '$filter'], ['orderBy', '$orderby']] as const) {
    if (options[key] !== undefined) throw new StaQueryError(name, 0, name, `${name} applies to collections only`);
  }
}

export async function getTarget(ctx: ReadContext, request: GetRequest, target: Target, options: QueryOptions): Promise<StaResponse> {
  if (target.kind === 'property') return getProperty(ctx, target);
  if (target.kind === 'entity') {
    checkSingleEntityOptions(options);
    return { status: 200, body: await getEntityJson(ctx, request.baseUrl, target.entity, target.id, options, target.ref) };
  }
  const alias = 'c';
  const parent = target.parent;
  const scope = parent ? [scopeOf(ctx, parent.nav, parent.id, alias)] : [];
  if (options.resultFormat === 'dataArray') {
    if (target.entity !== ENTITIES.Observations) throw new StaQueryError('$resultFormat', 0, 'dataArray', 'dataArray applies to Observations only');
    const missing = await parentMissing(ctx.db, ctx, target);
    if (missing) throw missing;
    return dataArrayAnswer(ctx, request, alias, scope, options);
  }
  const selection = target.ref ? selectionOf(target.entity, ['id']) : selectionOf(target.entity, options.select);
  const rank = parent ? rankOf(ctx, parent.nav, parent.id, alias) : undefined;
  const result = await readCollection(ctx, target.entity, alias, scope, options, selection.properties, rank);
  if (result.rows.length === 0) {
    const missing = await parentMissing(ctx.db, ctx, target);
    if (missing) throw missing;
  }
  // A `$ref` page answers self links only: no entity is written, nothing is expanded.
  let shaped: Shaped[] | null = null;
  if (!target.ref) {
    const own = entityWriter(request.baseUrl, target.entity, selection);
    shaped = result.rows.map((row) => shapedOf(row, own));
    await expandAll(ctx, request.baseUrl, target.entity, shaped, options.expand);
  }
  const nextLink = result.more ? nextLinkFromQuery(`${request.baseUrl}${request.path}`, request.query, result.page.skip + result.page.top) : undefined;
  if (request.answerAsText && shaped) return collectionAsText(result.count, shaped, nextLink);
  const body: Record<string, unknown> = {};
  if (result.count !== undefined) body['@iot.count'] = result.count;
  body['value'] = shaped ? shaped.map(shapedJson) : result.rows.map((row) => ({ '@iot.selfLink': selfLink(request.baseUrl, target.entity, rowId(row)) }));
  if (nextLink !== undefined) body['@iot.nextLink'] = nextLink;
  return { status: 200, body };
}

/**
 * A page as JSON text, for a caller that sends it on as it is: the members of the object
 * `getTarget` builds, in its order (`@iot.count`, `value`, `@iot.nextLink`).
 */
function collectionAsText(count: number | undefined, shaped: Shaped[], nextLink: string | undefined): StaResponse {
  let text = '{';
  if (count !== undefined) text += `"@iot.count":${JSON.stringify(count)},`;
  text += '"value":[';
  shaped.forEach((entity, i) => { text += (i === 0 ? '' : ',') + shapedText(entity); });
  text += ']';
  if (nextLink !== undefined) text += `,"@iot.nextLink":${JSON.stringify(nextLink)}`;
  return { status: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, body: text + '}' };
}

/** One entity as GET shows it (also the body of a create or an update). */
export async function getEntityJson(ctx: ReadContext, baseUrl: string, entity: EntityDef, id: number, options: QueryOptions, ref = false) {
  if (ref) return { '@iot.selfLink': selfLink(baseUrl, entity, id) };
  const selection = selectionOf(entity, options.select);
  const row = await readEntity(ctx, entity, id, selection.properties);
  if (!row) throw new AppError('NOT_FOUND', `${entity.singular} ${id} does not exist`);
  const shaped = shapedOf(row, entityWriter(baseUrl, entity, selection));
  await expandAll(ctx, baseUrl, entity, [shaped], options.expand);
  return shapedJson(shaped);
}

async function getProperty(ctx: ReadContext, target: Extract<Target, { kind: 'property' }>): Promise<StaResponse> {
  const name = target.property === 'id' ? 'id' : target.property.name;
  let value: unknown = target.id;
  if (target.property !== 'id') {
    const row = await readEntity(ctx, target.entity, target.id, [target.property]);
    if (!row) throw new AppError('NOT_FOUND', `${target.entity.singular} ${target.id} does not exist`);
    value = propertyValue(row, target.property);
  }
  // A property without a value answers 204 No Content, with or without `$value` (as OData and FROST-Server do).
  if (value === null) return { status: 204 };
  if (!target.value) return { status: 200, body: { [name]: value } };
  // `$value`: the bare value; text for a string or number, JSON for an object.
  if (typeof value === 'object') return { status: 200, body: value };
  return { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: String(value) };
}
