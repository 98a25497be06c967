import type { Database } from '../db/client.js';
import { unionOfBoxes } from '../util/boxes.js';
import { collectionExtents, dateTimeSpan, listCollections } from './collections.repo.js';

/** What an OWS API's data spans: its collections' box (WGS 84) and their date-time properties' earliest and latest values. */
export interface OwsDataExtent {
  bbox: [number, number, number, number] | null;
  start: Date | null;
  end: Date | null;
  /** The collections' names, in order. */
  collections: string[];
}

/** One `st_extent` and one min/max per date-time property per collection: the catalogue calls it rarely (it keeps the answer). */
export async function owsDataExtent(db: Database, schema: string): Promise<OwsDataExtent> {
  const collections = await listCollections(db, schema);
  const boxes = [...(await collectionExtents(db, schema, collections)).values()].flatMap((extent) => (extent ? [extent.wgs84] : []));
  let start: Date | null = null;
  let end: Date | null = null;
  for (const collection of collections) {
    for (const [name, type] of Object.entries(collection.properties)) {
      if (type !== 'date-time') continue;
      const { start: first, end: last } = await dateTimeSpan(db, schema, collection.name, name);
      if (first && (!start || first < start)) start = first;
      if (last && (!end || last > end)) end = last;
    }
  }
  return { bbox: unionOfBoxes(boxes), start, end, collections: collections.map((collection) => collection.name) };
}
