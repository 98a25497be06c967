/**
 * The eight entity types of SensorThings 1.1, and the MultiDatastream of its extension, as one
 * table: every other module (DDL, resolver, serialization, writes) reads its columns, types and
 * navigations from here, so that adding a property is one line.
 */

/**
 * How a property is stored and checked:
 * - `string`: text; `json`: jsonb holding any JSON value (`result`, `properties`, ...);
 * - `object`: jsonb that must be a JSON object (`unitOfMeasurement`, `properties`, `parameters`);
 * - `geometry`: a GeoJSON geometry as jsonb (no PostGIS in the embedded database);
 * - `datetime`: one timestamptz; `interval`: two timestamptz columns `<column>_start`/`_end`;
 * - `objectArray`/`stringArray`: jsonb that must be a JSON array of objects / of strings (a
 *   MultiDatastream's `unitOfMeasurements` and `multiObservationDataTypes`).
 */
export type PropertyKind = 'string' | 'json' | 'object' | 'geometry' | 'datetime' | 'interval' | 'objectArray' | 'stringArray';

export interface PropertyDef {
  name: string;
  column: string;
  kind: PropertyKind;
  /** Must be given on create and kept non-null. */
  required?: boolean;
  /** Computed by the server from other rows; never written by a client. */
  derived?: boolean;
  /** Filled by the server when a create omits it (Observation's phenomenonTime: now). */
  defaultsToNow?: boolean;
}

export type EntitySetName =
  | 'Things' | 'Locations' | 'HistoricalLocations' | 'Datastreams' | 'MultiDatastreams'
  | 'Sensors' | 'ObservedProperties' | 'Observations' | 'FeaturesOfInterest';

/**
 * How a navigation reaches its target:
 * - `fkHere`: this entity's column holds the target id (to-one);
 * - `fkThere`: the target's column holds this entity's id (to-many);
 * - `link`: a link table with a column for each side (to-many); with `rank`, the link table's
 *   column that orders the targets (filled in insertion order), their order when none is asked.
 */
export type NavJoin =
  | { kind: 'fkHere'; column: string }
  | { kind: 'fkThere'; column: string }
  | { kind: 'link'; table: string; here: string; there: string; rank?: string };

export interface NavigationDef {
  name: string;
  target: EntitySetName;
  toMany: boolean;
  join: NavJoin;
  /** The navigation back from the target, used to link an entity created below this one. */
  inverse: string;
  /** A to-one link every entity of this type must have. */
  required?: boolean;
}

export interface EntityDef {
  set: EntitySetName;
  /** The singular name, as a to-one navigation and in messages. */
  singular: string;
  table: string;
  properties: PropertyDef[];
  navigations: NavigationDef[];
}

const text = (name: string, column = name, required = true): PropertyDef => ({ name, column, kind: 'string', required });
const properties: PropertyDef = { name: 'properties', column: 'properties', kind: 'object' };

const link = (table: string, here: string, there: string, rank?: string): NavJoin =>
  (rank ? { kind: 'link', table, here, there, rank } : { kind: 'link', table, here, there });

/** The ObservedProperties of a MultiDatastream, in the order of its result arrays. */
export const MULTI_DATASTREAM_PROPERTIES = 'multi_datastream_observed_properties';

export const ENTITIES: Record<EntitySetName, EntityDef> = {
  Things: {
    set: 'Things', singular: 'Thing', table: 'things',
    properties: [text('name'), text('description'), properties],
    navigations: [
      { name: 'Locations', target: 'Locations', toMany: true, join: link('thing_locations', 'thing_id', 'location_id'), inverse: 'Things' },
      { name: 'HistoricalLocations', target: 'HistoricalLocations', toMany: true, join: { kind: 'fkThere', column: 'thing_id' }, inverse: 'Thing' },
      { name: 'Datastreams', target: 'Datastreams', toMany: true, join: { kind: 'fkThere', column: 'thing_id' }, inverse: 'Thing' },
      { name: 'MultiDatastreams', target: 'MultiDatastreams', toMany: true, join: { kind: 'fkThere', column: 'thing_id' }, inverse: 'Thing' },
    ],
  },
  Locations: {
    set: 'Locations', singular: 'Location', table: 'locations',
    properties: [text('name'), text('description'), text('encodingType', 'encoding_type'),
      { name: 'location', column: 'location', kind: 'geometry', required: true }, properties],
    navigations: [
      { name: 'Things', target: 'Things', toMany: true, join: link('thing_locations', 'location_id', 'thing_id'), inverse: 'Locations' },
      { name: 'HistoricalLocations', target: 'HistoricalLocations', toMany: true,
        join: link('historical_location_locations', 'location_id', 'historical_location_id'), inverse: 'Locations' },
    ],
  },
  HistoricalLocations: {
    set: 'HistoricalLocations', singular: 'HistoricalLocation', table: 'historical_locations',
    properties: [{ name: 'time', column: 'time', kind: 'datetime', required: true }],
    navigations: [
      { name: 'Thing', target: 'Things', toMany: false, join: { kind: 'fkHere', column: 'thing_id' }, inverse: 'HistoricalLocations', required: true },
      { name: 'Locations', target: 'Locations', toMany: true,
        join: link('historical_location_locations', 'historical_location_id', 'location_id'), inverse: 'HistoricalLocations' },
    ],
  },
  Datastreams: {
    set: 'Datastreams', singular: 'Datastream', table: 'datastreams',
    properties: [text('name'), text('description'),
      { name: 'unitOfMeasurement', column: 'unit_of_measurement', kind: 'object', required: true },
      text('observationType', 'observation_type'),
      { name: 'observedArea', column: 'observed_area', kind: 'geometry', derived: true },
      { name: 'phenomenonTime', column: 'phenomenon_time', kind: 'interval', derived: true },
      { name: 'resultTime', column: 'result_time', kind: 'interval', derived: true },
      properties],
    navigations: [
      { name: 'Thing', target: 'Things', toMany: false, join: { kind: 'fkHere', column: 'thing_id' }, inverse: 'Datastreams', required: true },
      { name: 'Sensor', target: 'Sensors', toMany: false, join: { kind: 'fkHere', column: 'sensor_id' }, inverse: 'Datastreams', required: true },
      { name: 'ObservedProperty', target: 'ObservedProperties', toMany: false, join: { kind: 'fkHere', column: 'observed_property_id' }, inverse: 'Datastreams', required: true },
      { name: 'Observations', target: 'Observations', toMany: true, join: { kind: 'fkThere', column: 'datastream_id' }, inverse: 'Datastream' },
    ],
  },
  // The MultiDatastream extension (SensorThings 1.1 §9, as FROST-Server serves it): one Observation
  // holds an array result, one value per ObservedProperty, in the order of the link table's rank.
  MultiDatastreams: {
    set: 'MultiDatastreams', singular: 'MultiDatastream', table: 'multi_datastreams',
    properties: [text('name'), text('description'),
      { name: 'unitOfMeasurements', column: 'unit_of_measurements', kind: 'objectArray', required: true },
      text('observationType', 'observation_type'),
      { name: 'multiObservationDataTypes', column: 'multi_observation_data_types', kind: 'stringArray', required: true },
      { name: 'observedArea', column: 'observed_area', kind: 'geometry', derived: true },
      { name: 'phenomenonTime', column: 'phenomenon_time', kind: 'interval', derived: true },
      { name: 'resultTime', column: 'result_time', kind: 'interval', derived: true },
      properties],
    navigations: [
      { name: 'Thing', target: 'Things', toMany: false, join: { kind: 'fkHere', column: 'thing_id' }, inverse: 'MultiDatastreams', required: true },
      { name: 'Sensor', target: 'Sensors', toMany: false, join: { kind: 'fkHere', column: 'sensor_id' }, inverse: 'MultiDatastreams', required: true },
      { name: 'ObservedProperties', target: 'ObservedProperties', toMany: true,
        join: link(MULTI_DATASTREAM_PROPERTIES, 'multi_datastream_id', 'observed_property_id', 'rank'), inverse: 'MultiDatastreams' },
      { name: 'Observations', target: 'Observations', toMany: true, join: { kind: 'fkThere', column: 'multi_datastream_id' }, inverse: 'MultiDatastream' },
    ],
  },
  Sensors: {
    set: 'Sensors', singular: 'Sensor', table: 'sensors',
    properties: [text('name'), text('description'), text('encodingType', 'encoding_type'),
      { name: 'metadata', column: 'metadata', kind: 'json', required: true }, properties],
    navigations: [
      { name: 'Datastreams', target: 'Datastreams', toMany: true, join: { kind: 'fkThere', column: 'sensor_id' }, inverse: 'Sensor' },
      { name: 'MultiDatastreams', target: 'MultiDatastreams', toMany: true, join: { kind: 'fkThere', column: 'sensor_id' }, inverse: 'Sensor' },
    ],
  },
  ObservedProperties: {
    set: 'ObservedProperties', singular: 'ObservedProperty', table: 'observed_properties',
    properties: [text('name'), text('definition'), text('description'), properties],
    navigations: [
      { name: 'Datastreams', target: 'Datastreams', toMany: true, join: { kind: 'fkThere', column: 'observed_property_id' }, inverse: 'ObservedProperty' },
      { name: 'MultiDatastreams', target: 'MultiDatastreams', toMany: true,
        join: link(MULTI_DATASTREAM_PROPERTIES, 'observed_property_id', 'multi_datastream_id'), inverse: 'ObservedProperties' },
    ],
  },
  Observations: {
    set: 'Observations', singular: 'Observation', table: 'observations',
    properties: [
      { name: 'phenomenonTime', column: 'phenomenon_time', kind: 'interval', required: true, defaultsToNow: true },
      { name: 'resultTime', column: 'result_time', kind: 'datetime' },
      { name: 'result', column: 'result', kind: 'json', required: true },
      { name: 'resultQuality', column: 'result_quality', kind: 'json' },
      { name: 'validTime', column: 'valid_time', kind: 'interval' },
      { name: 'parameters', column: 'parameters', kind: 'object' },
    ],
    navigations: [
      // Exactly one of the two (checked on every write, see multi-datastream.ts), so neither is `required`.
      { name: 'Datastream', target: 'Datastreams', toMany: false, join: { kind: 'fkHere', column: 'datastream_id' }, inverse: 'Observations' },
      { name: 'MultiDatastream', target: 'MultiDatastreams', toMany: false, join: { kind: 'fkHere', column: 'multi_datastream_id' }, inverse: 'Observations' },
      { name: 'FeatureOfInterest', target: 'FeaturesOfInterest', toMany: false, join: { kind: 'fkHere', column: 'feature_of_interest_id' }, inverse: 'Observations', required: true },
    ],
  },
  FeaturesOfInterest: {
    set: 'FeaturesOfInterest', singular: 'FeatureOfInterest', table: 'features_of_interest',
    properties: [text('name'), text('description'), text('encodingType', 'encoding_type'),
      { name: 'feature', column: 'feature', kind: 'geometry', required: true }, properties],
    navigations: [
      { name: 'Observations', target: 'Observations', toMany: true, join: { kind: 'fkThere', column: 'feature_of_interest_id' }, inverse: 'FeatureOfInterest' },
    ],
  },
};

export const ENTITY_SETS = Object.keys(ENTITIES) as EntitySetName[];

export function entityBySet(name: string): EntityDef | undefined {
  return Object.hasOwn(ENTITIES, name) ? ENTITIES[name as EntitySetName] : undefined;
}

export const propertyOf = (entity: EntityDef, name: string) => entity.properties.find((p) => p.name === name);
export const navigationOf = (entity: EntityDef, name: string) => entity.navigations.find((n) => n.name === name);

/** The to-one foreign keys of a type: the columns its rows carry besides their properties. */
export const foreignKeys = (entity: EntityDef) =>
  entity.navigations.flatMap((n) => (n.join.kind === 'fkHere' ? [{ nav: n, column: n.join.column }] : []));
