import type { CollectionDef } from '../types.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from './items-params.js';

/**
 * `{base}/api`: the OpenAPI 3.0 definition of one OWS named API's OGC API – Features, its
 * collections named (GDAL and QGIS read `service-desc` to learn what an API takes).
 */
export function openApiDocument(base: string, title: string, description: string | null, collections: readonly CollectionDef[]) {
  const json = (schema: object, description: string) => ({ description, content: { 'application/json': { schema } } });
  const geojson = (description: string) => ({ description, content: { 'application/geo+json': { schema: { type: 'object' } }, 'text/html': { schema: { type: 'string' } } } });
  const problem = { description: 'a problem: code, description, detail', content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/problem' } } } };
  const collectionId = { name: 'collectionId', in: 'path', required: true, schema: { type: 'string', enum: collections.map((c) => c.name) } };
  const f = { name: 'f', in: 'query', required: false, schema: { type: 'string', enum: ['json', 'html'] } };
  const crsParam = (name: string, description: string) => ({ name, in: 'query', required: false, description, schema: { type: 'string', format: 'uri' } });
  const read = (summary: string, parameters: object[], ok: object) => ({ get: { summary, parameters: [...parameters, f], responses: { 200: ok, 400: problem, 404: problem } } });
  const download = (summary: string, parameters: object[], mediaType: string) => ({
    get: {
      summary,
      description: 'A bulk download: streamed as an attachment, with an ETag and Last-Modified from the data\'s last change (If-None-Match and If-Modified-Since answer 304).',
      parameters,
      responses: { 200: { description: 'the file', content: { [mediaType]: { schema: { type: 'string', format: 'binary' } } } }, 304: { description: 'unchanged since the client\'s copy' }, 404: problem },
    },
  });
  return {
    openapi: '3.0.3',
    info: { title, description: description ?? title, version: '1.0.0' },
    servers: [{ url: base }],
    paths: {
      '/': read('the landing page', [], json({ type: 'object' }, 'the landing page')),
      '/conformance': read('the conformance classes served', [], json({ type: 'object' }, 'the conformance declaration')),
      '/api': read('this definition', [], { description: 'the OpenAPI 3.0 definition', content: { 'application/vnd.oai.openapi+json;version=3.0': { schema: { type: 'object' } } } }),
      '/collections': read('the feature collections', [], json({ type: 'object' }, 'the collections')),
      '/collections/{collectionId}': read('a feature collection', [collectionId], json({ type: 'object' }, 'the collection')),
      '/collections/{collectionId}/queryables': read('what its features can be filtered by', [collectionId], { description: 'a JSON Schema', content: { 'application/schema+json': { schema: { type: 'object' } } } }),
      '/collections/{collectionId}/items': read('its features, a page at a time (follow the next link)', [
        collectionId,
        { name: 'limit', in: 'query', required: false, description: `at most ${MAX_LIMIT} (more is served as ${MAX_LIMIT})`, schema: { type: 'integer', minimum: 1, default: DEFAULT_LIMIT } },
        { name: 'bbox', in: 'query', required: false, style: 'form', explode: false, schema: { type: 'array', minItems: 4, maxItems: 6, items: { type: 'number' } } },
        crsParam('bbox-crs', 'the CRS of bbox (CRS84 by default)'),
        { name: 'datetime', in: 'query', required: false, description: 'an instant, or an interval start/end (.. for an open end), on the first date-time property', schema: { type: 'string' } },
        crsParam('crs', 'the CRS of the answer (CRS84 by default)'),
        { name: 'filter', in: 'query', required: false, description: 'CQL2 text: Basic CQL2, LIKE/BETWEEN/IN, S_INTERSECTS(geometry, <WKT or BBOX>)', schema: { type: 'string' } },
        { name: 'filter-lang', in: 'query', required: false, schema: { type: 'string', enum: ['cql2-text'] } },
        crsParam('filter-crs', 'the CRS of the filter\'s geometries (CRS84 by default)'),
        { name: 'after', in: 'query', required: false, description: 'the features after this id (the next link)', schema: { type: 'integer' } },
        { name: 'before', in: 'query', required: false, description: 'the features before this id (the prev link)', schema: { type: 'integer' } },
      ], geojson('a FeatureCollection with numberMatched, numberReturned, timeStamp and links')),
      '/collections/{collectionId}/items/{featureId}': read('one feature', [collectionId, { name: 'featureId', in: 'path', required: true, schema: { type: 'integer' } }, crsParam('crs', 'the CRS of the answer')], geojson('a Feature')),
      '/collections/{collectionId}/download.geojson': download('every feature of the collection as one GeoJSON file (WGS 84 longitude/latitude)', [collectionId], 'application/geo+json'),
      '/collections/{collectionId}/download.csv': download('every feature of the collection as CSV: fid, the attributes, the geometry as WKT (WGS 84 longitude/latitude) in the column WKT', [collectionId], 'text/csv'),
      '/download.gpkg': download('every collection as a layer of one GeoPackage, in its storage CRS', [], 'application/geopackage+sqlite3'),
    },
    components: {
      schemas: {
        problem: {
          type: 'object',
          properties: { code: { type: 'string' }, description: { type: 'string' }, type: { type: 'string' }, title: { type: 'string' }, status: { type: 'integer' }, detail: { type: 'string' } },
        },
      },
    },
  };
}
