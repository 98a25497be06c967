import { parseResourcePath, StaQueryError } from '../../sta/query/index.js';
import { ENTITIES, type EntitySetName } from '../../sta/model.js';

/**
 * SensorThings MQTT topics (OGC 18-088 §14): a topic is the resource's path below DATA_API_URL
 * without the leading slash, `v1/datasets/{id}/{slug}/Datastreams(7)/Observations`. The standard
 * subscribes to resource paths, so the broker only ever matches whole topics, never wildcards.
 * A collection or entity topic may carry `?$select=name,description` (§14.2.4): its messages hold
 * only those properties.
 */
/** What a topic names. `path` is below the route's base, without the `v1.1` alias: `/Things(1)`. */
export interface StaTopic {
  datasetId: string;
  slug: string;
  path: string;
  /** An entity set or navigation collection, one entity, or one property of one entity. */
  kind: 'collection' | 'entity' | 'property';
  /** `?$select=…`: the keys of the entity's JSON its messages keep (`@iot.id` for `id`). */
  select?: string[];
}

const ROUTE = /^v1\/datasets\/([^/]+)\/([^/]+)\/(.+)$/;
const ENTITY_SETS = new Set(['Things', 'Locations', 'HistoricalLocations', 'Datastreams', 'MultiDatastreams', 'Sensors', 'ObservedProperties', 'Observations', 'FeaturesOfInterest']);

/**
 * Splits a topic into its route and resource, or null when it is not one the broker serves. The
 * resource path goes through the query language's own path parser, so that a topic and a URL
 * agree on what a path is; of its shapes, only those notifications are sent for are topics:
 * `Set`, `Set(id)`, `Set(id)/Collection`, `Set(id)/property`.
 */
export function parseTopic(topic: string): StaTopic | null {
  if (topic.includes('+') || topic.includes('#')) return null;
  const queryAt = topic.indexOf('?');
  const match = ROUTE.exec(queryAt < 0 ? topic : topic.slice(0, queryAt));
  if (!match) return null;
  const [, rawId = '', slug = '', rawRest = ''] = match;
  // `{slug}/v1.1/…` is an alias for clients that append the version, as on HTTP.
  const path = `/${rawRest.startsWith('v1.1/') ? rawRest.slice('v1.1/'.length) : rawRest}`;
  const shape = shapeOf(path);
  if (!shape) return null;
  const parsed: StaTopic = { datasetId: rawId.toLowerCase(), slug, path, kind: shape.kind };
  if (queryAt < 0) return parsed;
  if (shape.kind === 'property') return null;
  const select = selectOf(topic.slice(queryAt + 1), shape.entitySet);
  return select && { ...parsed, select };
}

/** The longest `$select` value of a topic, and the most names in it. */
const MAX_SELECT_CHARS = 1_024;
const MAX_SELECT_NAMES = 64;

/**
 * `$select=name,description` (the only option a topic takes) as the keys of an entity's JSON that
 * it keeps, or null when it is anything else or names what the entity set does not have.
 */
function selectOf(query: string, entitySet: EntitySetName): string[] | null {
  if (!query.startsWith('$select=') || query.length > MAX_SELECT_CHARS + '$select='.length) return null;
  const names = query.slice('$select='.length).split(',').map((name) => name.trim());
  if (names.length > MAX_SELECT_NAMES) return null;
  const entity = ENTITIES[entitySet];
  const keys: string[] = [];
  for (const name of names) {
    if (name === 'id') keys.push('@iot.id');
    else if (name === 'selfLink') keys.push('@iot.selfLink');
    else if (entity.properties.some((property) => property.name === name)) keys.push(name);
    else if (entity.navigations.some((navigation) => navigation.name === name)) keys.push(`${name}@iot.navigationLink`);
    else return null;
  }
  return keys;
}

/** Only the keys a `$select` topic keeps, in the order the entity has them. */
export function selected(entity: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const wanted = new Set(keys);
  return Object.fromEntries(Object.entries(entity).filter(([key]) => wanted.has(key)));
}

function shapeOf(path: string): { kind: StaTopic['kind']; entitySet: EntitySetName } | null {
  let segments;
  try {
    segments = parseResourcePath(path);
  } catch (error) {
    if (error instanceof StaQueryError) return null;
    throw error;
  }
  const [first, second, ...more] = segments;
  if (first?.kind !== 'entitySet' || !ENTITY_SETS.has(first.name) || more.length > 0) return null;
  const entitySet = first.name as EntitySetName;
  if (!second) return { kind: first.id === undefined ? 'collection' : 'entity', entitySet };
  if (first.id === undefined) return null;
  if (second.kind === 'property') return { kind: 'property', entitySet };
  if (second.kind !== 'navigation' || second.id !== undefined || !ENTITY_SETS.has(second.name)) return null;
  const navigation = ENTITIES[entitySet].navigations.find((candidate) => candidate.name === second.name);
  return navigation ? { kind: 'collection', entitySet: navigation.target } : null;
}

/** The topic prefix of a route: every topic of that route starts with it. */
export const routeTopicPrefix = (datasetId: string, slug: string) => `v1/datasets/${datasetId}/${slug}/`;

/**
 * The to-one links of each entity set, with the navigation collection of the linked entity that
 * lists it back: an Observation of Datastream 7 belongs to `Datastreams(7)/Observations`.
 * Many-to-many links (Things and Locations) are not followed.
 */
export const TO_ONE_LINKS: Readonly<Record<string, ReadonlyArray<{ navigation: string; targetSet: string; backCollection: string }>>> = {
  HistoricalLocations: [{ navigation: 'Thing', targetSet: 'Things', backCollection: 'HistoricalLocations' }],
  Datastreams: [
    { navigation: 'Thing', targetSet: 'Things', backCollection: 'Datastreams' },
    { navigation: 'Sensor', targetSet: 'Sensors', backCollection: 'Datastreams' },
    { navigation: 'ObservedProperty', targetSet: 'ObservedProperties', backCollection: 'Datastreams' },
  ],
  MultiDatastreams: [
    { navigation: 'Thing', targetSet: 'Things', backCollection: 'MultiDatastreams' },
    { navigation: 'Sensor', targetSet: 'Sensors', backCollection: 'MultiDatastreams' },
  ],
  Observations: [
    { navigation: 'Datastream', targetSet: 'Datastreams', backCollection: 'Observations' },
    { navigation: 'MultiDatastream', targetSet: 'MultiDatastreams', backCollection: 'Observations' },
    { navigation: 'FeatureOfInterest', targetSet: 'FeaturesOfInterest', backCollection: 'Observations' },
  ],
};

/**
 * The resource paths (below a route's base) a changed entity is announced on: its entity set,
 * itself, and the navigation collections it belongs to through its to-one links.
 */
export function pathsOfChange(entitySet: string, id: number, links: ReadonlyMap<string, number>): string[] {
  const paths = [`/${entitySet}`, `/${entitySet}(${id})`];
  for (const link of TO_ONE_LINKS[entitySet] ?? []) {
    const linkedId = links.get(link.navigation);
    if (linkedId !== undefined) paths.push(`/${link.targetSet}(${linkedId})/${link.backCollection}`);
  }
  return paths;
}

/** The topics a resource path is published on: the canonical one and its `v1.1` alias. */
export function topicsOfPath(datasetId: string, slug: string, path: string): [string, string] {
  const prefix = routeTopicPrefix(datasetId, slug);
  return [`${prefix}${path.slice(1)}`, `${prefix}v1.1${path}`];
}
