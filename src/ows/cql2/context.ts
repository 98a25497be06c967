import { sql, type RawBuilder } from 'kysely';
import type { AttributeType } from '../types.js';
import type { PropertyName } from './ast.js';
import { cql2Error, shown } from './errors.js';
import { MAX_VALUES } from './limits.js';

/**
 * What the compiler knows of the collection, and the two things every part of it needs: the
 * queryables by name, and the one way a value reaches SQL (a counted, cast parameter).
 */
export interface CompileContext {
  /** Attribute name → type; each attribute is a column of the same name. */
  properties: Readonly<Record<string, AttributeType>>;
  /** The SRID of the geom column. */
  srid: number;
  /** The SRID of geometry literals in the filter. */
  literalSrid: number;
  /** Positions in geometry literals are y x (latitude first). */
  latitudeFirst: boolean;
  /** Values bound so far. */
  values: number;
}

/** The SQL types a value is bound as: a parameter's type is never left for PostgreSQL to guess. */
export type Cast = 'text' | 'bigint' | 'double precision' | 'boolean' | 'timestamptz' | 'date' | 'integer';

/**
 * A value as a parameter with its cast. The casts come from this fixed table, never from the
 * filter; the cast matters because an untyped parameter takes whatever type PostgreSQL infers
 * (`st_transform(geometry, unknown)` picks its text overload).
 */
export function bind(ctx: CompileContext, value: string | number | boolean, cast: Cast, pos: number): RawBuilder<unknown> {
  if (++ctx.values > MAX_VALUES) throw cql2Error(`the filter holds more than ${MAX_VALUES} values`, pos);
  switch (cast) {
    case 'text': return sql`${value}::text`;
    case 'bigint': return sql`${value}::bigint`;
    case 'double precision': return sql`${value}::double precision`;
    case 'boolean': return sql`${value}::boolean`;
    case 'timestamptz': return sql`${value}::timestamptz`;
    case 'date': return sql`${value}::date`;
    case 'integer': return sql`${value}::integer`;
  }
}

/** The name of the geometry queryable (the geom column), as OGC API – Features Part 3 calls it. */
export const GEOMETRY = 'geometry';

/**
 * The type of an attribute queryable, or `geometry` for the geometry queryable; an unknown name
 * is a 400 listing the queryables. An attribute called `geometry` (the collection definitions allow
 * the name) is that attribute here; in S_INTERSECTS the name always means the geometry.
 */
export function queryableType(ctx: CompileContext, property: PropertyName): AttributeType | 'geometry' {
  // Own properties only: `constructor` or `__proto__` are no queryables.
  if (Object.hasOwn(ctx.properties, property.name)) return ctx.properties[property.name]!;
  if (property.name === GEOMETRY) return 'geometry';
  throw unknownQueryable(ctx, property);
}

const LISTED_QUERYABLES = 50;

export function unknownQueryable(ctx: CompileContext, property: PropertyName): Error {
  const names = [...new Set([...Object.keys(ctx.properties), GEOMETRY])];
  const listed = names.length > LISTED_QUERYABLES ? `${names.slice(0, LISTED_QUERYABLES).join(', ')}, …` : names.join(', ');
  return cql2Error(`unknown queryable ${shown(property.name)}; queryables: ${listed}`, property.pos);
}

/** The column of an attribute: its name comes from the collection's definition, quoted as an identifier. */
export const column = (name: string) => sql.id(name);
