import { AppError, validationFailed } from '../errors.js';
import type { MappedRecord } from '../ingest/types.js';
import { ENTITIES, navigationOf, propertyOf, type EntityDef } from './model.js';
import { bindProperty, parseEntity, type ParsedEntity } from './validate.js';

/**
 * One mapped pipeline record checked in JS, before any SQL, with the rules the STA API applies to
 * a POSTed Observation (`parseEntity`): what it will store, or why it cannot be stored, naming
 * the target path at fault (`result`, `phenomenonTime`, `Datastream.name`, ...).
 *
 * A Datastream named by a record is created on first sight when the API has none of that name.
 * What STA requires and a mapping often does not give is filled with these defaults (only where
 * the record has no such member; a member given as null is refused, as the API refuses it):
 * - Datastream: `description` "Created by a pipeline", `unitOfMeasurement`
 *   `{"name": null, "symbol": null, "definition": null}` (unknown), `observationType` OM_Measurement;
 * - its Thing, Sensor and ObservedProperty: `name` the Datastream's name, `description` "Created by
 *   a pipeline"; a Sensor's `encodingType` "text/plain" and `metadata` "", an ObservedProperty's
 *   `definition` "" (nothing is known of them; an operator may complete them through the API).
 * So `{result, Datastream: {name}, FeatureOfInterest}` is enough for a record to be stored, and
 * `{result, Datastream: {name, Thing: {Location}}}` too: a Thing created with a Location gives its
 * Observations their FeatureOfInterest (see `thingToCreate`).
 */

export const OM_MEASUREMENT = 'http://www.opengis.net/def/observationType/OGC-OM/2.0/OM_Measurement';
export const CREATED_BY_PIPELINE = 'Created by a pipeline';

const DATASTREAM_DEFAULTS = {
  description: CREATED_BY_PIPELINE,
  unitOfMeasurement: { name: null, symbol: null, definition: null },
  observationType: OM_MEASUREMENT,
};
// A FeatureOfInterest given inline is GeoJSON here, as every geometry of this server is.
const GEOJSON = 'application/geo+json';
const FEATURE_DEFAULTS = { description: CREATED_BY_PIPELINE, encodingType: GEOJSON };
const THING_LOCATION = 'Datastream.Thing.Location';
const LOCATION_GEOMETRY = propertyOf(ENTITIES.Locations, 'location')!;

/** Why a record is not stored: `field` the target path at fault, `reason` readable on its own. */
export interface RecordFault {
  fault: true;
  field: string | null;
  reason: string;
}

/** A Datastream to create (or to reuse by name): its own values and its three linked entities. */
export interface DatastreamDefinition {
  name: string;
  datastream: ParsedEntity;
  thing: ParsedEntity;
  /**
   * `Datastream.Thing.Location` as the record gave it (checked): the geometry of the Location the
   * Thing gets when it is created here; unused for a Thing reused by name.
   */
  thingLocation?: unknown;
  sensor: ParsedEntity;
  observedProperty: ParsedEntity;
}

export type DatastreamChoice = { kind: 'id'; id: number } | { kind: 'name'; definition: DatastreamDefinition };

export type FeatureChoice =
  | { kind: 'id'; id: number }
  /** `key` identifies equal features within the writer (its bound values as text). */
  | { kind: 'inline'; key: string; parsed: ParsedEntity }
  /** Derived from the Datastream's Thing's Location, as a single create does. */
  | { kind: 'derived' };

/** One Observation ready to bind: jsonb as JSON text, times as ISO text. */
export interface ObservationRow {
  datastream: DatastreamChoice;
  feature: FeatureChoice;
  phenomenonStart: string;
  phenomenonEnd: string;
  resultTime: string | null;
  result: string;
  resultQuality: string | null;
  validStart: string | null;
  validEnd: string | null;
  parameters: string | null;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export const recordFault = (field: string | null, reason: string): RecordFault => ({ fault: true, field, reason });

export const isFault = (value: unknown): value is RecordFault => isObject(value) && value['fault'] === true;

/** A positive integer id, given as a number or as its decimal text; undefined otherwise. */
function idValue(value: unknown): number | undefined {
  const id = typeof value === 'string' && /^\d{1,16}$/.test(value) ? Number(value) : value;
  return typeof id === 'number' && Number.isSafeInteger(id) && id > 0 ? id : undefined;
}

/** The record's members with the defaults under them; a member the record leaves undefined takes the default. */
function withDefaults(given: Record<string, unknown>, defaults: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...defaults };
  for (const [name, value] of Object.entries(given)) if (value !== undefined) merged[name] = value;
  return merged;
}

/** A record writes one Observation and finds (or creates) its Datastream: nothing else is linked or created from it. */
function refuseNavigations(entity: EntityDef, value: Record<string, unknown>, field: string) {
  for (const name of Object.keys(value)) {
    if (navigationOf(entity, name)) throw validationFailed(`${field}.${name}`, `is not taken from a pipeline's record; link it through the API`);
  }
}

// PostgreSQL stores no NUL character in text, nor `\u0000` in jsonb; JSON writes NUL as `\u0000`
// (an even run of backslashes before it is escaped backslashes, not the escape itself).
const JSON_NUL = /(?:^|[^\\])(?:\\\\)*\\u0000/;

function refuseNul(parsed: ParsedEntity) {
  for (const [property, value] of parsed.values) {
    if (typeof value !== 'string') continue;
    if (property.kind === 'string' ? value.includes('\0') : JSON_NUL.test(value)) {
      const field = parsed.field ? `${parsed.field}.${property.name}` : property.name;
      throw validationFailed(field, 'holds a NUL character (\\u0000), which cannot be stored');
    }
  }
}

function parseChecked(entity: EntityDef, body: Record<string, unknown>, field: string): ParsedEntity {
  const parsed = parseEntity(entity, body, field, 'create');
  refuseNul(parsed);
  return parsed;
}

const nameOf = (parsed: ParsedEntity) => parsed.values.get(propertyOf(parsed.entity, 'name')!) as string;

function parseLinked(entity: EntityDef, raw: unknown, field: string, defaults: Record<string, unknown>): ParsedEntity {
  const given = raw === undefined ? {} : raw;
  if (!isObject(given)) throw validationFailed(field, `must be a ${entity.singular} object`);
  if (Object.hasOwn(given, '@iot.id')) {
    throw validationFailed(`${field}.@iot.id`, `is not taken here: a pipeline names the ${entity.singular} (${field}.name) and reuses the one of that name`);
  }
  refuseNavigations(entity, given, field);
  return parseChecked(entity, withDefaults(given, defaults), field);
}

/**
 * `Datastream.Thing.Location` checked as the STA API checks a Location's `location` (GeoJSON, no
 * NUL), whether or not it will be used: a record's fault does not depend on what the API holds.
 * Answers it as given; undefined when the record has none (the common case costs one look-up).
 */
function thingLocationOf(thing: unknown): unknown {
  if (!isObject(thing) || thing['Location'] === undefined) return undefined;
  const text = bindProperty(LOCATION_GEOMETRY, thing['Location'], THING_LOCATION) as string;
  if (JSON_NUL.test(text)) throw validationFailed(THING_LOCATION, 'holds a NUL character (\\u0000), which cannot be stored');
  return thing['Location'];
}

/** The Thing's own members: `Location` is no member of a Thing but the Location it is created with. */
function thingMembers(thing: unknown, location: unknown): unknown {
  if (location === undefined) return thing;
  const { Location: _location, ...own } = thing as Record<string, unknown>;
  return own;
}

/** With `@iot.id`, only a Thing holding nothing but a Location may come along (it is ignored, the Datastream exists). */
const onlyLocation = (name: string, value: unknown) =>
  name === 'Thing' && isObject(value) && Object.keys(value).every((member) => member === 'Location' || value[member] === undefined);

function parseDatastream(raw: unknown): DatastreamChoice {
  if (raw === undefined) throw validationFailed('Datastream.name', 'is required (or Datastream.@iot.id): every Observation belongs to a Datastream');
  if (!isObject(raw)) throw validationFailed('Datastream', 'must be an object with name or @iot.id');
  if (Object.hasOwn(raw, '@iot.id')) {
    const id = idValue(raw['@iot.id']);
    if (id === undefined) throw validationFailed('Datastream.@iot.id', 'must be a positive integer');
    if (Object.keys(raw).some((name) => name !== '@iot.id' && raw[name] !== undefined && !onlyLocation(name, raw[name]))) {
      throw validationFailed('Datastream.@iot.id', 'names an existing Datastream and takes no other member (give either @iot.id or name)');
    }
    thingLocationOf(raw['Thing']);
    return { kind: 'id', id };
  }
  const { Thing, Sensor, ObservedProperty, ...own } = raw;
  refuseNavigations(ENTITIES.Datastreams, own, 'Datastream');
  const datastream = parseChecked(ENTITIES.Datastreams, withDefaults(own, DATASTREAM_DEFAULTS), 'Datastream');
  const name = nameOf(datastream);
  const named = { name, description: CREATED_BY_PIPELINE };
  const thingLocation = thingLocationOf(Thing);
  return {
    kind: 'name',
    definition: {
      name, datastream,
      thing: parseLinked(ENTITIES.Things, thingMembers(Thing, thingLocation), 'Datastream.Thing', named),
      ...(thingLocation === undefined ? {} : { thingLocation }),
      sensor: parseLinked(ENTITIES.Sensors, Sensor, 'Datastream.Sensor', { ...named, encodingType: 'text/plain', metadata: '' }),
      observedProperty: parseLinked(ENTITIES.ObservedProperties, ObservedProperty, 'Datastream.ObservedProperty', { ...named, definition: '' }),
    },
  };
}

const THING_LOCATIONS = navigationOf(ENTITIES.Things, 'Locations')!;

/**
 * The Thing to create for a Datastream created on first sight: with its Location when the record
 * gave one, inline as in `POST Things` with `Locations`, so that it is linked and its
 * HistoricalLocation made as the STA API does (see deep-insert.ts). Built only here, at creation:
 * a record whose Thing exists pays nothing for it.
 */
export function thingToCreate(definition: DatastreamDefinition): ParsedEntity {
  const { thing, thingLocation } = definition;
  if (thingLocation === undefined) return thing;
  const location = parseChecked(ENTITIES.Locations, {
    name: nameOf(thing), description: CREATED_BY_PIPELINE, encodingType: GEOJSON, location: thingLocation,
  }, THING_LOCATION);
  return { ...thing, toMany: new Map([...thing.toMany, [THING_LOCATIONS, [{ kind: 'new', parsed: location }]]]) };
}

function parseFeature(raw: unknown): FeatureChoice {
  if (raw === undefined) return { kind: 'derived' };
  if (!isObject(raw)) throw validationFailed('FeatureOfInterest', 'must be a FeatureOfInterest object or {"@iot.id": …}');
  if (Object.hasOwn(raw, '@iot.id')) {
    const id = idValue(raw['@iot.id']);
    if (id === undefined || Object.keys(raw).length > 1) throw validationFailed('FeatureOfInterest.@iot.id', 'must be a positive integer, given alone');
    return { kind: 'id', id };
  }
  refuseNavigations(ENTITIES.FeaturesOfInterest, raw, 'FeatureOfInterest');
  const parsed = parseChecked(ENTITIES.FeaturesOfInterest, withDefaults(raw, FEATURE_DEFAULTS), 'FeatureOfInterest');
  const key = JSON.stringify(ENTITIES.FeaturesOfInterest.properties.map((property) => parsed.values.get(property) ?? null));
  return { kind: 'inline', key, parsed };
}

const observationProperty = (name: string) => propertyOf(ENTITIES.Observations, name)!;
const PROPERTIES = {
  phenomenonTime: observationProperty('phenomenonTime'), result: observationProperty('result'),
  resultTime: observationProperty('resultTime'), resultQuality: observationProperty('resultQuality'),
  validTime: observationProperty('validTime'), parameters: observationProperty('parameters'),
};

function parseObservation(record: MappedRecord, batch: BatchParses): ObservationRow {
  if (!isObject(record.value)) throw validationFailed('result', 'the mapped record is not an object');
  const { Datastream, FeatureOfInterest, ...own } = record.value;
  // The Observation's own members first: a record without `result` is refused for that, whatever its Datastream.
  const body = withDefaults(own, { phenomenonTime: record.receivedAt.toISOString() });
  const observation = parseChecked(ENTITIES.Observations, body, '');
  const datastream = batch.datastreams.parse(Datastream, parseDatastream);
  const feature = batch.features.parse(FeatureOfInterest, parseFeature);
  const phenomenon = observation.values.get(PROPERTIES.phenomenonTime) as { start: string; end: string };
  const valid = (observation.values.get(PROPERTIES.validTime) ?? null) as { start: string | null; end: string | null } | null;
  const text = (property: typeof PROPERTIES.result) => (observation.values.get(property) ?? null) as string | null;
  return {
    datastream, feature,
    phenomenonStart: phenomenon.start, phenomenonEnd: phenomenon.end,
    resultTime: text(PROPERTIES.resultTime),
    result: text(PROPERTIES.result)!,
    resultQuality: text(PROPERTIES.resultQuality),
    validStart: valid?.start ?? null, validEnd: valid?.end ?? null,
    parameters: text(PROPERTIES.parameters),
  };
}

/**
 * The records of one batch as Observation rows, or why not, each: never throws. A batch names few
 * Datastreams and features, over and over (a sensor's every reading): each distinct one is parsed
 * once per batch.
 */
export function parseRecords(records: readonly MappedRecord[]): (ObservationRow | RecordFault)[] {
  const batch: BatchParses = { datastreams: new ParsedOnce(), features: new ParsedOnce() };
  return records.map((record) => parseRecord(record, batch));
}

function parseRecord(record: MappedRecord, batch: BatchParses): ObservationRow | RecordFault {
  try {
    return parseObservation(record, batch);
  } catch (error) {
    const first = error instanceof AppError ? error.options.fieldErrors?.[0] : undefined;
    if (first) return recordFault(first.field, error instanceof Error ? error.message : `${first.field}: ${first.message}`);
    // A value too deep to serialize, a receivedAt that is no date: this record only.
    return recordFault(null, `the record could not be read: ${error instanceof Error ? error.message : String(error)}`);
  }
}

interface BatchParses {
  datastreams: ParsedOnce<DatastreamChoice>;
  features: ParsedOnce<FeatureChoice>;
}

/** Longer JSON than this is parsed each time rather than kept (a feature's polygon may be large). */
const MAX_KEY_LENGTH = 4096;

/**
 * A parse of a mapped member, kept by its JSON text for the rest of the batch, fault included.
 * Mapped records hold JSON values only (the mapper copies JSONata's answers through JSON, the
 * connectors make SQL values JSON), so equal text means an equal value and an equal parse.
 */
class ParsedOnce<T> {
  readonly #parses = new Map<string, { value: T } | { fault: unknown }>();

  parse(raw: unknown, parse: (raw: unknown) => T): T {
    if (raw === undefined || raw === null || typeof raw !== 'object') return parse(raw);
    let key: string;
    try {
      key = JSON.stringify(raw);
    } catch {
      return parse(raw);
    }
    if (key.length > MAX_KEY_LENGTH) return parse(raw);
    let kept = this.#parses.get(key);
    if (kept === undefined) {
      try {
        kept = { value: parse(raw) };
      } catch (fault) {
        kept = { fault };
      }
      this.#parses.set(key, kept);
    }
    if ('fault' in kept) throw kept.fault;
    return kept.value;
  }
}
