import { sql, type RawBuilder } from 'kysely';
import type { IntervalText, Literal } from './ast.js';
import { StaQueryError } from './errors.js';

/**
 * A compiled sub-expression with the type the compiler tracks for it, and the conversions the
 * operators and functions need. Values from the request only ever enter SQL as bound parameters.
 *
 * `json` values (jsonb whose type varies per row) are converted under a guard: a `case` that
 * yields SQL null where the row's value is of another JSON type, so the row simply does not
 * match, and a cast can never fail on it (a `case` evaluates its branch only when its test holds).
 */

export type Scalar = 'string' | 'number' | 'boolean' | 'datetime' | 'time' | 'id' | 'json' | 'geometry' | 'duration';

export type Typed =
  | { type: Scalar; sql: RawBuilder<unknown>; pos: number; literal?: Literal }
  | { type: 'interval'; start: RawBuilder<unknown>; end: RawBuilder<unknown>; pos: number }
  | { type: 'null'; pos: number };

export interface CompileContext {
  /** The option named in errors (`$filter`, `$orderby`, or `$expand` for nested ones). */
  where: string;
  postgis: boolean;
}

export function typeError(ctx: CompileContext, pos: number, token: string, message: string): never {
  throw new StaQueryError(ctx.where, pos, token, message);
}

/** What a type is called in error messages. */
export function typeName(t: Typed): string {
  return t.type === 'datetime' || t.type === 'interval' ? 'date-time' : t.type === 'id' ? 'id' : t.type;
}

// An ISO 8601 date or date-time that PostgreSQL's timestamptz input accepts without error: month
// lengths and leap years included, year 0 excluded, offsets within ±14:59.
const LEAP_YEAR = '(?:\\d\\d(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)';
const YEAR = '\\d{4}';
const MONTH_DAY = '(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|02-(?:0[1-9]|1\\d|2[0-8]))';
const TIME = '(?:T(?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:\\.\\d{1,9})?)?(?:Z|[+-](?:0\\d|1[0-4]):?[0-5]\\d)?)?';
export const ISO_DATETIME_PATTERN = `^(?!0000)(?:${YEAR}-${MONTH_DAY}|${LEAP_YEAR}-02-29)${TIME}$`;

const jsonTyped = (x: RawBuilder<unknown>, jsonType: string, then: RawBuilder<unknown>) =>
  sql`(case when jsonb_typeof(${x}) = ${jsonType} then ${then} end)`;

export const jsonAsNumber = (x: RawBuilder<unknown>) => jsonTyped(x, 'number', sql`(${x})::numeric`);
export const jsonAsText = (x: RawBuilder<unknown>) => jsonTyped(x, 'string', sql`(${x} #>> '{}')`);
export const jsonAsBoolean = (x: RawBuilder<unknown>) => jsonTyped(x, 'boolean', sql`(${x})::boolean`);
export const jsonAsInstant = (x: RawBuilder<unknown>) =>
  sql`(case when jsonb_typeof(${x}) = 'string' and (${x} #>> '{}') ~ ${ISO_DATETIME_PATTERN} then (${x} #>> '{}')::timestamptz end)`;

/** A date without a time is midnight UTC; a date-time without an offset is taken as UTC too. */
export function instantText(value: string): string {
  if (value.length === 10) return `${value}T00:00:00Z`;
  return /(Z|[+-]\d{2}:\d{2})$/.test(value) ? value : `${value}Z`;
}

export function literalSql(literal: Literal): RawBuilder<unknown> {
  switch (literal.type) {
    case 'string': return sql`cast(${literal.value} as text)`;
    case 'number': return sql`cast(${String(literal.value)} as numeric)`;
    case 'boolean': return sql`cast(${literal.value} as boolean)`;
    case 'datetime': return sql`cast(${instantText(literal.value)} as timestamptz)`;
    case 'duration': return sql`cast(${literal.value} as interval)`;
    case 'geometry': return sql`cast(${JSON.stringify(literal.value)} as jsonb)`;
    // Where one value is wanted, an interval stands for its start.
    case 'interval': return intervalBounds(literal.value).start;
    case 'null': return sql`null`;
  }
}

/** The two ends of an interval literal; a duration is added to the start or taken from the end in SQL. */
export function intervalBounds(value: IntervalText): { start: RawBuilder<unknown>; end: RawBuilder<unknown> } {
  const instant = (text: string) => sql`cast(${instantText(text)} as timestamptz)`;
  if (value.duration === undefined) return { start: instant(value.start), end: instant(value.end) };
  const duration = sql`cast(${value.duration} as interval)`;
  if (value.start !== undefined) return { start: instant(value.start), end: sql`(${instant(value.start)} + ${duration})` };
  return { start: sql`(${instant(value.end)} - ${duration})`, end: instant(value.end) };
}

/** The earliest and latest instants of OData's DateTimeOffset (years 0001 to 9999), for `mindatetime()`, `maxdatetime()`. */
export const MIN_DATETIME = '0001-01-01T00:00:00Z';
export const MAX_DATETIME = '9999-12-31T23:59:59.999999Z';

const ISO_LITERAL = new RegExp(ISO_DATETIME_PATTERN);

/** A string literal that spells a date-time (some clients quote them) becomes one. */
export function stringAsDatetime(t: Typed): Typed | undefined {
  if (t.type !== 'string' || t.literal?.type !== 'string' || !ISO_LITERAL.test(t.literal.value)) return undefined;
  const literal: Literal = { kind: 'literal', type: 'datetime', value: t.literal.value, pos: t.pos };
  return { type: 'datetime', sql: literalSql(literal), pos: t.pos, literal };
}

export function asText(ctx: CompileContext, t: Typed): RawBuilder<unknown> {
  if (t.type === 'string') return t.sql;
  if (t.type === 'json') return jsonAsText(t.sql);
  return typeError(ctx, t.pos, typeName(t), `a string is expected, not a ${typeName(t)}`);
}

export function asNumber(ctx: CompileContext, t: Typed): RawBuilder<unknown> {
  if (t.type === 'number' || t.type === 'id') return t.sql;
  if (t.type === 'json') return jsonAsNumber(t.sql);
  return typeError(ctx, t.pos, typeName(t), `a number is expected, not a ${typeName(t)}`);
}

export function asBoolean(ctx: CompileContext, t: Typed): RawBuilder<unknown> {
  if (t.type === 'boolean') return t.sql;
  if (t.type === 'json') return jsonAsBoolean(t.sql);
  return typeError(ctx, t.pos, typeName(t), `a boolean expression is expected, not a ${typeName(t)}`);
}

/** An instant; an interval stands for its start (as in `year(phenomenonTime)`). */
export function asInstant(ctx: CompileContext, t: Typed): RawBuilder<unknown> {
  if (t.type === 'datetime') return t.sql;
  if (t.type === 'interval') return t.start;
  if (t.type === 'json') return jsonAsInstant(t.sql);
  const fromString = stringAsDatetime(t);
  if (fromString?.type === 'datetime') return fromString.sql;
  return typeError(ctx, t.pos, typeName(t), `a date-time is expected, not a ${typeName(t)}`);
}

/** A PostGIS geometry from a GeoJSON geometry, or from a Feature's geometry (a Location may hold either). */
export function asGeometry(ctx: CompileContext, t: Typed): RawBuilder<unknown> {
  if (t.type === 'geometry' && t.literal?.type === 'geometry') return sql`ST_GeomFromGeoJSON(cast(${JSON.stringify(t.literal.value)} as text))`;
  if (t.type === 'geometry' || t.type === 'json') {
    return sql`ST_GeomFromGeoJSON((coalesce(${t.sql} -> 'geometry', ${t.sql}))::text)`;
  }
  return typeError(ctx, t.pos, typeName(t), `a geometry is expected, not a ${typeName(t)}`);
}
