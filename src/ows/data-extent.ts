import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import { collectionExtents, listCollections } from './collections.repo.js';

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
      const { rows } = await sql<{ first: Date | string | null; last: Date | string | null }>`
        select min(${sql.ref(name)}) as first, max(${sql.ref(name)}) as last from ${sql.id(schema, collection.name)}`.execute(db);
      const first = rows[0]?.first ? new Date(rows[0].first) : null;
      const last = rows[0]?.last ? new Date(rows[0].last) : null;
      if (first && (!start || first < start)) start = first;
      if (last && (!end || last > end)) end = last;
    }
  }
  const bbox = boxes.length === 0 ? null : [
    Math.min(...boxes.map((box) => box[0])), Math.min(...boxes.map((box) => box[1])),
    Math.max(...boxes.map((box) => box[2])), Math.max(...boxes.map((box) => box[3])),
  ] as [number, number, number, number];
  return { bbox, start, end, collections: collections.map((collection) => collection.name) };
}
