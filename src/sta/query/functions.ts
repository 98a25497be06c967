import { sql, type RawBuilder } from 'kysely';
import {
  asGeometry, asInstant, asNumber, asText, MAX_DATETIME, MIN_DATETIME, typeError, type CompileContext, type Typed,
} from './typed.js';

/**
 * The standard's functions and the SQL each becomes. The parser has checked the name and the
 * number of arguments; this table is the only place a function name meets SQL.
 *
 * String functions avoid LIKE so that `%` and `_` in values stay literal. Positions are 0-based
 * as OData has them (`indexof` is -1 when absent). Date parts are read in UTC, as the instants are
 * stored. A time interval stands for its start, except in `maxdatetime(x)`.
 */

type Compile = (ctx: CompileContext, args: Typed[], pos: number) => Typed;

const text = (ctx: CompileContext, t: Typed | undefined) => asText(ctx, t!);
const num = (ctx: CompileContext, t: Typed | undefined) => asNumber(ctx, t!);
const boolean = (s: RawBuilder<unknown>, pos: number): Typed => ({ type: 'boolean', sql: s, pos });
const number = (s: RawBuilder<unknown>, pos: number): Typed => ({ type: 'number', sql: s, pos });
const string = (s: RawBuilder<unknown>, pos: number): Typed => ({ type: 'string', sql: s, pos });
const datetime = (s: RawBuilder<unknown>, pos: number): Typed => ({ type: 'datetime', sql: s, pos });

/** A 0-based OData index as a 1-based SQL integer position. */
const sqlIndex = (ctx: CompileContext, t: Typed | undefined) => sql`(floor(${num(ctx, t)})::integer + 1)`;

const utc = (ctx: CompileContext, t: Typed | undefined) => sql`(${asInstant(ctx, t!)} at time zone 'UTC')`;
const part = (field: 'year' | 'month' | 'day' | 'hour' | 'minute'): Compile => {
  const fields = { year: sql`year`, month: sql`month`, day: sql`day`, hour: sql`hour`, minute: sql`minute` };
  return (ctx, [x], pos) => number(sql`extract(${fields[field]} from ${utc(ctx, x)})`, pos);
};

const STRING_FUNCTIONS: Record<string, Compile> = {
  // STA 1.0: substringof(needle, haystack).
  substringof: (ctx, [a, b], pos) => boolean(sql`(strpos(${text(ctx, b)}, ${text(ctx, a)}) > 0)`, pos),
  contains: (ctx, [a, b], pos) => boolean(sql`(strpos(${text(ctx, a)}, ${text(ctx, b)}) > 0)`, pos),
  startswith: (ctx, [a, b], pos) => {
    const prefix = text(ctx, b);
    return boolean(sql`(left(${text(ctx, a)}, length(${prefix})) = ${prefix})`, pos);
  },
  endswith: (ctx, [a, b], pos) => {
    const suffix = text(ctx, b);
    return boolean(sql`(right(${text(ctx, a)}, length(${suffix})) = ${suffix})`, pos);
  },
  length: (ctx, [a], pos) => number(sql`length(${text(ctx, a)})`, pos),
  indexof: (ctx, [a, b], pos) => number(sql`(strpos(${text(ctx, a)}, ${text(ctx, b)}) - 1)`, pos),
  substring: (ctx, [s, start, length], pos) => {
    const from = sqlIndex(ctx, start);
    // substr fails on a negative length; OData would give an empty string.
    if (length) return string(sql`substr(${text(ctx, s)}, greatest(${from}, 1), greatest(floor(${num(ctx, length)})::integer + least(${from} - 1, 0), 0))`, pos);
    return string(sql`substr(${text(ctx, s)}, greatest(${from}, 1))`, pos);
  },
  tolower: (ctx, [a], pos) => string(sql`lower(${text(ctx, a)})`, pos),
  toupper: (ctx, [a], pos) => string(sql`upper(${text(ctx, a)})`, pos),
  trim: (ctx, [a], pos) => string(sql`btrim(${text(ctx, a)})`, pos),
  concat: (ctx, [a, b], pos) => string(sql`(${text(ctx, a)} || ${text(ctx, b)})`, pos),
};

const TIME_FUNCTIONS: Record<string, Compile> = {
  year: part('year'),
  month: part('month'),
  day: part('day'),
  hour: part('hour'),
  minute: part('minute'),
  second: (ctx, [x], pos) => number(sql`floor(extract(second from ${utc(ctx, x)}))`, pos),
  fractionalseconds: (ctx, [x], pos) => {
    const seconds = sql`extract(second from ${utc(ctx, x)})`;
    return number(sql`(${seconds} - floor(${seconds}))`, pos);
  },
  date: (ctx, [x], pos) => datetime(sql`(date_trunc('day', ${utc(ctx, x)}) at time zone 'UTC')`, pos),
  time: (ctx, [x], pos) => ({ type: 'time', sql: sql`(${utc(ctx, x)})::time`, pos }),
  // Instants are stored as timestamptz, which keeps no offset: every one reads as UTC.
  totaloffsetminutes: (ctx, [x], pos) => number(sql`(case when ${asInstant(ctx, x!)} is not null then cast(0 as numeric) end)`, pos),
  now: (_ctx, _args, pos) => datetime(sql`now()`, pos),
  // Without an argument, as OData 4.0 has them: the earliest and latest instants there are. With
  // one (as SensorThings 1.0 used them), the start and the end of a time interval.
  mindatetime: (ctx, [x], pos) => datetime(x ? asInstant(ctx, x) : sql`cast(${MIN_DATETIME} as timestamptz)`, pos),
  maxdatetime: (ctx, [x], pos) =>
    datetime(!x ? sql`cast(${MAX_DATETIME} as timestamptz)` : x.type === 'interval' ? x.end : asInstant(ctx, x), pos),
};

const MATH_FUNCTIONS: Record<string, Compile> = {
  // As numeric, so that halves round away from zero as OData says (float8 rounds them to even).
  round: (ctx, [x], pos) => number(sql`round((${num(ctx, x)})::numeric)`, pos),
  floor: (ctx, [x], pos) => number(sql`floor(${num(ctx, x)})`, pos),
  ceiling: (ctx, [x], pos) => number(sql`ceiling(${num(ctx, x)})`, pos),
};

type Relation = (a: RawBuilder<unknown>, b: RawBuilder<unknown>) => RawBuilder<unknown>;

const RELATIONS: Record<string, Relation> = {
  'geo.intersects': (a, b) => sql`ST_Intersects(${a}, ${b})`,
  st_intersects: (a, b) => sql`ST_Intersects(${a}, ${b})`,
  st_equals: (a, b) => sql`ST_Equals(${a}, ${b})`,
  st_disjoint: (a, b) => sql`ST_Disjoint(${a}, ${b})`,
  st_touches: (a, b) => sql`ST_Touches(${a}, ${b})`,
  st_within: (a, b) => sql`ST_Within(${a}, ${b})`,
  st_overlaps: (a, b) => sql`ST_Overlaps(${a}, ${b})`,
  st_crosses: (a, b) => sql`ST_Crosses(${a}, ${b})`,
  st_contains: (a, b) => sql`ST_Contains(${a}, ${b})`,
};

const GEO_FUNCTIONS: Record<string, Compile> = {
  ...Object.fromEntries(Object.entries(RELATIONS).map(([name, relation]): [string, Compile] => [
    name,
    (ctx, [a, b], pos) => boolean(relation(asGeometry(ctx, a!), asGeometry(ctx, b!)), pos),
  ])),
  'geo.distance': (ctx, [a, b], pos) => number(sql`ST_Distance(${asGeometry(ctx, a!)}, ${asGeometry(ctx, b!)})`, pos),
  'geo.length': (ctx, [a], pos) => number(sql`ST_Length(${asGeometry(ctx, a!)})`, pos),
  st_relate: (ctx, [a, b, pattern], pos) =>
    boolean(sql`ST_Relate(${asGeometry(ctx, a!)}, ${asGeometry(ctx, b!)}, ${text(ctx, pattern)})`, pos),
};

export function compileCall(ctx: CompileContext, name: string, args: Typed[], pos: number): Typed {
  const geo = GEO_FUNCTIONS[name];
  if (geo) {
    if (!ctx.postgis) typeError(ctx, pos, name, 'geospatial functions need a PostgreSQL database with PostGIS');
    return geo(ctx, args, pos);
  }
  const compile = STRING_FUNCTIONS[name] ?? TIME_FUNCTIONS[name] ?? MATH_FUNCTIONS[name];
  if (!compile) return typeError(ctx, pos, name, 'unknown function');
  return compile(ctx, args, pos);
}
