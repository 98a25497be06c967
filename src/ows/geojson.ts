import { AppError, type FieldError } from '../errors.js';
import { isObject } from './collection-definition.js';
import type { AttributeType, CollectionDef, GeometryType } from './types.js';

/** The most features one request may add: one transaction, and a body well inside 32 MiB. */
export const MAX_FEATURES_PER_REQUEST = 10_000;
/** A request with thousands of bad features names the first ones only. */
const MAX_LISTED_ERRORS = 100;

export type AttributeValue = string | number | boolean | null;

/** A feature checked against its collection: the geometry as GeoJSON text, one value per attribute. */
export interface FeatureRow {
  geometry: string;
  values: Record<string, AttributeValue>;
}

/**
 * The features of a `POST …/items` body (a Feature or a FeatureCollection), all checked before
 * anything is stored: every invalid one is named (`features[i].geometry`, `features[i].properties.x`)
 * so that the client can fix them all at once.
 */
export function parseFeatureBatch(body: unknown, collection: CollectionDef): FeatureRow[] {
  const features = featuresOf(body);
  if (features.length > MAX_FEATURES_PER_REQUEST) {
    throw new AppError('VALIDATION_FAILED', `At most ${MAX_FEATURES_PER_REQUEST} features per request (got ${features.length})`, {
      fieldErrors: [{ field: 'features', message: `at most ${MAX_FEATURES_PER_REQUEST} features per request` }],
    });
  }
  const errors: FieldError[] = [];
  const rows = features.map((feature, index) => checkFeature(feature, collection, `features[${index}]`, errors));
  if (errors.length > 0) {
    const invalid = new Set(errors.map((error) => /^features\[(\d+)\]/.exec(error.field)?.[1])).size;
    throw new AppError('VALIDATION_FAILED', `${invalid} of ${features.length} features are invalid; nothing was stored`, {
      fieldErrors: errors.slice(0, MAX_LISTED_ERRORS),
    });
  }
  return rows;
}

/** One feature of a `PUT …/items/{fid}` body. */
export function parseSingleFeature(body: unknown, collection: CollectionDef): FeatureRow {
  const errors: FieldError[] = [];
  if (!isObject(body) || body['type'] !== 'Feature') throw new AppError('VALIDATION_FAILED', 'The body must be a GeoJSON Feature', { fieldErrors: [{ field: 'type', message: 'must be Feature' }] });
  const row = checkFeature(body, collection, '', errors);
  if (errors.length > 0) throw new AppError('VALIDATION_FAILED', 'The feature is invalid', { fieldErrors: errors });
  return row;
}

function featuresOf(body: unknown): unknown[] {
  if (isObject(body) && body['type'] === 'Feature') return [body];
  if (isObject(body) && body['type'] === 'FeatureCollection' && Array.isArray(body['features'])) return body['features'];
  throw new AppError('VALIDATION_FAILED', 'The body must be a GeoJSON Feature or FeatureCollection', {
    fieldErrors: [{ field: 'type', message: 'must be Feature or FeatureCollection (with a features array)' }],
  });
}

function checkFeature(feature: unknown, collection: CollectionDef, at: string, errors: FieldError[]): FeatureRow {
  const field = (rest: string) => (at ? `${at}.${rest}` : rest);
  if (!isObject(feature) || feature['type'] !== 'Feature') {
    errors.push({ field: at || 'type', message: 'must be a GeoJSON Feature' });
    return { geometry: '', values: {} };
  }
  const geometry = feature['geometry'];
  const problem = geometryProblem(geometry, collection.geometryType, collection.srid === 4326);
  if (problem) errors.push({ field: field('geometry'), message: problem });

  const values: Record<string, AttributeValue> = {};
  const properties = feature['properties'] ?? {};
  if (!isObject(properties)) errors.push({ field: field('properties'), message: 'must be an object or null' });
  else {
    for (const [attribute, value] of Object.entries(properties)) {
      const type = Object.hasOwn(collection.properties, attribute) ? collection.properties[attribute] : undefined;
      if (!type) {
        errors.push({ field: field(`properties.${attribute}`), message: `is not an attribute of ${collection.name}` });
        continue;
      }
      const checked = attributeValue(value, type);
      if (checked === undefined) errors.push({ field: field(`properties.${attribute}`), message: `must be ${ARTICLE[type]} or null` });
      else values[attribute] = checked;
    }
  }
  return { geometry: problem ? '' : JSON.stringify(geometry), values };
}

const ARTICLE: Record<AttributeType, string> = {
  string: 'a string', integer: 'an integer', number: 'a number', boolean: 'a boolean', 'date-time': 'an RFC 3339 date-time',
};
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i;

/** The value to store, or undefined when it does not fit the attribute's type. */
function attributeValue(value: unknown, type: AttributeType): AttributeValue | undefined {
  if (value === null) return null;
  switch (type) {
    case 'string': return typeof value === 'string' ? value : undefined;
    case 'integer': return Number.isSafeInteger(value) ? (value as number) : undefined;
    case 'number': return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
    case 'boolean': return typeof value === 'boolean' ? value : undefined;
    case 'date-time': return typeof value === 'string' && DATE_TIME.test(value) && !Number.isNaN(Date.parse(value)) ? value : undefined;
  }
}

/**
 * Why a geometry does not fit the collection, or null. Checked here rather than left to PostGIS so
 * that every bad feature of a batch is named, not only the first one the database trips over.
 */
function geometryProblem(geometry: unknown, expected: GeometryType, geographic: boolean): string | null {
  if (!isObject(geometry)) return `must be a GeoJSON ${expected}`;
  if (geometry['type'] !== expected) return `must be a ${expected} (got ${String(geometry['type']).slice(0, 40)})`;
  const position = (p: unknown) => isPosition(p, geographic);
  const line = (l: unknown) => Array.isArray(l) && l.length >= 2 && l.every(position);
  const ring = (r: unknown) => Array.isArray(r) && r.length >= 4 && r.every(position) && samePosition(r[0], r[r.length - 1]);
  const polygon = (p: unknown) => Array.isArray(p) && p.length >= 1 && p.every(ring);
  const many = (check: (part: unknown) => boolean) => (parts: unknown) => Array.isArray(parts) && parts.length >= 1 && parts.every(check);
  const valid: Record<GeometryType, (coordinates: unknown) => boolean> = {
    Point: position, MultiPoint: many(position), LineString: line, MultiLineString: many(line), Polygon: polygon, MultiPolygon: many(polygon),
  };
  if (valid[expected](geometry['coordinates'])) return null;
  const range = geographic ? ' within longitude -180..180 and latitude -90..90' : '';
  return `invalid coordinates for a ${expected} (positions of 2 or 3 numbers${range}; lines of 2 or more, closed rings of 4 or more)`;
}

function isPosition(value: unknown, geographic: boolean): boolean {
  if (!Array.isArray(value) || value.length < 2 || value.length > 3) return false;
  if (!value.every((n) => typeof n === 'number' && Number.isFinite(n))) return false;
  return !geographic || (Math.abs(value[0]) <= 180 && Math.abs(value[1]) <= 90);
}

const samePosition = (a: unknown, b: unknown) => Array.isArray(a) && Array.isArray(b) && a[0] === b[0] && a[1] === b[1];
