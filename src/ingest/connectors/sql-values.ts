import pg from 'pg';

/**
 * SQL values as JSON values, for records and for the saved cursor position. Timestamps are kept
 * as ISO 8601 text with every digit PostgreSQL sent (a JavaScript Date would cut microseconds,
 * and a cursor position cut so would read its last row again, or miss a neighbour): the session
 * runs in UTC with ISO dates, so the text PostgreSQL sends is rewritten, not recomputed.
 */

const OID = { int8: 20, bytea: 17, date: 1082, time: 1083, timestamp: 1114, timestamptz: 1184, interval: 1186, timetz: 1266, numeric: 1700 };

const TIMESTAMP = /^(\d{4,}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)([+-]\d\d(?::\d\d){0,2})?$/;

/** `2024-05-01 10:00:00.123456+00` → `2024-05-01T10:00:00.123456Z`; infinity and BC dates stay as sent. */
export function isoTimestamp(text: string): string {
  const match = TIMESTAMP.exec(text);
  if (!match) return text;
  const [, date, time, zone] = match;
  if (zone === undefined) return `${date}T${time}`;
  return `${date}T${time}${zone === '+00' ? 'Z' : zone.length === 3 ? `${zone}:00` : zone}`;
}

/** A bigint as a number while exact, else as its digits. */
const int8 = (text: string): number | string => {
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : text;
};

/** A numeric as a number when a double holds it exactly as written (15 significant digits), else as its digits. */
const numeric = (text: string): number | string => {
  const digits = text.replace(/^-/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  const value = Number(text);
  return digits.length <= 15 && Number.isFinite(value) ? value : text;
};

const asText = (text: string) => text;

const PARSERS = new Map<number, (text: string) => unknown>([
  [OID.int8, int8], [OID.numeric, numeric], [OID.timestamp, isoTimestamp], [OID.timestamptz, isoTimestamp],
  [OID.date, asText], [OID.time, asText], [OID.timetz, asText], [OID.interval, asText], [OID.bytea, asText],
]);

/** The type parsers of a source connection (the service's own connections keep `pg`'s defaults). */
export const sourceTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    return (format ?? 'text') === 'text' && PARSERS.has(oid) ? PARSERS.get(oid)! : pg.types.getTypeParser(oid, format as 'text');
  },
} as pg.CustomTypesConfig;

/** What the type parsers leave that JSON cannot hold (elements of arrays: Dates, Buffers), made JSON. */
export function jsonSafe(value: unknown, depth = 0): unknown {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (Buffer.isBuffer(value)) return `\\x${value.toString('hex')}`;
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  if (depth > 64 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((element) => jsonSafe(element, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) out[key] = jsonSafe(member, depth + 1);
  return out;
}
