/**
 * SensorThings MQTT topics (OGC 18-088 §14): a topic is the resource's path below DATA_API_URL
 * without the leading slash, `v1/datasets/{id}/{slug}/Datastreams(7)/Observations`. The standard
 * subscribes to resource paths, so the broker only ever matches whole topics, never wildcards.
 */

/** What a topic names. `path` is below the route's base, without the `v1.1` alias: `/Things(1)`. */
export interface StaTopic {
  datasetId: string;
  slug: string;
  path: string;
  /** An entity set or navigation collection, one entity, or one property of one entity. */
  kind: 'collection' | 'entity' | 'property';
}

const ROUTE = /^v1\/datasets\/([^/]+)\/([^/]+)\/(.+)$/;
const SEGMENT = /^([A-Z][A-Za-z]*)(?:\((\d{1,15})\))?$/;
const PROPERTY = /^[a-z][A-Za-z0-9_]*$/;

/**
 * Splits a topic into its route and resource, or null when it is not one the broker serves. Only
 * the shapes notifications are sent for: `Set`, `Set(id)`, `Set(id)/Collection`, `Set(id)/property`.
 * Whether the entity set exists is left to the SensorThings server (a topic naming none gets nothing).
 */
export function parseTopic(topic: string): StaTopic | null {
  if (topic.includes('+') || topic.includes('#') || topic.includes('?')) return null;
  const match = ROUTE.exec(topic);
  if (!match) return null;
  const [, datasetId = '', slug = '', rawRest = ''] = match;
  // `{slug}/v1.1/…` is an alias for clients that append the version, as on HTTP.
  const rest = rawRest.startsWith('v1.1/') ? rawRest.slice('v1.1/'.length) : rawRest;
  const segments = rest.split('/');
  const first = SEGMENT.exec(segments[0] ?? '');
  if (!first || segments.length > 2) return null;
  const hasId = first[2] !== undefined;
  const path = `/${rest}`;
  if (segments.length === 1) return { datasetId: datasetId.toLowerCase(), slug, path, kind: hasId ? 'entity' : 'collection' };
  const second = segments[1]!;
  if (!hasId) return null;
  if (SEGMENT.test(second) && !second.includes('(')) return { datasetId: datasetId.toLowerCase(), slug, path, kind: 'collection' };
  if (PROPERTY.test(second)) return { datasetId: datasetId.toLowerCase(), slug, path, kind: 'property' };
  return null;
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
  Observations: [
    { navigation: 'Datastream', targetSet: 'Datastreams', backCollection: 'Observations' },
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
