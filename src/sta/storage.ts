import { sql, type RawBuilder } from 'kysely';
import type { Database } from '../db/client.js';
import { ENTITIES, type EntityDef, type PropertyDef } from './model.js';

/**
 * The tables of one dataset's SensorThings service, created in its own schema. Every statement is
 * `if not exists` so that a RELEASE saga step that runs twice changes nothing.
 *
 * Cascades follow the standard: deleting a Thing deletes its Datastreams and HistoricalLocations,
 * a Datastream its Observations, a Sensor or ObservedProperty its Datastreams, a FeatureOfInterest
 * its Observations. Datastream times are not stored: they are aggregated from the Observations at
 * read time (see resolver.ts), so no write can leave them stale.
 */

function columnsOf(property: PropertyDef): RawBuilder<unknown>[] {
  if (property.derived) return [];
  const notNull = property.required ? sql` not null` : sql``;
  switch (property.kind) {
    case 'string':
      return [sql`${sql.id(property.column)} text${notNull}`];
    case 'json':
    case 'object':
    case 'geometry':
      return [sql`${sql.id(property.column)} jsonb${notNull}`];
    case 'datetime':
      return [sql`${sql.id(property.column)} timestamptz${notNull}`];
    case 'interval':
      return [
        sql`${sql.id(`${property.column}_start`)} timestamptz${notNull}`,
        sql`${sql.id(`${property.column}_end`)} timestamptz${notNull}`,
      ];
  }
}

function foreignKeyColumns(schema: string, entity: EntityDef): RawBuilder<unknown>[] {
  return entity.navigations.flatMap((nav) => {
    if (nav.join.kind !== 'fkHere') return [];
    const target = ENTITIES[nav.target];
    const notNull = nav.required ? sql` not null` : sql``;
    return [sql`${sql.id(nav.join.column)} bigint${notNull} references ${sql.id(schema, target.table)} (id) on delete cascade`];
  });
}

/** Tables in dependency order: a table's foreign keys name only tables created before it. */
const ORDER = ['Things', 'Locations', 'HistoricalLocations', 'Sensors', 'ObservedProperties', 'Datastreams', 'FeaturesOfInterest', 'Observations'] as const;

export async function provisionStorage(trx: Database, schema: string): Promise<void> {
  const table = (name: string) => sql.id(schema, name);
  await sql`create schema if not exists ${sql.id(schema)}`.execute(trx);
  for (const set of ORDER) {
    const entity = ENTITIES[set];
    const columns = [
      sql`id bigint generated always as identity primary key`,
      ...entity.properties.flatMap(columnsOf),
      ...foreignKeyColumns(schema, entity),
    ];
    if (set === 'FeaturesOfInterest') {
      // The Location a FeatureOfInterest was generated from, so later Observations reuse it.
      columns.push(sql`generated_from_location_id bigint unique references ${table('locations')} (id) on delete set null`);
    }
    await sql`create table if not exists ${table(entity.table)} (${sql.join(columns)})`.execute(trx);
  }
  await sql`create table if not exists ${table('thing_locations')} (
    thing_id bigint not null references ${table('things')} (id) on delete cascade,
    location_id bigint not null references ${table('locations')} (id) on delete cascade,
    primary key (thing_id, location_id))`.execute(trx);
  await sql`create table if not exists ${table('historical_location_locations')} (
    historical_location_id bigint not null references ${table('historical_locations')} (id) on delete cascade,
    location_id bigint not null references ${table('locations')} (id) on delete cascade,
    primary key (historical_location_id, location_id))`.execute(trx);

  const index = async (name: string, on: string, columns: RawBuilder<unknown>) =>
    sql`create index if not exists ${sql.id(name)} on ${table(on)} (${columns})`.execute(trx);
  // The end is carried along so that a time window (`phenomenonTime ge t1 and phenomenonTime lt t2`)
  // is answered from the index alone.
  await sql`create index if not exists observations_datastream_time on ${table('observations')}
    (datastream_id, phenomenon_time_start desc, id desc) include (phenomenon_time_end)`.execute(trx);
  // A Datastream's phenomenonTime and resultTime are min/max over its Observations at read time;
  // with these each bound is one index probe, not a scan of the stream.
  await index('observations_datastream_time_end', 'observations', sql`datastream_id, phenomenon_time_end`);
  await index('observations_datastream_result_time', 'observations', sql`datastream_id, result_time`);
  await index('observations_feature', 'observations', sql`feature_of_interest_id`);
  // A Datastream's observedArea: its distinct features, found by skipping through this index.
  await index('observations_datastream_feature', 'observations', sql`datastream_id, feature_of_interest_id`);
  await index('datastreams_thing', 'datastreams', sql`thing_id`);
  await index('datastreams_sensor', 'datastreams', sql`sensor_id`);
  await index('datastreams_observed_property', 'datastreams', sql`observed_property_id`);
  await index('historical_locations_thing', 'historical_locations', sql`thing_id, time desc`);
  await index('thing_locations_location', 'thing_locations', sql`location_id`);
  await index('historical_location_locations_location', 'historical_location_locations', sql`location_id`);
}
