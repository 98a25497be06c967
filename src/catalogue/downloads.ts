import type { RecordApi, RecordDownload } from './records.js';

/**
 * The bulk downloads a named API offers (the contract's "Open data", Bulk downloads), each a
 * distribution of the dataset: an OWS API's GeoPackage (when it has collections) and each
 * collection as GeoJSON and CSV; a SensorThings API's Observations as CSV and Things as GeoJSON,
 * unless an upstream server answers it (its data is not ours to read).
 */
export function downloadsOf(datasetIri: string, apis: readonly RecordApi[], collectionsBySlug: ReadonlyMap<string, readonly string[]>): RecordDownload[] {
  return apis.flatMap((api): RecordDownload[] => {
    const base = `${datasetIri}/${api.slug}`;
    if (api.standard === 'STA') {
      if (api.upstream) return [];
      return [
        { url: `${base}/download/observations.csv`, title: `${api.name}: every Observation (CSV)`, mediaType: 'text/csv', format: 'CSV' },
        { url: `${base}/download/things.geojson`, title: `${api.name}: the Things at their latest Location (GeoJSON)`, mediaType: 'application/geo+json', format: 'GEOJSON' },
      ];
    }
    const collections = collectionsBySlug.get(api.slug) ?? [];
    if (collections.length === 0) return [];
    return [
      { url: `${base}/download.gpkg`, title: `${api.name}: every collection (GeoPackage)`, mediaType: 'application/geopackage+sqlite3', format: 'GPKG' },
      ...collections.flatMap((name): RecordDownload[] => [
        { url: `${base}/collections/${name}/download.geojson`, title: `${api.name}: ${name} (GeoJSON)`, mediaType: 'application/geo+json', format: 'GEOJSON' },
        { url: `${base}/collections/${name}/download.csv`, title: `${api.name}: ${name} (CSV, geometry as WKT)`, mediaType: 'text/csv', format: 'CSV' },
      ]),
    ];
  });
}
