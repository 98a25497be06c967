/**
 * The mapping expressions that need no interpreter, answered in plain JS: a member path (`v`,
 * `$.a.b`, `` `a b`.c ``), a literal (a string, a number, `true`/`false`/`null`, an object or an
 * array of literals), and `&` of those. Most fields of a real mapping are one of these, and
 * JSONata evaluates even a member access through promises and sequences: at 20,000 records a
 * second that was most of a pipeline's CPU and garbage.
 *
 * A direct evaluator answers exactly what JSONata (followed by the mapper's JSON round trip)
 * answers, or FALLBACK where its rules get subtle (an array on the path, which JSONata maps over
 * and flattens; a number that `&` would round or write in exponent form). Then the mapper asks
 * JSONata for that record. A property test compares the two on random records and expressions.
 */

/** The record needs JSONata for this expression. */
export const FALLBACK: unique symbol = Symbol('fallback to JSONata');

export type DirectEvaluator = (input: unknown) => unknown;

/** The parts of JSONata's syntax tree read here (see `jsonata(...).ast()`). */
interface AstNode {
  type: string;
  value?: unknown;
  steps?: AstNode[];
  lhs?: AstNode | AstNode[][];
  rhs?: AstNode;
  expressions?: AstNode[];
  [other: string]: unknown;
}

/**
 * A direct evaluator for the expression's syntax tree, or null when only JSONata can evaluate it.
 * `literal`: its value is the same for every record, already plain JSON (the mapper's round trip
 * is not needed); else an object it answers is the record's own, to be copied as JSONata's is.
 */
export function directEvaluator(ast: unknown): { evaluate: DirectEvaluator; literal: boolean } | null {
  const node = ast as AstNode;
  const literal = literalValue(node);
  if (literal !== NOT_LITERAL) {
    const value = deepFreeze(literal);
    return { evaluate: () => value, literal: true };
  }
  const evaluate = directAccess(node);
  return evaluate ? { evaluate, literal: false } : null;
}

/** A member path, or `&` of paths and literals. */
function directAccess(node: AstNode): DirectEvaluator | null {
  const literal = literalValue(node);
  if (literal !== NOT_LITERAL) return () => literal;
  const path = memberPath(node);
  if (path) return (input) => follow(input, path);
  if (node.type === 'binary' && node.value === '&' && hasOnly(node, ['type', 'value', 'position', 'lhs', 'rhs'])) {
    const left = directAccess(node.lhs as AstNode);
    const right = directAccess(node.rhs as AstNode);
    if (!left || !right) return null;
    return (input) => {
      const l = concatText(left(input));
      if (l === FALLBACK) return FALLBACK;
      const r = concatText(right(input));
      return r === FALLBACK ? FALLBACK : l + r;
    };
  }
  return null;
}

const NOT_LITERAL: unique symbol = Symbol('not a literal');

/** The value of an expression made only of literals, or NOT_LITERAL. */
function literalValue(node: AstNode): unknown {
  switch (node.type) {
    case 'string':
    case 'value': // true, false, null
      return hasOnly(node, ['type', 'value', 'position']) ? node.value : NOT_LITERAL;
    case 'number': {
      // What JSON cannot hold (1e400 is Infinity, -0 is written 0) is left to JSONata and the round trip.
      const value = node.value as number;
      return hasOnly(node, ['type', 'value', 'position']) && Number.isFinite(value) && !Object.is(value, -0) ? value : NOT_LITERAL;
    }
    case 'unary':
      if (node.value === '{' && hasOnly(node, ['type', 'value', 'position', 'lhs']) && Array.isArray(node.lhs)) {
        const object: Record<string, unknown> = {};
        for (const pair of node.lhs as AstNode[][]) {
          const [key, member] = pair;
          // A key given twice is an error in JSONata (D1009): leave it to JSONata to say so.
          if (pair.length !== 2 || key!.type !== 'string' || typeof key!.value !== 'string' || Object.hasOwn(object, key!.value)) return NOT_LITERAL;
          const value = literalValue(member!);
          if (value === NOT_LITERAL) return NOT_LITERAL;
          object[key!.value] = value;
        }
        // JSONata leaves an empty object constructor's result undefined-free; keep it exact by not folding it.
        return Object.keys(object).length > 0 ? object : NOT_LITERAL;
      }
      if (node.value === '[' && hasOnly(node, ['type', 'value', 'position', 'expressions']) && Array.isArray(node.expressions)) {
        const array: unknown[] = [];
        for (const element of node.expressions) {
          const value = literalValue(element);
          // Nested arrays and null elements follow JSONata's sequence rules: left to JSONata.
          if (value === NOT_LITERAL || value === null || Array.isArray(value)) return NOT_LITERAL;
          array.push(value);
        }
        return array.length > 0 ? array : NOT_LITERAL;
      }
      return NOT_LITERAL;
    default:
      return NOT_LITERAL;
  }
}

/** `a.b.c` or `$.a.b` as its member names; null for any other path (predicates, functions, `[]`, wildcards). */
function memberPath(node: AstNode): string[] | null {
  if (node.type !== 'path' || !hasOnly(node, ['type', 'steps']) || !Array.isArray(node.steps)) return null;
  const names: string[] = [];
  for (const [i, step] of node.steps.entries()) {
    if (!hasOnly(step, ['type', 'value', 'position'])) return null;
    // `$` (the record itself) may only open the path.
    if (i === 0 && step.type === 'variable' && step.value === '') continue;
    if (step.type !== 'name' || typeof step.value !== 'string') return null;
    names.push(step.value);
  }
  return names.length > 0 ? names : null;
}

/** Member by member through objects; an array anywhere on the way (or at the end) is JSONata's to map. */
function follow(input: unknown, names: readonly string[]): unknown {
  let node = input;
  for (const name of names) {
    if (Array.isArray(node)) return FALLBACK;
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, name)) return undefined;
    node = (node as Record<string, unknown>)[name];
  }
  return Array.isArray(node) ? FALLBACK : node;
}

/** A value as `&` writes it; FALLBACK where JSONata's `$string` formats (a number it rounds to 15 digits, an object). */
function concatText(value: unknown): string | typeof FALLBACK {
  if (value === FALLBACK) return FALLBACK;
  if (value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number' && Number.isInteger(value) && Math.abs(value) < 1e15) return String(value);
  return FALLBACK;
}

function hasOnly(node: AstNode, keys: readonly string[]): boolean {
  for (const key of Object.keys(node)) if (!keys.includes(key)) return false;
  return true;
}

/** A literal is shared by every record it maps: frozen, so that no writer can change it for the next one. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}
