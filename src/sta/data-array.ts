import type { RawBuilder } from 'kysely';
import type { QueryOptions } from './query/ast.js';
import { StaQueryError } from './query/errors.js';
import { ENTITIES, propertyOf, type PropertyDef } from './model.js';
import { readCollection, type ReadContext } from './read.js';
import { propertyValue, rowForeignKey, rowId } from './serialize.js';
import { nextLinkFromQuery, selfLink } from './links.js';
import type { StaResponse } from './types.js';

/**
 * `$resultFormat=dataArray` on Observations: the page grouped by Datastream (or MultiDatastream), each group naming
 * its `components` once and giving every Observation as an array of their values.
 */

const DEFAULT_COMPONENTS = ['id', 'phenomenonTime', 'result', 'resultTime', 'resultQuality', 'validTime', 'parameters'];

export async function dataArrayAnswer(
  ctx: ReadContext, request: { baseUrl: string; path: string; query: string },
  alias: string, scope: RawBuilder<unknown>[], options: QueryOptions,
): Promise<StaResponse> {
  const observations = ENTITIES.Observations;
  const components = options.select ?? DEFAULT_COMPONENTS;
  const properties: PropertyDef[] = [];
  components.forEach((name, index) => {
    if (name === 'id' || name === '@iot.id') return;
    const property = propertyOf(observations, name);
    if (!property) throw new StaQueryError('$select', index, name, `Observation has no property ${name}`);
    properties.push(property);
  });
  const result = await readCollection(ctx, observations, alias, scope, options, properties);

  // Keyed by the stream's link: an Observation is in a Datastream or in a MultiDatastream.
  const groups = new Map<string, { name: string; dataArray: unknown[][] }>();
  for (const row of result.rows) {
    const datastream = rowForeignKey(row, 'datastream_id');
    const [name, link] = datastream === null
      ? ['MultiDatastream@iot.navigationLink', selfLink(request.baseUrl, ENTITIES.MultiDatastreams, rowForeignKey(row, 'multi_datastream_id')!)]
      : ['Datastream@iot.navigationLink', selfLink(request.baseUrl, ENTITIES.Datastreams, datastream)];
    const values = components.map((c) => (c === 'id' || c === '@iot.id' ? rowId(row) : propertyValue(row, propertyOf(observations, c)!)));
    const group = groups.get(link) ?? { name, dataArray: [] };
    group.dataArray.push(values);
    groups.set(link, group);
  }
  const body: Record<string, unknown> = {};
  if (result.count !== undefined) body['@iot.count'] = result.count;
  body['value'] = [...groups].map(([link, { name, dataArray }]) => ({
    [name]: link,
    components,
    'dataArray@iot.count': dataArray.length,
    dataArray,
  }));
  if (result.more) body['@iot.nextLink'] = nextLinkFromQuery(`${request.baseUrl}${request.path}`, request.query, result.page.skip + result.page.top);
  return { status: 200, body };
}
