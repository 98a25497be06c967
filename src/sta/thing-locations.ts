import { sql } from 'kysely';
import { ENTITIES } from './model.js';
import { tableOf } from './resolver.js';
import { recordChange, type WriteContext } from './write-sql.js';

/**
 * A Thing's Locations are where it is now; each change of them is kept as a HistoricalLocation
 * (SensorThings 1.1, 8.2.3), created here whichever side of the link the request came from.
 */
export async function setThingLocations(w: WriteContext, thingId: number, locationIds: number[], replace: boolean) {
  if (locationIds.length === 0) return;
  const links = sql.id(w.ctx.schema, 'thing_locations');
  if (replace) {
    await sql`delete from ${links} where thing_id = ${thingId} and not (location_id = any(${locationIds}::bigint[]))`.execute(w.trx);
  }
  await sql`insert into ${links} (thing_id, location_id)
    select ${thingId}, unnest(${locationIds}::bigint[]) on conflict do nothing`.execute(w.trx);
  const historical = ENTITIES.HistoricalLocations;
  const { rows } = await sql<{ id: number }>`insert into ${tableOf(w.ctx, historical)} (thing_id, time)
    values (${thingId}, now()) returning id`.execute(w.trx);
  const historicalId = Number(rows[0]!.id);
  await sql`insert into ${sql.id(w.ctx.schema, 'historical_location_locations')} (historical_location_id, location_id)
    select ${historicalId}, unnest(${locationIds}::bigint[])`.execute(w.trx);
  recordChange(w, historical, historicalId, 'create');
}
