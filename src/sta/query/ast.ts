import type { RawBuilder } from 'kysely';

/**
 * The parsed form of a SensorThings request: its resource path and its query options. The parser
 * (`parse-path.ts`, `parse-options.ts`) produces these from the raw text; the compiler
 * (`compile.ts`) turns filters and orderings into parameterized SQL through a `PropertyResolver`
 * that the store supplies for the entity type at hand. Positions are 0-based character offsets
 * into the option's value (or the path), for error messages.
 */

// ---------------------------------------------------------------------------- resource path

export type PathSegment =
  /** `Things`, or `Things(1)` (id set). */
  | { kind: 'entitySet'; name: string; id?: number; pos: number }
  /** `Datastreams` after an entity, or `Datastreams(3)`; `Thing` (to-one) has no id. */
  | { kind: 'navigation'; name: string; id?: number; pos: number }
  /** A property of the addressed entity, e.g. `name` in `Things(1)/name`. */
  | { kind: 'property'; name: string; pos: number }
  /** `$value` after a property. */
  | { kind: 'value'; pos: number }
  /** `$ref` after an entity set or navigation. */
  | { kind: 'ref'; pos: number };

/** `[]` is the service root. A leading `v1.1` segment is removed by the gateway, not here. */
export type ResourcePath = PathSegment[];

// ---------------------------------------------------------------------------- expressions

export type Literal =
  | { kind: 'literal'; type: 'string'; value: string; pos: number }
  | { kind: 'literal'; type: 'number'; value: number; pos: number }
  | { kind: 'literal'; type: 'boolean'; value: boolean; pos: number }
  | { kind: 'literal'; type: 'null'; value: null; pos: number }
  /** ISO 8601 date-time or date, as written (validated by the parser). */
  | { kind: 'literal'; type: 'datetime'; value: string; pos: number }
  /** ISO 8601 duration from `duration'P1D'`. */
  | { kind: 'literal'; type: 'duration'; value: string; pos: number }
  /**
   * An ISO 8601 time interval: `start/end`, `start/duration` or `duration/end` (two of the three
   * given), each part as written and validated by the lexer.
   */
  | { kind: 'literal'; type: 'interval'; value: IntervalText; pos: number }
  /** `geography'POINT(1 2)'` (or `geometry'…'`), converted to a GeoJSON geometry object. */
  | { kind: 'literal'; type: 'geometry'; value: { type: string; coordinates: unknown }; pos: number };

export type IntervalText =
  | { start: string; end: string; duration?: undefined }
  | { start: string; duration: string; end?: undefined }
  | { duration: string; end: string; start?: undefined };

export type BinaryOperator =
  | 'eq' | 'ne' | 'gt' | 'ge' | 'lt' | 'le'
  | 'and' | 'or'
  | 'add' | 'sub' | 'mul' | 'div' | 'mod';

export type Expr =
  | Literal
  /** A property path relative to the entity: `name`, `Datastream/Thing/name`, `properties/owner/name`, `result`. */
  | { kind: 'property'; path: string[]; pos: number }
  | { kind: 'binary'; op: BinaryOperator; left: Expr; right: Expr; pos: number }
  | { kind: 'not'; operand: Expr; pos: number }
  /** Unary minus. */
  | { kind: 'negate'; operand: Expr; pos: number }
  /** A function call with its name as written in the standard, lower-cased except `geo.`/`st_` prefixes kept. */
  | { kind: 'call'; name: string; args: Expr[]; pos: number };

// ---------------------------------------------------------------------------- query options

export interface OrderItem { expr: Expr; direction: 'asc' | 'desc' }

export interface ExpandItem {
  /** The navigation path, e.g. `['Datastreams']`, or `['Datastreams', 'Observations']` for `Datastreams/Observations`. */
  path: string[];
  /** The options given in parentheses, applied to the last navigation of the path. */
  options: QueryOptions;
  pos: number;
}

export interface QueryOptions {
  top?: number;
  skip?: number;
  count?: boolean;
  filter?: Expr;
  orderBy?: OrderItem[];
  /** Property (or navigation) names; `undefined` means every property. */
  select?: string[];
  expand?: ExpandItem[];
  resultFormat?: 'dataArray';
}

// ---------------------------------------------------------------------------- compilation

/** What a property path resolves to in SQL, by the type the standard gives it. */
export type ResolvedProperty =
  | { type: 'string' | 'number' | 'boolean' | 'datetime' | 'id'; sql: RawBuilder<unknown> }
  /** A jsonb value whose type is known only per row (`result`, anything below `properties/`, `parameters/`). */
  | { type: 'json'; sql: RawBuilder<unknown> }
  /** A GeoJSON geometry held as jsonb (`location`, `feature`, `observedArea`). */
  | { type: 'geometry'; sql: RawBuilder<unknown> }
  /** A time interval or instant held as two timestamptz columns (an instant has start = end). */
  | { type: 'interval'; start: RawBuilder<unknown>; end: RawBuilder<unknown> };

/**
 * Supplied by the store for one entity type (and table alias): turns a property path into SQL.
 * Paths through a to-one navigation (`Datastream/Thing/name`) resolve to a scalar subquery or a
 * join the resolver decides. An unknown property throws `StaQueryError` at `pos`.
 */
export interface PropertyResolver {
  property(path: string[], pos: number): ResolvedProperty;
  /**
   * When `path` goes through a to-many navigation (`Datastreams/Observations/result` from a
   * Thing): an `exists` over the related entities of the first such navigation in which
   * `predicate` holds, `predicate` being compiled with a resolver that takes the paths below that
   * navigation to the related entity (and any other path to the entity at hand). Undefined when
   * the path has no to-many navigation; a resolver without navigations need not implement it.
   */
  exists?(path: string[], pos: number, predicate: (related: PropertyResolver) => RawBuilder<unknown>): RawBuilder<unknown> | undefined;
  /**
   * How many leading segments of `path` lead to the related entities `exists` would range over
   * (1 for `Datastreams/name`, 2 for `Datastream/Thing/Locations/name` and, within the `exists`
   * of `Datastreams`, for `Datastreams/Observations/result`); 0 when `exists` does not apply.
   */
  relatedPrefix?(path: string[]): number;
}

/**
 * The operands of a chain of one logical operator, `a and b and c` as `[a, b, c]`: the parser
 * builds such a chain as a left-deep tree as long as the expression, and whoever walks it (the SQL
 * compiler, the link writer) takes it as one flat list rather than one level per operand.
 */
export function logicalOperands(expr: Expr & { kind: 'binary' }): Expr[] {
  const operands: Expr[] = [];
  let node: Expr = expr;
  for (; node.kind === 'binary' && node.op === expr.op; node = node.left) operands.push(node.right);
  operands.push(node);
  return operands.reverse();
}
