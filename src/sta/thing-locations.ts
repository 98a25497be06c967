import { sql } from 'kysely';
import { ENTITIES } from './model.js';
import { tableOf } from './sql-context.js';
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

/**
 * A HistoricalLocation created on its own (`POST HistoricalLocations`, or below a Thing) that is the
 * newest of its Thing (no other one has a later `time`; an equal time counts as newer) moves the
 * Thing: its Locations become the Thing's current ones, as FROST-Server does. An older one only
 * fills in the past, and one without Locations leaves the Thing where it is.
 */
export async function moveThingToHistoricalLocation(w: WriteContext, historicalId: number) {
  const historical = tableOf(w.ctx, ENTITIES.HistoricalLocations);
  const { rows } = await sql<{ thing_id: number | string }>`select h.thing_id from ${historical} h
    where h.id = ${historicalId}
      and exists (select 1 from ${sql.id(w.ctx.schema, 'historical_location_locations')} hl where hl.historical_location_id = h.id)
      and not exists (select 1 from ${historical} o where o.thing_id = h.thing_id and o.id <> h.id and o.time > h.time)`.execute(w.trx);
  if (!rows[0]) return;
  const thingId = Number(rows[0].thing_id);
  const links = sql.id(w.ctx.schema, 'thing_locations');
  await sql`delete from ${links} where thing_id = ${thingId}`.execute(w.trx);
  await sql`insert into ${links} (thing_id, location_id)
    select ${thingId}, location_id from ${sql.id(w.ctx.schema, 'historical_location_locations')}
    where historical_location_id = ${historicalId}`.execute(w.trx);
}

/** The HistoricalLocations that name a Location (read before the Location is deleted). */
export async function historicalLocationsOf(w: WriteContext, locationId: number): Promise<number[]> {
  const { rows } = await sql<{ id: number | string }>`select historical_location_id as id
    from ${sql.id(w.ctx.schema, 'historical_location_locations')} where location_id = ${locationId}`.execute(w.trx);
  return rows.map((row) => Number(row.id));
}

/**
 * After a Location is deleted: those of its HistoricalLocations left without any Location go too
 * (as FROST-Server does); one that still names another Location stays.
 */
export async function deleteEmptiedHistoricalLocations(w: WriteContext, candidates: number[]) {
  if (candidates.length === 0) return;
  const historical = ENTITIES.HistoricalLocations;
  const { rows } = await sql<{ id: number | string }>`delete from ${tableOf(w.ctx, historical)} h
    where h.id = any(${candidates}::bigint[])
      and not exists (select 1 from ${sql.id(w.ctx.schema, 'historical_location_locations')} hl where hl.historical_location_id = h.id)
    returning h.id`.execute(w.trx);
  for (const row of rows) recordChange(w, historical, Number(row.id), 'delete');
}
