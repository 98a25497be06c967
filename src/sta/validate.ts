import { validationFailed } from '../errors.js';
import { parseDuration, shift } from './duration.js';
import { isoTime } from './iso-time.js';
import { ENTITIES, navigationOf, propertyOf, type EntityDef, type NavigationDef, type PropertyDef } from './model.js';

/**
 * A request body checked against the model before any SQL runs: every property typed, every
 * unknown name refused (400 naming it), nested entities parsed the same way with their path
 * (`Datastreams[0].Sensor.name`) as the field of any error.
 */

export type WriteMode = 'create' | 'patch' | 'put';

/** A property value ready to bind: jsonb as its JSON text, times as ISO text, an interval as both ends. */
export type BoundValue = string | null | { start: string | null; end: string | null };

/** A navigation's value in a body: a link to an existing entity or a new one to create. */
export type EntityInput =
  | { kind: 'ref'; id: number; field: string }
  | { kind: 'new'; parsed: ParsedEntity };

export interface ParsedEntity {
  entity: EntityDef;
  field: string;
  values: Map<PropertyDef, BoundValue>;
  toOne: Map<NavigationDef, EntityInput>;
  toMany: Map<NavigationDef, EntityInput[]>;
  /** The `@iot.id` the body carried, if any (refused on create, checked on update). */
  id?: unknown;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const fieldName = (prefix: string, name: string) => (prefix ? `${prefix}.${name}` : name);

const INTERVAL_FORMS = 'must be an ISO 8601 instant or interval (start/end, start/duration or duration/end)';

/** An instant or an interval, stored by its two ends: a duration is added to the start or taken from the end. */
function intervalBounds(value: unknown, field: string): { start: string; end: string } {
  if (typeof value !== 'string' || value.length > 100) throw validationFailed(field, INTERVAL_FORMS);
  const [first = '', second, extra] = value.split('/');
  if (extra !== undefined) throw validationFailed(field, INTERVAL_FORMS);
  if (second === undefined) {
    const instant = isoTime(first, field);
    return { start: instant, end: instant };
  }
  const moved = (instant: string, duration: string, sign: 1 | -1) => {
    const parsed = parseDuration(duration);
    if (!parsed) throw validationFailed(field, INTERVAL_FORMS);
    const time = shift(new Date(instant), parsed, sign);
    const year = new Date(time).getUTCFullYear();
    if (!Number.isFinite(time) || year < 1 || year > 9999) throw validationFailed(field, 'ends out of the years 0001 to 9999');
    return new Date(time).toISOString();
  };
  if (first.startsWith('P')) {
    const end = isoTime(second, field);
    return { start: moved(end, first, -1), end };
  }
  const start = isoTime(first, field);
  const end = second.startsWith('P') ? moved(start, second, 1) : isoTime(second, field);
  if (end < start) throw validationFailed(field, 'ends before it starts');
  return { start, end };
}

/** One property's value checked and made ready to bind; a fault is a 400 naming `field`. */
export function bindProperty(property: PropertyDef, value: unknown, field: string): BoundValue {
  if (value === null) {
    // `result` may be null in 1.1 (an observation that failed is still an observation).
    if (property.name === 'result') return 'null';
    if (property.required) throw validationFailed(field, 'must not be null');
    return property.kind === 'interval' ? { start: null, end: null } : null;
  }
  switch (property.kind) {
    case 'string':
      if (typeof value !== 'string') throw validationFailed(field, 'must be a string');
      return value;
    case 'json':
      return JSON.stringify(value);
    case 'object':
      if (!isObject(value)) throw validationFailed(field, 'must be a JSON object');
      return JSON.stringify(value);
    case 'geometry':
      if (!isObject(value) || typeof value['type'] !== 'string') throw validationFailed(field, 'must be a GeoJSON object');
      return JSON.stringify(value);
    case 'objectArray':
      if (!Array.isArray(value) || !value.every(isObject)) throw validationFailed(field, 'must be an array of JSON objects');
      return JSON.stringify(value);
    case 'stringArray':
      if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) throw validationFailed(field, 'must be an array of strings');
      return JSON.stringify(value);
    case 'datetime':
      return isoTime(value, field);
    case 'interval':
      return intervalBounds(value, field);
  }
}

function refId(value: Record<string, unknown>, field: string): number | undefined {
  const keys = Object.keys(value);
  if (keys.length !== 1 || keys[0] !== '@iot.id') return undefined;
  const id = typeof value['@iot.id'] === 'string' ? Number(value['@iot.id']) : value['@iot.id'];
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) throw validationFailed(`${field}.@iot.id`, 'must be a positive integer');
  return id;
}

function parseInput(target: EntityDef, value: unknown, field: string): EntityInput {
  if (!isObject(value)) throw validationFailed(field, `must be a ${target.singular} object or {"@iot.id": …}`);
  const id = refId(value, field);
  if (id !== undefined) return { kind: 'ref', id, field };
  // A nested entity is always a new one, whatever the outer request does.
  return { kind: 'new', parsed: parseEntity(target, value, field, 'create') };
}

export function parseEntity(entity: EntityDef, body: unknown, prefix: string, mode: WriteMode): ParsedEntity {
  if (!isObject(body)) throw validationFailed(prefix || 'body', `must be a ${entity.singular} JSON object`);
  const parsed: ParsedEntity = { entity, field: prefix, values: new Map(), toOne: new Map(), toMany: new Map() };
  for (const [name, value] of Object.entries(body)) {
    const field = fieldName(prefix, name);
    if (name === '@iot.id' || name === 'id') {
      if (mode === 'create') throw validationFailed(field, 'ids are given by the server; a new entity cannot carry one');
      parsed.id = value;
      continue;
    }
    // Links a client read and sends back are not data.
    if (name === '@iot.selfLink' || name.endsWith('@iot.navigationLink')) continue;
    const property = propertyOf(entity, name);
    if (property) {
      if (property.derived) throw validationFailed(field, 'is computed by the server and cannot be written');
      parsed.values.set(property, bindProperty(property, value, field));
      continue;
    }
    const nav = navigationOf(entity, name);
    if (!nav) throw validationFailed(field, `${entity.singular} has no property ${name}`);
    const target = ENTITIES[nav.target];
    if (nav.toMany) {
      if (!Array.isArray(value)) throw validationFailed(field, 'must be an array');
      parsed.toMany.set(nav, value.map((item, index) => parseInput(target, item, `${field}[${index}]`)));
    } else {
      parsed.toOne.set(nav, parseInput(target, value, field));
    }
  }
  if (mode !== 'patch') {
    for (const property of entity.properties) {
      if (property.required && !property.defaultsToNow && !parsed.values.has(property)) {
        throw validationFailed(fieldName(prefix, property.name), 'is required');
      }
    }
  }
  return parsed;
}
