import type { Database } from '../db/client.js';
import { owsDataExtent } from '../ows/index.js';
import { staDataExtent } from '../sta/index.js';
import { unionOfBoxes } from '../util/boxes.js';
import type { DatasetData, ReadDatasetData } from './extent-cache.js';

/**
 * What a dataset's data spans, across its named APIs (they share the dataset's storage schema): the
 * union of the OWS collections' and the SensorThings features' boxes, the earliest and latest of
 * the Observations' phenomenon times and the features' date-time properties.
 */
export function readDatasetData(db: Database, postgis: boolean): ReadDatasetData {
  return async (dataset) => {
    const standards = new Set(dataset.apis.map((api) => api.standard));
    const parts: Array<{ bbox: readonly [number, number, number, number] | null; start: Date | null; end: Date | null }> = [];
    const collectionsBySlug = new Map<string, readonly string[]>();
    // Feature collections need PostGIS: without it an OWS API holds none.
    if (standards.has('OWS') && postgis) {
      const ows = await owsDataExtent(db, dataset.storageSchema);
      parts.push(ows);
      for (const api of dataset.apis) if (api.standard === 'OWS') collectionsBySlug.set(api.slug, ows.collections);
    }
    if (standards.has('STA')) parts.push(await staDataExtent(db, dataset.storageSchema, postgis));
    return { extent: union(parts), collectionsBySlug };
  };
}

function union(parts: ReadonlyArray<DatasetData['extent']>): DatasetData['extent'] {
  const boxes = parts.flatMap((part) => (part.bbox ? [part.bbox] : []));
  const starts = parts.flatMap((part) => (part.start ? [part.start.getTime()] : []));
  const ends = parts.flatMap((part) => (part.end ? [part.end.getTime()] : []));
  return {
    bbox: unionOfBoxes(boxes),
    start: starts.length === 0 ? null : new Date(Math.min(...starts)),
    end: ends.length === 0 ? null : new Date(Math.max(...ends)),
  };
}
