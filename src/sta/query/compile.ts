import { sql, type RawBuilder } from 'kysely';
import { logicalOperands, type BinaryOperator, type Expr, type OrderItem, type PropertyResolver } from './ast.js';
import { compileCall } from './functions.js';
import {
  asBoolean, asInstant, asNumber, jsonAsBoolean, jsonAsInstant, jsonAsNumber, jsonAsText, literalSql,
  stringAsDatetime, typeError, typeName, type CompileContext, type Typed,
} from './typed.js';

/**
 * Compiles parsed `$filter` and `$orderby` expressions to SQL through the store's
 * `PropertyResolver`. Only Kysely's `sql` tag is used: request values become bound parameters,
 * and every SQL word (operator, function name) comes from a fixed table here or in functions.ts.
 *
 * Semantics chosen where the standard leaves room:
 * - A json value is compared by the other side's type, on the rows where it has that JSON type
 *   (other rows do not match); json with json compares the jsonb values where both have one type.
 * - A time interval compared with an instant or another interval: `gt` means it starts after the
 *   other ends, `lt` that it ends before the other starts, `eq` that both bounds are equal.
 * - A comparison across types the standard does not relate (`name gt 5`) is a 400, not a guess.
 * - `ne` is SQL's `<>`: a row whose value is null matches neither `eq` nor `ne`.
 */

export interface CompileOptions {
  /** PostGIS is available (PostgreSQL); without it the geospatial functions answer 400. */
  postgis?: boolean;
  /** The option named in errors; the default is `$filter` / `$orderby`. */
  where?: string;
}

export function compileFilter(expr: Expr, resolver: PropertyResolver, options: CompileOptions = {}): RawBuilder<boolean> {
  const ctx = contextOf(resolver, options, '$filter');
  const compiled = compileExpr(ctx, expr);
  if (compiled.type !== 'boolean' && compiled.type !== 'json') {
    typeError(ctx, expr.pos, typeName(compiled), 'the filter must be a boolean expression');
  }
  return asBoolean(ctx, compiled) as RawBuilder<boolean>;
}

export function compileOrderBy(items: OrderItem[], resolver: PropertyResolver, options: CompileOptions = {}): RawBuilder<unknown>[] {
  const ctx = contextOf(resolver, options, '$orderby');
  return items.map(({ expr, direction }) => {
    const value = sortKey(ctx, compileExpr(ctx, expr));
    return direction === 'desc' ? sql`${value} desc` : sql`${value} asc`;
  });
}

interface Context extends CompileContext { resolver: PropertyResolver }

function contextOf(resolver: PropertyResolver, options: CompileOptions, where: string): Context {
  return { resolver, postgis: options.postgis ?? false, where: options.where ?? where };
}

function sortKey(ctx: Context, t: Typed): RawBuilder<unknown> {
  if (t.type === 'interval') return t.start;
  if (t.type === 'null' || t.type === 'geometry') return typeError(ctx, t.pos, typeName(t), `cannot order by a ${typeName(t)}`);
  return t.sql;
}

const COMPARISONS = new Set<BinaryOperator>(['eq', 'ne', 'gt', 'ge', 'lt', 'le']);

function compileExpr(ctx: Context, expr: Expr): Typed {
  switch (expr.kind) {
    case 'literal':
      if (expr.type === 'null') return { type: 'null', pos: expr.pos };
      return { type: expr.type === 'datetime' ? 'datetime' : expr.type, sql: literalSql(expr), pos: expr.pos, literal: expr };
    case 'property': {
      const resolved = ctx.resolver.property(expr.path, expr.pos);
      return { ...resolved, pos: expr.pos };
    }
    case 'not':
      return { type: 'boolean', sql: sql`(not ${asBoolean(ctx, compileExpr(ctx, expr.operand))})`, pos: expr.pos };
    case 'negate':
      return { type: 'number', sql: sql`(- ${asNumber(ctx, compileExpr(ctx, expr.operand))})`, pos: expr.pos };
    case 'call':
      return compileCall(ctx, expr.name, expr.args.map((arg) => compileExpr(ctx, arg)), expr.pos);
    case 'binary': {
      if (expr.op === 'and' || expr.op === 'or') return logical(ctx, expr, expr.op);
      const left = compileExpr(ctx, expr.left);
      const right = compileExpr(ctx, expr.right);
      if (COMPARISONS.has(expr.op)) return { type: 'boolean', sql: compare(ctx, expr.op, left, right, expr.pos), pos: expr.pos };
      return arithmetic(ctx, expr.op, left, right, expr.pos);
    }
  }
}

/**
 * `a and b and c …` as one flat SQL list (`logicalOperands`): the parser builds such a chain as a left-deep tree as long as
 * the expression (thousands of operands fit in its byte limit), and neither this compiler's stack
 * nor PostgreSQL's (`max_stack_depth`) should have to follow it one level per operand.
 */
function logical(ctx: Context, expr: Expr & { kind: 'binary' }, op: 'and' | 'or'): Typed {
  const parts = logicalOperands(expr).map((operand) => asBoolean(ctx, compileExpr(ctx, operand)));
  return { type: 'boolean', sql: sql`(${sql.join(parts, op === 'and' ? sql` and ` : sql` or `)})`, pos: expr.pos };
}

function operator(op: BinaryOperator, a: RawBuilder<unknown>, b: RawBuilder<unknown>): RawBuilder<unknown> {
  switch (op) {
    case 'eq': return sql`(${a} = ${b})`;
    case 'ne': return sql`(${a} <> ${b})`;
    case 'gt': return sql`(${a} > ${b})`;
    case 'ge': return sql`(${a} >= ${b})`;
    case 'lt': return sql`(${a} < ${b})`;
    case 'le': return sql`(${a} <= ${b})`;
    case 'add': return sql`(${a} + ${b})`;
    case 'sub': return sql`(${a} - ${b})`;
    case 'mul': return sql`(${a} * ${b})`;
    // Division by zero gives null (no match) rather than failing the whole request.
    case 'div': return sql`(${a} / nullif(${b}, 0))`;
    case 'mod': return sql`mod((${a})::numeric, nullif((${b})::numeric, 0))`;
    default: throw new Error(`not an operator with two values: ${op}`);
  }
}

function compare(ctx: Context, op: BinaryOperator, left: Typed, right: Typed, pos: number): RawBuilder<unknown> {
  if (left.type === 'null' || right.type === 'null') return compareNull(ctx, op, left, right, pos);
  const temporal = (t: Typed) => t.type === 'datetime' || t.type === 'interval';
  if (temporal(left)) right = stringAsDatetime(right) ?? right;
  if (temporal(right)) left = stringAsDatetime(left) ?? left;
  if (left.type === 'interval' || right.type === 'interval') return compareIntervals(ctx, op, left, right, pos);
  if (left.type === 'json' && right.type === 'json') {
    // jsonb orders across JSON types (every string below every number); only like compares with like.
    const a = singleValue(ctx, left, op, pos), b = singleValue(ctx, right, op, pos);
    return sql`(jsonb_typeof(${a}) = jsonb_typeof(${b}) and ${operator(op, a, b)})`;
  }
  if (left.type === 'json') return operator(op, jsonAs(ctx, left, right, op, pos), singleValue(ctx, right, op, pos));
  if (right.type === 'json') return operator(op, singleValue(ctx, left, op, pos), jsonAs(ctx, right, left, op, pos));
  if (left.type === 'id' || right.type === 'id') return operator(op, idOperand(ctx, left, op, pos), idOperand(ctx, right, op, pos));
  if (left.type === 'time' || right.type === 'time') return operator(op, timeOperand(ctx, left, right, op, pos), timeOperand(ctx, right, left, op, pos));
  if (left.type !== right.type || left.type === 'geometry') return mismatch(ctx, op, left, right, pos);
  return operator(op, singleValue(ctx, left, op, pos), singleValue(ctx, right, op, pos));
}

function mismatch(ctx: Context, op: string, left: Typed, right: Typed, pos: number): never {
  return typeError(ctx, pos, op, `cannot compare ${typeName(left)} with ${typeName(right)}`);
}

/** The json side converted to the type of the other side. */
function jsonAs(ctx: Context, json: Typed, other: Typed, op: string, pos: number): RawBuilder<unknown> {
  const value = singleValue(ctx, json, op, pos);
  switch (other.type) {
    case 'number': case 'id': return jsonAsNumber(value);
    case 'string': return jsonAsText(value);
    case 'boolean': return jsonAsBoolean(value);
    case 'datetime': return jsonAsInstant(value);
    default: return mismatch(ctx, op, json, other, pos);
  }
}

/** The SQL of an operand that has one value (not null, not an interval). */
function singleValue(ctx: Context, t: Typed, op: string, pos: number): RawBuilder<unknown> {
  if (t.type === 'null' || t.type === 'interval') return typeError(ctx, pos, op, 'unexpected operand');
  return t.sql;
}

/** Ids are bigints: compared with integers (a quoted integer is accepted) and nothing else. */
function idOperand(ctx: Context, t: Typed, op: string, pos: number): RawBuilder<unknown> {
  if (t.type === 'id') return t.sql;
  const literal = t.type !== 'null' && t.type !== 'interval' ? t.literal : undefined;
  if (literal?.type === 'number' && Number.isSafeInteger(literal.value)) return sql`cast(${String(literal.value)} as bigint)`;
  if (literal?.type === 'string') {
    if (!/^-?\d{1,18}$/.test(literal.value)) typeError(ctx, t.pos, literal.value, 'an id must be an integer');
    return sql`cast(${literal.value} as bigint)`;
  }
  if (t.type === 'number') return t.sql;
  return typeError(ctx, pos, op, `cannot compare id with ${typeName(t)}`);
}

/** `time(x)` compares with another time or a quoted `hh:mm[:ss[.fff]]`. */
function timeOperand(ctx: Context, t: Typed, other: Typed, op: string, pos: number): RawBuilder<unknown> {
  if (t.type === 'time') return t.sql;
  const literal = t.type === 'string' ? t.literal : undefined;
  if (literal?.type === 'string' && /^([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,6})?)?$/.test(literal.value)) {
    return sql`cast(${literal.value} as time)`;
  }
  return mismatch(ctx, op, other, t, pos);
}

function compareNull(ctx: Context, op: BinaryOperator, left: Typed, right: Typed, pos: number): RawBuilder<unknown> {
  if (op !== 'eq' && op !== 'ne') return typeError(ctx, pos, op, 'null can only be compared with eq or ne');
  const other = left.type === 'null' ? right : left;
  let isNull: RawBuilder<unknown>;
  if (other.type === 'null') isNull = sql`true`;
  else if (other.type === 'interval') isNull = sql`(${other.start} is null)`;
  // A json value is null when absent (SQL null) and when it holds JSON's null.
  else if (other.type === 'json') isNull = sql`(${other.sql} is null or jsonb_typeof(${other.sql}) = 'null')`;
  else isNull = sql`(${other.sql} is null)`;
  return op === 'eq' ? isNull : sql`(not ${isNull})`;
}

interface Bounds { start: RawBuilder<unknown>; end: RawBuilder<unknown> }

function compareIntervals(ctx: Context, op: BinaryOperator, left: Typed, right: Typed, pos: number): RawBuilder<unknown> {
  const bounds = (t: Typed): Bounds => {
    if (t.type === 'interval') return t;
    if (t.type === 'datetime') return { start: t.sql, end: t.sql };
    if (t.type === 'json') {
      const instant = jsonAsInstant(t.sql);
      return { start: instant, end: instant };
    }
    return mismatch(ctx, op, left, right, pos);
  };
  const a = bounds(left), b = bounds(right);
  // Every interval starts no later than it ends, so `a ends before b starts` also means `a starts
  // before b starts` (and so on): the implied bound costs nothing and lets the planner see how
  // selective a time window is and use the index on the start (a window of 100,000 out of a
  // million Observations: 28 ms instead of a full scan).
  const implied = (condition: RawBuilder<unknown>, when: boolean) => (when ? sql` and ${condition}` : sql``);
  const isInterval = (t: Typed) => t.type === 'interval';
  switch (op) {
    case 'gt': return sql`(${a.start} > ${b.end}${implied(sql`${b.start} < ${a.start}`, isInterval(right))}${implied(sql`${a.end} > ${b.end}`, isInterval(left))})`;
    case 'ge': return sql`(${a.start} >= ${b.end}${implied(sql`${b.start} <= ${a.start}`, isInterval(right))}${implied(sql`${a.end} >= ${b.end}`, isInterval(left))})`;
    case 'lt': return sql`(${a.end} < ${b.start}${implied(sql`${a.start} < ${b.start}`, isInterval(left))}${implied(sql`${b.end} > ${a.end}`, isInterval(right))})`;
    case 'le': return sql`(${a.end} <= ${b.start}${implied(sql`${a.start} <= ${b.start}`, isInterval(left))}${implied(sql`${b.end} >= ${a.end}`, isInterval(right))})`;
    case 'eq': return sql`(${a.start} = ${b.start} and ${a.end} = ${b.end})`;
    default: return sql`(not (${a.start} = ${b.start} and ${a.end} = ${b.end}))`;
  }
}

function arithmetic(ctx: Context, op: BinaryOperator, left: Typed, right: Typed, pos: number): Typed {
  const temporal = (t: Typed) => t.type === 'datetime' || t.type === 'interval';
  // A date-time moved by a duration: `now() sub duration'P1D'`.
  if ((op === 'add' || op === 'sub') && right.type === 'duration' && temporal(left)) {
    const instant = asInstant(ctx, left);
    return { type: 'datetime', sql: op === 'add' ? sql`(${instant} + ${right.sql})` : sql`(${instant} - ${right.sql})`, pos };
  }
  if (op === 'add' && left.type === 'duration' && temporal(right)) {
    return { type: 'datetime', sql: sql`(${asInstant(ctx, right)} + ${left.sql})`, pos };
  }
  return { type: 'number', sql: operator(op, asNumber(ctx, left), asNumber(ctx, right)), pos };
}
