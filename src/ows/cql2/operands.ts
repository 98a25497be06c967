import { sql, type RawBuilder } from 'kysely';
import type { AttributeType } from '../types.js';
import type { Scalar } from './ast.js';
import { bind, column, GEOMETRY, queryableType, type CompileContext } from './context.js';
import { cql2Error, shown } from './errors.js';
import { readInstant } from './instants.js';

/**
 * The type checking of what a predicate compares: every operand of one comparison, BETWEEN or IN
 * must be of one kind (character strings, numbers, booleans or instants), or the filter is a 400
 * naming the operand at fault, rather than a guess or a 500 from PostgreSQL. Then each operand's
 * SQL, cast to that kind.
 *
 * Two choices where CQL2 leaves room:
 * - A character string compared with a date-time property (or a TIMESTAMP or DATE) stands for an
 *   instant (`since > '2024-05-01T00:00:00Z'`, common in clients) and is checked as one.
 * - When a DATE takes part, instants are compared by their calendar day in UTC: `since =
 *   DATE('2024-05-01')` holds for every instant of that day, `since < DATE('2024-05-01')` for every
 *   one before it. The day is taken in UTC, not in the session's time zone, so that the answer
 *   does not depend on the connection.
 */

export type Kind = 'string' | 'number' | 'boolean' | 'instant';

const KIND_OF_TYPE: Record<AttributeType, Kind> = {
  string: 'string', integer: 'number', number: 'number', boolean: 'boolean', 'date-time': 'instant',
};

export interface Unified {
  kind: Kind;
  /** The SQL of each operand, in the order given. */
  sql: RawBuilder<unknown>[];
}

/** The operands of one predicate, checked to be of one kind and compiled. */
export function unify(ctx: CompileContext, operands: Scalar[]): Unified {
  // The first operand with a kind of its own sets the kind; a character string literal has none
  // yet, since it may stand for an instant.
  const reference = operands.find((operand) => operand.kind !== 'string');
  const kind = reference ? kindOf(ctx, reference) : 'string';
  const checked = operands.map((operand): Scalar => {
    if (operand.kind === 'string' && kind === 'instant') return asInstant(operand);
    if (kindOf(ctx, operand) !== kind) throw mismatch(ctx, operand, reference!, kind);
    return operand;
  });
  const byDay = kind === 'instant' && checked.some((operand) => operand.kind === 'date');
  // Integers among fractions are bound as double precision too, so that the SQL reads as one type.
  const fractional = kind === 'number' && checked.some((operand) => (operand.kind === 'number' && !operand.integer) || (operand.kind === 'property' && queryableType(ctx, operand) === 'number'));
  return { kind, sql: checked.map((operand) => sqlOf(ctx, operand, byDay, fractional)) };
}

/** The kind of an operand on its own; the geometry queryable has none here. */
export function kindOf(ctx: CompileContext, operand: Scalar): Kind {
  switch (operand.kind) {
    case 'property': {
      const type = queryableType(ctx, operand);
      if (type === 'geometry') throw cql2Error(`${GEOMETRY} is the geometry queryable: it can be used in S_INTERSECTS and IS NULL only`, operand.pos);
      return KIND_OF_TYPE[type];
    }
    case 'string': return 'string';
    case 'number': return 'number';
    case 'boolean': return 'boolean';
    case 'timestamp': case 'date': return 'instant';
  }
}

/** How an operand is named in an error: `the integer property rank`, `a character string`. */
export function describe(ctx: CompileContext, operand: Scalar): string {
  switch (operand.kind) {
    case 'property': return `the ${queryableType(ctx, operand)} property ${shown(operand.name)}`;
    case 'string': return 'a character string';
    case 'number': return 'a number';
    case 'boolean': return 'a boolean';
    case 'timestamp': return 'a TIMESTAMP';
    case 'date': return 'a DATE';
  }
}

function mismatch(ctx: CompileContext, operand: Scalar, reference: Scalar, kind: Kind): Error {
  const hint = kind === 'instant' ? "; write an instant as TIMESTAMP('2024-05-01T10:00:00Z') or DATE('2024-05-01')" : '';
  return cql2Error(`type mismatch: ${describe(ctx, operand)} cannot be compared with ${describe(ctx, reference)}${hint}`, operand.pos);
}

function asInstant(operand: Scalar & { kind: 'string' }): Scalar {
  const instant = readInstant(operand.value);
  if ('problem' in instant) throw cql2Error(instant.problem, operand.pos);
  return { kind: instant.kind, value: instant.value, pos: operand.pos };
}

function sqlOf(ctx: CompileContext, operand: Scalar, byDay: boolean, fractional: boolean): RawBuilder<unknown> {
  switch (operand.kind) {
    case 'property': {
      const id = column(operand.name);
      return byDay ? sql`(${id} at time zone 'UTC')::date` : id;
    }
    case 'string': return bind(ctx, operand.value, 'text', operand.pos);
    case 'number': return bind(ctx, operand.value, fractional || !operand.integer ? 'double precision' : 'bigint', operand.pos);
    case 'boolean': return bind(ctx, operand.value, 'boolean', operand.pos);
    case 'timestamp': {
      const value = bind(ctx, operand.value, 'timestamptz', operand.pos);
      return byDay ? sql`(${value} at time zone 'UTC')::date` : value;
    }
    case 'date': return bind(ctx, operand.value, 'date', operand.pos);
  }
}
