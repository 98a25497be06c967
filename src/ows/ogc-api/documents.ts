import type { CollectionDef, GeometryType } from '../types.js';
import type { Crs } from './crs.js';

/**
 * The JSON documents of OGC API – Features on an OWS named API (`{base}`): the landing page, the
 * conformance declaration, each collection's OGC members and its queryables. Every link is absolute
 * on the route's public base.
 */

export const CONFORMANCE = [
  'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core',
  'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson',
  'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/html',
  'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/oas30',
  'http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs',
  'http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/queryables',
  'http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/queryables-query-parameters',
  'http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/filter',
  'http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/features-filter',
  'http://www.opengis.net/spec/cql2/1.0/conf/cql2-text',
  'http://www.opengis.net/spec/cql2/1.0/conf/basic-cql2',
  'http://www.opengis.net/spec/cql2/1.0/conf/advanced-comparison-operators',
  'http://www.opengis.net/spec/cql2/1.0/conf/basic-spatial-functions',
  'http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/create-replace-delete',
];

export interface Link { href: string; rel: string; type?: string; title?: string }

const JSON_TYPE = 'application/json';
const GEOJSON_TYPE = 'application/geo+json';
const HTML_TYPE = 'text/html';
export const OPENAPI_TYPE = 'application/vnd.oai.openapi+json;version=3.0';

/** `self` in the format asked for, `alternate` in the other one. */
function selfAndAlternate(url: string, format: 'json' | 'html', jsonType = JSON_TYPE): Link[] {
  const join = url.includes('?') ? '&' : '?';
  const json = { href: `${url}${join}f=json`, type: jsonType };
  const html = { href: `${url}${join}f=html`, type: HTML_TYPE };
  return format === 'json'
    ? [{ ...json, rel: 'self', title: 'this document' }, { ...html, rel: 'alternate', title: 'this document as HTML' }]
    : [{ ...html, rel: 'self', title: 'this document' }, { ...json, rel: 'alternate', title: 'this document as JSON' }];
}

export function landingPage(base: string, title: string, description: string | null, format: 'json' | 'html') {
  return {
    title,
    description: description ?? title,
    links: [
      ...selfAndAlternate(base, format),
      { href: `${base}/api`, rel: 'service-desc', type: OPENAPI_TYPE, title: 'the API definition (OpenAPI 3.0)' },
      { href: `${base}/api?f=html`, rel: 'service-doc', type: HTML_TYPE, title: 'the API documentation' },
      { href: `${base}/conformance`, rel: 'conformance', type: JSON_TYPE, title: 'the conformance classes served' },
      { href: `${base}/collections`, rel: 'data', type: JSON_TYPE, title: 'the feature collections' },
    ],
  };
}

export const conformance = () => ({ conformsTo: CONFORMANCE });

/** What a collection's data spans, for its OGC `extent`. */
export interface CollectionExtent { bbox: readonly [number, number, number, number] | null; start: Date | null; end: Date | null }

/** OGC API's members of a collection, added to the feature store's own (`name`, `geometryType`, `srid`, …). */
export function collectionMembers(base: string, def: CollectionDef, extent: CollectionExtent, offered: readonly Crs[], storageCrs: string) {
  const self = `${base}/collections/${def.name}`;
  const hasTime = Object.values(def.properties).includes('date-time');
  // `title` is the store's own member (null when the collection has none): OGC clients show the id then.
  return {
    id: def.name,
    itemType: 'feature',
    extent: {
      spatial: { bbox: extent.bbox ? [[...extent.bbox]] : [[-180, -90, 180, 90]], crs: 'http://www.opengis.net/def/crs/OGC/1.3/CRS84' },
      ...(hasTime ? { temporal: { interval: [[extent.start?.toISOString() ?? null, extent.end?.toISOString() ?? null]], trs: 'http://www.opengis.net/def/uom/ISO-8601/0/Gregorian' } } : {}),
    },
    crs: offered.map((crs) => crs.uri),
    storageCrs,
    links: [
      { href: self, rel: 'self', type: JSON_TYPE, title: 'this collection' },
      { href: `${self}?f=html`, rel: 'alternate', type: HTML_TYPE, title: 'this collection as HTML' },
      { href: `${self}/items`, rel: 'items', type: GEOJSON_TYPE, title: 'its features' },
      { href: `${self}/items?f=html`, rel: 'items', type: HTML_TYPE, title: 'its features as HTML' },
      { href: `${self}/queryables`, rel: 'http://www.opengis.net/def/rel/ogc/1.0/queryables', type: 'application/schema+json', title: 'what its features can be filtered by' },
    ],
  };
}

const GEOMETRY_FORMATS: Record<GeometryType, string> = {
  Point: 'geometry-point', MultiPoint: 'geometry-multipoint', LineString: 'geometry-linestring',
  MultiLineString: 'geometry-multilinestring', Polygon: 'geometry-polygon', MultiPolygon: 'geometry-multipolygon',
};

const JSON_SCHEMA_TYPES = {
  string: { type: 'string' }, integer: { type: 'integer' }, number: { type: 'number' }, boolean: { type: 'boolean' },
  'date-time': { type: 'string', format: 'date-time' },
} as const;

/** The queryables (Part 3): a JSON Schema of the properties, and the geometry as `geometry`. */
export function queryables(base: string, def: CollectionDef) {
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: `${base}/collections/${def.name}/queryables`,
    type: 'object',
    title: def.title ?? def.name,
    properties: {
      geometry: { format: GEOMETRY_FORMATS[def.geometryType], 'x-ogc-role': 'primary-geometry' },
      ...Object.fromEntries(Object.entries(def.properties).map(([name, type]) => [name, { title: name, ...JSON_SCHEMA_TYPES[type] }])),
    },
    additionalProperties: false,
  };
}

/** The links of an items page: self, the other format, next (absent on the last page), prev, the collection. */
export function itemsLinks(itemsUrl: string, query: URLSearchParams, page: { next: number | null; prev: number | null }, format: 'json' | 'html') {
  const withParams = (changes: Record<string, string | null>) => {
    const params = new URLSearchParams(query);
    for (const name of ['after', 'before', 'offset', 'f']) params.delete(name);
    for (const [name, value] of Object.entries(changes)) if (value !== null) params.set(name, value);
    const text = params.toString();
    return text ? `${itemsUrl}?${text}` : itemsUrl;
  };
  const keep = (name: string) => query.get(name);
  const current = { after: keep('after'), before: keep('before'), offset: keep('offset') };
  return [
    { href: withParams({ ...current, f: format }), rel: 'self', type: format === 'json' ? GEOJSON_TYPE : HTML_TYPE, title: 'this page' },
    { href: withParams({ ...current, f: format === 'json' ? 'html' : 'json' }), rel: 'alternate', type: format === 'json' ? HTML_TYPE : GEOJSON_TYPE, title: 'this page in the other format' },
    ...(page.next !== null ? [{ href: withParams({ after: String(page.next), f: format === 'html' ? 'html' : null }), rel: 'next', type: format === 'json' ? GEOJSON_TYPE : HTML_TYPE, title: 'the next page' }] : []),
    ...(page.prev !== null ? [{ href: withParams({ before: String(page.prev), f: format === 'html' ? 'html' : null }), rel: 'prev', type: format === 'json' ? GEOJSON_TYPE : HTML_TYPE, title: 'the previous page' }] : []),
    { href: itemsUrl.replace(/\/items$/, ''), rel: 'collection', type: JSON_TYPE, title: 'the collection' },
  ];
}
