import { sql, type RawBuilder } from 'kysely';
import { logicalOperands, type BinaryOperator, type Expr, type OrderItem, type PropertyResolver } from './ast.js';
import { StaQueryError } from './errors.js';
import { compileCall } from './functions.js';
import { RELATED_MAX_DEPTH } from './limits.js';
import {
  asBoolean, asInstant, asNumber, intervalBounds, jsonAsBoolean, jsonAsInstant, jsonAsNumber, jsonAsText, literalSql,
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
 * - A time interval compared with an instant or another interval: as FROST-Server does (see
 *   `compareIntervals`).
 * - A comparison or function reading a path through a to-many navigation holds when it holds for
 *   any related entity (`anyRelated`).
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

interface Context extends CompileContext {
  resolver: PropertyResolver;
  /** How many `exists` over related entities enclose what is being compiled. */
  related: number;
}

function contextOf(resolver: PropertyResolver, options: CompileOptions, where: string): Context {
  return { resolver, postgis: options.postgis ?? false, where: options.where ?? where, related: 0 };
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
      if (expr.type === 'interval') return { type: 'interval', ...intervalBounds(expr.value), pos: expr.pos };
      return { type: expr.type, sql: literalSql(expr), pos: expr.pos, literal: expr };
    case 'property': {
      const resolved = ctx.resolver.property(expr.path, expr.pos);
      return { ...resolved, pos: expr.pos };
    }
    case 'not':
      return { type: 'boolean', sql: sql`(not ${asBoolean(ctx, compileExpr(ctx, expr.operand))})`, pos: expr.pos };
    case 'negate':
      return { type: 'number', sql: sql`(- ${asNumber(ctx, compileExpr(ctx, expr.operand))})`, pos: expr.pos };
    case 'call':
      return anyRelated(ctx, expr) ?? compileCall(ctx, expr.name, expr.args.map((arg) => compileExpr(ctx, arg)), expr.pos);
    case 'binary': {
      if (expr.op === 'and' || expr.op === 'or') return logical(ctx, expr, expr.op);
      if (COMPARISONS.has(expr.op)) {
        const related = anyRelated(ctx, expr);
        if (related) return related;
      }
      const left = compileExpr(ctx, expr.left);
      const right = compileExpr(ctx, expr.right);
      if (COMPARISONS.has(expr.op)) return { type: 'boolean', sql: compare(ctx, expr.op, left, right, expr.pos), pos: expr.pos };
      return arithmetic(ctx, expr.op, left, right, expr.pos);
    }
  }
}

/**
 * A comparison or a function call that reads a path through a to-many navigation
 * (`Datastreams/Observations/result gt 13`) holds when it holds for some related entity: it is
 * compiled again inside an `exists` over the related entities of the first such path (which
 * takes that path to the related row), and so on for the next, so that two to-many paths in one
 * comparison nest. Undefined when no path of `expr` goes through a to-many navigation.
 */
function anyRelated(ctx: Context, expr: Expr): Typed | undefined {
  if (!ctx.resolver.exists) return undefined;
  for (const property of propertiesIn(expr)) {
    const wrapped = ctx.resolver.exists(property.path, property.pos, (related) => {
      if (ctx.related >= RELATED_MAX_DEPTH) {
        throw new StaQueryError(ctx.where, property.pos, property.path.join('/'), `a condition can go through at most ${RELATED_MAX_DEPTH} to-many navigations`);
      }
      const inner = compileExpr({ ...ctx, resolver: related, related: ctx.related + 1 }, expr);
      if (inner.type !== 'boolean') {
        typeError(ctx, property.pos, property.path.join('/'), 'a path through a to-many navigation can only be used in a condition (true when it holds for any related entity)');
      }
      return inner.sql;
    });
    if (wrapped) return { type: 'boolean', sql: wrapped, pos: expr.pos };
  }
  return undefined;
}

/** The property paths of an expression, left to right (without recursion: a chain of `and` may be long). */
function propertiesIn(expr: Expr): (Expr & { kind: 'property' })[] {
  const found: (Expr & { kind: 'property' })[] = [];
  const pending: Expr[] = [expr];
  for (let node = pending.pop(); node; node = pending.pop()) {
    if (node.kind === 'property') found.push(node);
    else if (node.kind === 'binary') pending.push(node.right, node.left);
    else if (node.kind === 'not' || node.kind === 'negate') pending.push(node.operand);
    else if (node.kind === 'call') pending.push(...[...node.args].reverse());
  }
  return found;
}

/**
 * `a and b and c …` as one flat SQL list (`logicalOperands`): the parser builds such a chain as a left-deep tree as long as
 * the expression (thousands of operands fit in its byte limit), and neither this compiler's stack
 * nor PostgreSQL's (`max_stack_depth`) should have to follow it one level per operand.
 */
function logical(ctx: Context, expr: Expr & { kind: 'binary' }, op: 'and' | 'or'): Typed {
  const operands = logicalOperands(expr);
  const groups = op === 'and' ? byRelatedEntity(ctx, operands) : operands.map((operand) => [operand]);
  const parts = groups.map(([first, ...others]) => {
    if (others.length === 0) return asBoolean(ctx, compileExpr(ctx, first!));
    // `Datastreams/Observations/result gt 13 and Datastreams/Observations/result lt 15`: one
    // Observation must meet both, as when FROST-Server joins the navigation once.
    const chain = others.reduce<Expr>((left, right) => ({ kind: 'binary', op: 'and', left, right, pos: left.pos }), first!);
    const related = anyRelated(ctx, chain);
    if (related?.type === 'boolean') return related.sql;
    return sql`(${sql.join([first!, ...others].map((operand) => asBoolean(ctx, compileExpr(ctx, operand))), sql` and `)})`;
  });
  return { type: 'boolean', sql: sql`(${sql.join(parts, op === 'and' ? sql` and ` : sql` or `)})`, pos: expr.pos };
}

/**
 * The operands of an `and` in groups: the comparisons and functions whose first to-many path
 * leads to the same related entities (`Datastreams/Observations`) together, in the place of the
 * first of them; every other operand alone.
 */
function byRelatedEntity(ctx: Context, operands: Expr[]): Expr[][] {
  const relatedPrefix = ctx.resolver.relatedPrefix?.bind(ctx.resolver);
  if (!relatedPrefix) return operands.map((operand) => [operand]);
  const groups: Expr[][] = [];
  const byKey = new Map<string, Expr[]>();
  for (const operand of operands) {
    const predicate = operand.kind === 'call' || (operand.kind === 'binary' && COMPARISONS.has(operand.op));
    let key: string | undefined;
    if (predicate) {
      for (const property of propertiesIn(operand)) {
        const n = relatedPrefix(property.path);
        if (n > 0) {
          key = property.path.slice(0, n).join('/');
          break;
        }
      }
    }
    const group = key === undefined ? undefined : byKey.get(key);
    if (group) {
      group.push(operand);
    } else {
      groups.push([operand]);
      if (key !== undefined) byKey.set(key, groups.at(-1)!);
    }
  }
  return groups;
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

/**
 * Comparisons with a time interval, as FROST-Server defines them: intervals are half-open (the
 * end is not part of it), `gt`/`lt` mean after/before, `ge`/`le` compare both ends (for an
 * interval on both sides) or the far end (with an instant), `eq` needs both ends equal and `ne`
 * both ends different. An instant is an interval whose ends are equal, so between two instants
 * every operator means what it means for numbers.
 */
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
  const both = (x: RawBuilder<unknown>, y: RawBuilder<unknown>) => sql`(${x} and ${y})`;
  if (op === 'eq') return both(sql`${a.start} = ${b.start}`, sql`${a.end} = ${b.end}`);
  if (op === 'ne') return both(sql`${a.start} <> ${b.start}`, sql`${a.end} <> ${b.end}`);
  // Every interval starts no later than it ends, so a condition on the far end also bounds the
  // start: the implied bound costs nothing and lets the planner see how selective a time window
  // is and use the index on the start (a window of 100,000 out of a million Observations: 28 ms
  // instead of a full scan).
  if (left.type === 'interval' && right.type === 'interval') {
    switch (op) {
      case 'gt': return both(sql`${a.start} >= ${b.end}`, sql`${a.start} > ${b.start}`);
      case 'ge': return both(sql`${a.start} >= ${b.start}`, sql`${a.end} >= ${b.end}`);
      case 'lt': return both(sql`${a.end} <= ${b.start}`, sql`${a.start} < ${b.start}`);
      default: return both(sql`${a.start} <= ${b.start}`, sql`${a.end} <= ${b.end}`);
    }
  }
  if (left.type === 'interval') {
    // An interval against an instant `b`.
    switch (op) {
      case 'gt': return sql`(${a.start} > ${b.start})`;
      case 'ge': return sql`(${a.start} >= ${b.start})`;
      case 'lt': return both(sql`${a.end} <= ${b.start}`, sql`${a.start} < ${b.start}`);
      default: return both(sql`${a.end} <= ${b.start}`, sql`${a.start} <= ${b.start}`);
    }
  }
  // An instant `a` against an interval.
  switch (op) {
    case 'gt': return both(sql`${a.start} >= ${b.end}`, sql`${a.start} > ${b.start}`);
    case 'ge': return both(sql`${a.start} >= ${b.end}`, sql`${a.start} >= ${b.start}`);
    case 'lt': return sql`(${a.start} < ${b.start})`;
    default: return sql`(${a.start} <= ${b.start})`;
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
