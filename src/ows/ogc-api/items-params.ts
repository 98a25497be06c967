import { AppError } from '../../errors.js';
import type { AttributeType, CollectionDef } from '../types.js';
import type { Crs, CrsRegistry } from './crs.js';

/**
 * The query of an `items` read (OGC API – Features Parts 1–3), each parameter checked: an unknown
 * one, or a bad value, answers 400 naming it. Property filters take the collection's queryables
 * by name (`?kind=oak`); the parameters of the standard come first when a property has their name.
 */

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 10_000;

export type Bbox = [number, number, number, number];
export type PropertyValue = string | number | boolean;

export interface ItemsQuery {
  limit: number;
  /** The page's place: after or before a fid (the `next` and `prev` links), else an offset (older clients). */
  position: { after: number } | { before: number } | { offset: number };
  /** In x/y order of `crs` (already swapped when its axis order is latitude first). */
  bbox: { box: Bbox; crs: Crs } | null;
  /** On the collection's first date-time property; an open end is null. */
  datetime: { property: string; start: Date | null; end: Date | null; endExclusive: boolean } | null;
  /** The CRS of the answer's coordinates. */
  crs: Crs;
  equals: Array<{ property: string; type: AttributeType; value: PropertyValue }>;
  /** CQL2 text and the CRS of its geometry literals. */
  filter: { text: string; crs: Crs } | null;
  format: 'json' | 'html' | null;
}

/** The standard's parameters (and ours: `after`, `before`, `offset`); anything else must be a queryable. */
const RESERVED = new Set(['limit', 'offset', 'after', 'before', 'bbox', 'bbox-crs', 'datetime', 'crs', 'filter', 'filter-lang', 'filter-crs', 'f']);

export const invalid = (field: string, message: string) => new AppError('VALIDATION_FAILED', `${field}: ${message}`, { fieldErrors: [{ field, message }] });

export async function parseItemsQuery(query: string, collection: CollectionDef, registry: CrsRegistry): Promise<ItemsQuery> {
  const params = new URLSearchParams(query);
  const once = (name: string) => {
    const values = params.getAll(name);
    if (values.length > 1) throw invalid(name, 'is given more than once');
    return values[0] ?? null;
  };
  for (const name of new Set(params.keys())) {
    if (!RESERVED.has(name) && !(name in collection.properties)) {
      throw invalid(name, `is not a parameter of this collection's items (queryables: ${Object.keys(collection.properties).join(', ') || 'none'})`);
    }
  }
  const crs = await registry.choose(once('crs'), collection.srid, 'crs');
  const filterLang = once('filter-lang');
  if (filterLang !== null && filterLang !== 'cql2-text') throw invalid('filter-lang', 'must be cql2-text');
  const filterText = once('filter');
  const format = once('f');
  if (format !== null && format !== 'json' && format !== 'html') throw invalid('f', 'must be json or html');
  return {
    limit: Math.min(integer(once('limit'), 'limit', DEFAULT_LIMIT, 1), MAX_LIMIT),
    position: positionOf(once('after'), once('before'), once('offset')),
    bbox: await bboxOf(once('bbox'), once('bbox-crs'), collection, registry),
    datetime: datetimeOf(once('datetime'), collection),
    crs,
    equals: Object.entries(collection.properties).flatMap(([property, type]) => {
      const value = RESERVED.has(property) ? null : once(property);
      return value === null ? [] : [{ property, type, value: propertyValue(value, type, property) }];
    }),
    filter: filterText === null ? null : { text: filterText, crs: await registry.choose(once('filter-crs'), collection.srid, 'filter-crs') },
    format,
  };
}

function integer(text: string | null, name: string, fallback: number, min: number): number {
  if (text === null) return fallback;
  const value = /^\d{1,16}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < min) throw invalid(name, `must be an integer of at least ${min}`);
  return value;
}

function positionOf(after: string | null, before: string | null, offset: string | null): ItemsQuery['position'] {
  if ([after, before, offset].filter((value) => value !== null).length > 1) throw invalid('after', 'after, before and offset exclude each other');
  if (after !== null) return { after: integer(after, 'after', 0, 0) };
  if (before !== null) return { before: integer(before, 'before', 0, 1) };
  return { offset: integer(offset, 'offset', 0, 0) };
}

async function bboxOf(text: string | null, crsText: string | null, collection: CollectionDef, registry: CrsRegistry): Promise<ItemsQuery['bbox']> {
  if (text === null) {
    if (crsText !== null) throw invalid('bbox-crs', 'needs a bbox');
    return null;
  }
  const crs = await registry.choose(crsText, collection.srid, 'bbox-crs');
  const numbers = text.split(',').map((part) => (part.trim() === '' ? NaN : Number(part)));
  if (!(numbers.length === 4 || numbers.length === 6) || !numbers.every(Number.isFinite)) throw invalid('bbox', 'must be four numbers (or six, with heights): lower corner, upper corner');
  // Six numbers carry heights, which a 2D collection ignores.
  const [a, b, c, d] = numbers.length === 6 ? [numbers[0]!, numbers[1]!, numbers[3]!, numbers[4]!] : numbers as Bbox;
  const box: Bbox = crs.latitudeFirst ? [b, a, d, c] : [a, b, c, d];
  // A box across the antimeridian (minx > maxx in CRS84) is not taken: no city's data spans it.
  if (box[0] > box[2] || box[1] > box[3]) throw invalid('bbox', 'the lower corner must be below and left of the upper one (a box across the antimeridian is not taken)');
  return { box, crs };
}

/** ISO 8601 date-time with a zone, or a date (its whole day). */
const INSTANT = /^(\d{4}-\d{2}-\d{2})(T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2}))?$/i;

function datetimeOf(text: string | null, collection: CollectionDef): ItemsQuery['datetime'] {
  if (text === null) return null;
  const property = Object.keys(collection.properties).find((name) => collection.properties[name] === 'date-time');
  if (!property) throw invalid('datetime', 'this collection has no date-time property');
  const parts = text.split('/');
  if (parts.length > 2) throw invalid('datetime', 'must be an instant, or an interval start/end with .. for an open end');
  const bound = (part: string, end: boolean) => {
    if (parts.length === 2 && (part === '..' || part === '')) return null;
    const match = INSTANT.exec(part);
    const instant = match ? new Date(match[2] ? part.toUpperCase() : `${match[1]}T00:00:00Z`) : null;
    if (!instant || Number.isNaN(instant.getTime())) throw invalid('datetime', `${part.slice(0, 40)} is not an ISO 8601 date-time with its zone, nor a date`);
    // A date as an end covers its whole day.
    return end && !match![2] ? new Date(instant.getTime() + 86_400_000) : instant;
  };
  if (parts.length === 1) {
    const dateOnly = !INSTANT.exec(text)?.[2];
    const start = bound(text, false);
    return dateOnly ? { property, start, end: bound(text, true), endExclusive: true } : { property, start, end: start, endExclusive: false };
  }
  const start = bound(parts[0]!, false);
  const endIsDate = parts[1] !== '..' && parts[1] !== '' && !INSTANT.exec(parts[1]!)?.[2];
  const end = bound(parts[1]!, true);
  if (start === null && end === null) throw invalid('datetime', 'an interval needs at least one end');
  if (start && end && start > end) throw invalid('datetime', 'the interval ends before it starts');
  return { property, start, end, endExclusive: endIsDate };
}

function propertyValue(text: string, type: AttributeType, property: string): PropertyValue {
  switch (type) {
    case 'string': return text;
    case 'integer': {
      const value = /^-?\d{1,16}$/.test(text) ? Number(text) : NaN;
      if (!Number.isSafeInteger(value)) throw invalid(property, 'must be an integer');
      return value;
    }
    case 'number': {
      const value = text.trim() === '' ? NaN : Number(text);
      if (!Number.isFinite(value)) throw invalid(property, 'must be a number');
      return value;
    }
    case 'boolean':
      if (text !== 'true' && text !== 'false') throw invalid(property, 'must be true or false');
      return text === 'true';
    case 'date-time': {
      const match = INSTANT.exec(text);
      const instant = match?.[2] ? new Date(text.toUpperCase()) : null;
      if (!instant || Number.isNaN(instant.getTime())) throw invalid(property, 'must be an ISO 8601 date-time with its zone');
      return instant.toISOString();
    }
  }
}
