import { sql } from 'kysely';
import { validationFailed } from '../errors.js';
import { ENTITIES } from './model.js';
import { tableOf } from './sql-context.js';
import { recordChange, type WriteContext } from './write-sql.js';

/**
 * The FeatureOfInterest of an Observation created without one: the current Location of its
 * Datastream's (or MultiDatastream's) Thing (the newest linked), as the standard asks. One FeatureOfInterest per
 * Location, reused by every later Observation (the unique `generated_from_location_id`), so a
 * sensor that reports every second does not grow a feature per reading.
 */
export async function featureOfInterestFor(
  w: WriteContext, datastreamId: number, field: string, streams: 'Datastreams' | 'MultiDatastreams' = 'Datastreams',
): Promise<number> {
  const { rows: located } = await sql<{ location_id: number }>`select tl.location_id
    from ${tableOf(w.ctx, ENTITIES[streams])} d
    join ${sql.id(w.ctx.schema, 'thing_locations')} tl on tl.thing_id = d.thing_id
    where d.id = ${datastreamId} order by tl.location_id desc limit 1`.execute(w.trx);
  const locationId = located[0]?.location_id;
  if (locationId == null) {
    throw validationFailed(field, `is required: the Thing of this ${ENTITIES[streams].singular} has no Location to derive it from`);
  }
  const features = tableOf(w.ctx, ENTITIES.FeaturesOfInterest);
  const existing = await sql<{ id: number }>`select id from ${features} where generated_from_location_id = ${locationId}`.execute(w.trx);
  if (existing.rows[0]) return Number(existing.rows[0].id);
  // Two writers may derive from the same Location at once: the unique key keeps one; the other reads it.
  const inserted = await sql<{ id: number }>`insert into ${features} (name, description, encoding_type, feature, properties, generated_from_location_id)
    select name, description, encoding_type, location, properties, id from ${tableOf(w.ctx, ENTITIES.Locations)} where id = ${locationId}
    on conflict (generated_from_location_id) do nothing returning id`.execute(w.trx);
  if (inserted.rows[0]) {
    const id = Number(inserted.rows[0].id);
    recordChange(w, ENTITIES.FeaturesOfInterest, id, 'create');
    return id;
  }
  const raced = await sql<{ id: number }>`select id from ${features} where generated_from_location_id = ${locationId}`.execute(w.trx);
  return Number(raced.rows[0]!.id);
}
