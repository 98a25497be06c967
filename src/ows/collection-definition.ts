import { AppError, type FieldError } from '../errors.js';
import { ATTRIBUTE_TYPES, GEOMETRY_TYPES, type AttributeType, type CollectionDef, type GeometryType } from './types.js';

/** Collection and attribute names become SQL identifiers (still always quoted), so they stay plain. */
export const NAME_PATTERN = /^[a-z][a-z0-9_]{0,62}$/;
/** Names the store's own tables and columns take. */
const RESERVED_COLLECTIONS = new Set(['feature_collections']);
const RESERVED_ATTRIBUTES = new Set(['fid', 'geom']);

/** Validates a `POST /collections` body; every problem is one field error. */
export function parseCollectionDef(body: unknown): CollectionDef {
  const errors: FieldError[] = [];
  const input = isObject(body) ? body : {};
  if (!isObject(body)) errors.push({ field: '', message: 'must be a JSON object' });

  const name = input['name'];
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) errors.push({ field: 'name', message: 'must match [a-z][a-z0-9_]{0,62}' });
  else if (RESERVED_COLLECTIONS.has(name)) errors.push({ field: 'name', message: `${name} is reserved` });

  const title = input['title'] ?? null;
  if (title !== null && (typeof title !== 'string' || title.length > 500)) errors.push({ field: 'title', message: 'must be a string of at most 500 characters' });

  const geometryType = input['geometryType'];
  if (!GEOMETRY_TYPES.includes(geometryType as GeometryType)) errors.push({ field: 'geometryType', message: `must be one of ${GEOMETRY_TYPES.join(', ')}` });

  const srid = input['srid'] ?? 4326;
  if (!Number.isInteger(srid) || (srid as number) < 1 || (srid as number) > 998_999) errors.push({ field: 'srid', message: 'must be an EPSG code (a positive integer)' });

  const properties: Record<string, AttributeType> = {};
  const rawProperties = input['properties'] ?? {};
  if (!isObject(rawProperties)) errors.push({ field: 'properties', message: 'must be an object of attribute name to type' });
  else {
    for (const [attribute, type] of Object.entries(rawProperties)) {
      if (!NAME_PATTERN.test(attribute) || RESERVED_ATTRIBUTES.has(attribute)) {
        errors.push({ field: `properties.${attribute}`, message: 'an attribute name must match [a-z][a-z0-9_]{0,62} and not be fid or geom' });
      } else if (!ATTRIBUTE_TYPES.includes(type as AttributeType)) {
        errors.push({ field: `properties.${attribute}`, message: `must be one of ${ATTRIBUTE_TYPES.join(', ')}` });
      } else properties[attribute] = type as AttributeType;
    }
  }
  if (errors.length > 0) throw new AppError('VALIDATION_FAILED', 'The collection definition is invalid', { fieldErrors: errors });
  return { name: name as string, title: title as string | null, geometryType: geometryType as GeometryType, srid: srid as number, properties };
}

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
