import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { CSV_LINE_END, csvField, type Download } from '../util/download.js';
import { NAME_PATTERN } from './collection-definition.js';
import { findCollection, listCollections } from './collections.repo.js';
import { readFeatureBatch } from './features.repo.js';
import type { GeoPackageMaker } from './geopackage.js';
import type { CollectionDef, FeatureDownloadRequest } from './types.js';

/**
 * The bulk downloads of an OWS named API: `{base}/download.gpkg` (every collection a layer of one
 * GeoPackage, in its storage CRS) and `{base}/collections/{name}/download.geojson|csv` (GeoJSON as
 * RFC 7946 has it, CSV with the geometry as WKT, both in WGS 84 longitude/latitude). GeoJSON and
 * CSV are read in batches of fids, each a short statement: memory and connections stay flat
 * whatever the collection's size and however slowly the client reads.
 */

const BATCH = 5_000;
const COLLECTION_DOWNLOAD = /^\/collections\/([^/]+)\/download\.(geojson|csv)$/;

/** Whether a path below an OWS API's base is one of its downloads. */
export const isFeatureDownloadPath = (path: string) => path === '/download.gpkg' || COLLECTION_DOWNLOAD.test(path);


export async function featureDownload(db: Database, geopackages: GeoPackageMaker | null, request: FeatureDownloadRequest): Promise<Download> {
  const { schema, fileStem } = request;
  if (request.path === '/download.gpkg') {
    const collections = (await listCollections(db, schema)).map((collection) => collection.name);
    if (collections.length === 0) throw new AppError('NOT_FOUND', 'This API has no collections yet: there is nothing to download');
    if (!geopackages) throw new AppError('SERVICE_UNAVAILABLE', 'GeoPackage downloads need a PostgreSQL server (DATABASE_URL)');
    return {
      fileName: `${fileStem}.gpkg`,
      mediaType: 'application/geopackage+sqlite3',
      body: { kind: 'file', file: (signal) => geopackages.make(schema, request.version, collections, signal) },
    };
  }
  const [, name = '', format] = COLLECTION_DOWNLOAD.exec(request.path) ?? [];
  const collection = NAME_PATTERN.test(name) ? await findCollection(db, schema, name) : undefined;
  if (!collection) throw new AppError('NOT_FOUND', `Collection ${name.slice(0, 80)} does not exist`);
  if (format === 'csv') {
    return { fileName: `${fileStem}-${name}.csv`, mediaType: 'text/csv; charset=utf-8', body: { kind: 'chunks', chunks: () => collectionCsv(db, schema, collection) } };
  }
  return { fileName: `${fileStem}-${name}.geojson`, mediaType: 'application/geo+json', body: { kind: 'chunks', chunks: () => collectionGeoJson(db, schema, collection) } };
}

async function* collectionGeoJson(db: Database, schema: string, collection: CollectionDef): AsyncGenerator<string> {
  // The opening goes out with the first features: a database that fails the first read still gets a problem answer.
  let head = `{"type":"FeatureCollection","name":${JSON.stringify(collection.name)},"features":[`;
  let separator = '';
  for await (const batch of batches(db, schema, collection, 'geojson')) {
    let text = head;
    head = '';
    for (const feature of batch) {
      text += `${separator}{"type":"Feature","id":${feature.fid},"geometry":${feature.geometry},"properties":${JSON.stringify(feature.properties)}}`;
      separator = ',';
    }
    yield text;
  }
  yield `${head}]}\n`;
}

/** `fid`, the attributes in their definition's order, and `WKT` last (the name GDAL and QGIS take for a geometry column). */
async function* collectionCsv(db: Database, schema: string, collection: CollectionDef): AsyncGenerator<string> {
  const attributes = Object.keys(collection.properties);
  let head = ['fid', ...attributes, 'WKT'].join(',') + CSV_LINE_END;
  for await (const batch of batches(db, schema, collection, 'wkt')) {
    let text = head;
    head = '';
    for (const feature of batch) {
      const values = attributes.map((attribute) => {
        const value = feature.properties[attribute];
        return value === null || value === undefined ? '' : csvField(String(value));
      });
      text += `${feature.fid},${values.join(',')}${values.length > 0 ? ',' : ''}${csvField(feature.geometry)}${CSV_LINE_END}`;
    }
    yield text;
  }
  if (head) yield head;
}

async function* batches(db: Database, schema: string, collection: CollectionDef, encoding: 'geojson' | 'wkt') {
  let after = 0;
  for (;;) {
    const batch = await readFeatureBatch(db, schema, collection, after, BATCH, encoding);
    if (batch.length > 0) yield batch;
    if (batch.length < BATCH) return;
    after = batch[batch.length - 1]!.fid;
  }
}
