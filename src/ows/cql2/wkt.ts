import { StaQueryError } from '../../sta/query/errors.js';
import { parseWkt } from '../../sta/query/wkt.js';
import type { Geometry } from './ast.js';
import { cql2Error, shown } from './errors.js';

/**
 * Geometry literals in well-known text, as CQL2 writes them: `POINT(7 50)`, `POLYGON Z ((…))`,
 * `GEOMETRYCOLLECTION(POINT(1 2), LINESTRING(0 0, 1 1))`. The lexer finds where one ends (the
 * balanced parentheses after the type word); the six simple types are read by the SensorThings
 * WKT reader, which already checks positions, rings and counts, and a collection is split into
 * its members here, since CQL2 does not nest collections.
 */

const SIMPLE_TYPES = new Set(['POINT', 'LINESTRING', 'POLYGON', 'MULTIPOINT', 'MULTILINESTRING', 'MULTIPOLYGON']);
const COLLECTION = 'GEOMETRYCOLLECTION';

const isSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r';

function skipSpace(text: string, i: number): number {
  while (isSpace(text[i])) i++;
  return i;
}

/** Whether `word` is the type word of a geometry literal. */
export const isGeometryType = (word: string) => SIMPLE_TYPES.has(word.toUpperCase()) || word.toUpperCase() === COLLECTION;

/**
 * Where the geometry literal whose type word ends at `wordEnd` ends (after its closing
 * parenthesis), or undefined when no `[Z] (` follows the word: then it is a name like any other
 * (an attribute may be called `point`).
 */
export function geometryEnd(text: string, start: number, wordEnd: number): number | undefined {
  let i = skipSpace(text, wordEnd);
  if ((text[i] === 'Z' || text[i] === 'z') && (text[i + 1] === '(' || isSpace(text[i + 1]))) i = skipSpace(text, i + 1);
  if (text[i] !== '(') return undefined;
  let depth = 0;
  for (; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')' && --depth === 0) return i + 1;
  }
  throw cql2Error(`the geometry ${text.slice(start, wordEnd)} is not closed: a ')' is missing`, start);
}

/** The geometry written in `text` from `start` (its type word) to `end` (after its last parenthesis). */
export function readGeometry(text: string, start: number, end: number): Geometry {
  const literal = text.slice(start, end);
  if (!literal.toUpperCase().startsWith(COLLECTION)) return simple(literal, start);
  const open = literal.indexOf('(');
  const geometries: Geometry[] = [];
  // Members are split at the commas outside their own parentheses.
  let depth = 0, memberStart = open + 1;
  for (let i = open + 1; i < literal.length; i++) {
    const c = literal[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    if ((c === ',' && depth === 0) || depth < 0) {
      const at = skipSpace(literal, memberStart);
      const member = literal.slice(at, i);
      if (member.trim() === '') throw cql2Error('a GEOMETRYCOLLECTION member is missing', start + at);
      if (member.toUpperCase().startsWith(COLLECTION)) throw cql2Error('a GEOMETRYCOLLECTION cannot hold another one', start + at);
      geometries.push(simple(member, start + at));
      memberStart = i + 1;
    }
  }
  return { type: 'GeometryCollection', geometries };
}

/** One of the six simple types; the reader's errors become this filter's. */
function simple(literal: string, offset: number): Geometry {
  try {
    return parseWkt(literal, 'filter', offset) as Geometry;
  } catch (error) {
    if (!(error instanceof StaQueryError)) throw error;
    // The reader's message ends in " at position n ('token')"; the position and token are kept apart.
    const detail = error.options.fieldErrors?.[0]?.message ?? '';
    const suffix = ` at position ${error.position} ('${error.token}')`;
    const what = detail.endsWith(suffix) ? detail.slice(0, -suffix.length) : 'invalid well-known text';
    throw cql2Error(`invalid geometry: ${what}${error.token ? ` near '${shown(error.token)}'` : ''}`, error.position);
  }
}
