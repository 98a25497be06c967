import { sql, type RawBuilder } from 'kysely';
import type { ComparisonOperator, Condition, Scalar } from './ast.js';
import { column, GEOMETRY, queryableType, type CompileContext } from './context.js';
import { cql2Error } from './errors.js';
import { describe, kindOf, unify } from './operands.js';
import { intersects } from './spatial.js';

/**
 * A parsed CQL2 filter as a SQL condition on the collection's table. Only Kysely's `sql` tag is
 * used: every value of the filter is a bound parameter (`context.ts` `bind`), every column name
 * comes from the collection's definition through `sql.id`, and every SQL word from this module.
 *
 * NULL is SQL's: a comparison, LIKE, BETWEEN or IN with an attribute that is null is not true,
 * and neither is its NOT; only IS NULL finds such rows.
 */
export function compileCondition(ctx: CompileContext, condition: Condition): RawBuilder<unknown> {
  switch (condition.kind) {
    case 'and':
    case 'or': {
      // One flat list, however long the chain: neither this recursion nor PostgreSQL's follows it operand by operand.
      const parts = condition.operands.map((operand) => compileCondition(ctx, operand));
      return sql`(${sql.join(parts, condition.kind === 'and' ? sql` and ` : sql` or `)})`;
    }
    case 'not':
      return sql`(not ${compileCondition(ctx, condition.operand)})`;
    case 'constant':
      return condition.value ? sql`true` : sql`false`;
    case 'compare':
      return compare(ctx, condition);
    case 'like':
      return like(ctx, condition);
    case 'between': {
      const { kind, sql: [subject, low, high] } = unify(ctx, [condition.subject, condition.low, condition.high]);
      if (kind !== 'number' && kind !== 'instant') {
        throw cql2Error(`BETWEEN applies to numbers and date-times, not ${describe(ctx, condition.subject)}`, condition.pos);
      }
      return condition.negated ? sql`(${subject} not between ${low} and ${high})` : sql`(${subject} between ${low} and ${high})`;
    }
    case 'in': {
      const [subject, ...list] = unify(ctx, [condition.subject, ...condition.list]).sql;
      return condition.negated ? sql`(${subject} not in (${sql.join(list)}))` : sql`(${subject} in (${sql.join(list)}))`;
    }
    case 'isNull': {
      const subject = nullable(ctx, condition.subject);
      return condition.negated ? sql`(${subject} is not null)` : sql`(${subject} is null)`;
    }
    case 'intersects':
      return intersects(ctx, condition.left, condition.right, condition.pos);
  }
}

function compare(ctx: CompileContext, condition: Condition & { kind: 'compare' }): RawBuilder<unknown> {
  const { kind, sql: [a, b] } = unify(ctx, [condition.left, condition.right]);
  if (kind === 'boolean' && condition.op !== '=' && condition.op !== '<>') {
    throw cql2Error(`booleans are compared with = and <> only, not ${condition.op}`, condition.pos);
  }
  return operator(condition.op, a!, b!);
}

function operator(op: ComparisonOperator, a: RawBuilder<unknown>, b: RawBuilder<unknown>): RawBuilder<unknown> {
  switch (op) {
    case '=': return sql`(${a} = ${b})`;
    case '<>': return sql`(${a} <> ${b})`;
    case '<': return sql`(${a} < ${b})`;
    case '>': return sql`(${a} > ${b})`;
    case '<=': return sql`(${a} <= ${b})`;
    case '>=': return sql`(${a} >= ${b})`;
  }
}

/**
 * LIKE with CQL2's wildcards `%` and `_` and its escape `\`, which are PostgreSQL's own (its
 * default escape is the backslash), so the pattern goes through unchanged; case-sensitive, as in
 * CQL2 (CASEI is another conformance class).
 */
function like(ctx: CompileContext, condition: Condition & { kind: 'like' }): RawBuilder<unknown> {
  if (kindOf(ctx, condition.subject) !== 'string') {
    throw cql2Error(`LIKE applies to character strings, not ${describe(ctx, condition.subject)}`, condition.subject.pos);
  }
  const { pattern } = condition;
  // PostgreSQL refuses a pattern ending in a lone escape with an error (a 500); it is the client's.
  if (endsInLoneEscape(pattern.value)) {
    throw cql2Error('a LIKE pattern cannot end with the escape character \\ (write \\\\ for a backslash)', pattern.pos);
  }
  const [subject, value] = unify(ctx, [condition.subject, pattern]).sql;
  return condition.negated ? sql`(${subject} not like ${value})` : sql`(${subject} like ${value})`;
}

/** Whether the pattern ends in an odd run of backslashes; counted, since a regular expression could take quadratic time on a long run. */
function endsInLoneEscape(pattern: string): boolean {
  let run = 0;
  while (run < pattern.length && pattern[pattern.length - 1 - run] === '\\') run++;
  return run % 2 === 1;
}

/** The operand of IS NULL: any queryable (the geometry too) or a literal. */
function nullable(ctx: CompileContext, subject: Scalar): RawBuilder<unknown> {
  if (subject.kind === 'property' && queryableType(ctx, subject) === GEOMETRY) return column('geom');
  return unify(ctx, [subject]).sql[0]!;
}
