import type { BinaryOperator, Expr, OrderItem } from './ast.js';
import { StaQueryError } from './errors.js';
import { tokenize, type Token } from './lexer.js';
import { DEFAULT_QUERY_LIMITS, limitExceeded } from './limits.js';

/**
 * The `$filter` / `$orderby` expression grammar: a hand-written lexer and a Pratt parser. Hand
 * written rather than generated because the grammar is small, a parser generator would be a new
 * dependency, and errors must carry the exact position and token the user wrote.
 *
 * Binding power, lowest first (OData 4.01 part 2, 5.1.1.1): or; and; not; the comparisons (which
 * do not chain); add sub; mul div mod; unary minus; primaries.
 *
 * Depth is bounded by `maxDepth` (STA_EXPRESSION_MAX_DEPTH) twice over, as the text is read, so
 * that neither this parser nor the compiler nor PostgreSQL after it can be driven into a deep
 * stack: the syntactic nesting (parentheses, `not`, unary minus, function calls) is what this
 * parser recurses on, and the height of the tree is what the compiler and PostgreSQL recurse on.
 * A chain of one logical operator (`a and b and c …`) counts as one level: the compiler emits it
 * as one flat list, which PostgreSQL keeps flat too. Other operators chained (`1 add 1 add …`) nest.
 */

const OR = 1, AND = 2, NOT = 3, COMPARISON = 4, ADDITIVE = 5, MULTIPLICATIVE = 6, UNARY = 7;

const BINDING: Record<BinaryOperator, number> = {
  or: OR, and: AND,
  eq: COMPARISON, ne: COMPARISON, gt: COMPARISON, ge: COMPARISON, lt: COMPARISON, le: COMPARISON,
  add: ADDITIVE, sub: ADDITIVE,
  mul: MULTIPLICATIVE, div: MULTIPLICATIVE, mod: MULTIPLICATIVE,
};

/** Each function the standard names, with the numbers of arguments it takes. */
export const FUNCTION_ARITY: Record<string, readonly number[]> = {
  substringof: [2], endswith: [2], startswith: [2], contains: [2], length: [1], indexof: [2],
  substring: [2, 3], tolower: [1], toupper: [1], trim: [1], concat: [2],
  year: [1], month: [1], day: [1], hour: [1], minute: [1], second: [1], fractionalseconds: [1],
  date: [1], time: [1], totaloffsetminutes: [1], now: [0], mindatetime: [0, 1], maxdatetime: [0, 1],
  round: [1], floor: [1], ceiling: [1],
  'geo.distance': [2], 'geo.length': [1], 'geo.intersects': [2],
  st_equals: [2], st_disjoint: [2], st_touches: [2], st_within: [2], st_overlaps: [2],
  st_crosses: [2], st_intersects: [2], st_contains: [2], st_relate: [3],
};

const KEYWORDS = new Set([...Object.keys(BINDING), 'not', 'asc', 'desc']);

/** Parses a whole `$filter` value. `offset` places it inside a larger value (a nested `$expand`). */
export function parseFilter(text: string, where = '$filter', offset = 0, maxDepth = DEFAULT_QUERY_LIMITS.expressionMaxDepth): Expr {
  const parser = new ExpressionParser(tokenize(text, where, offset), where, maxDepth);
  const expr = parser.expression(0);
  parser.expectEnd();
  return expr;
}

/** Parses `$orderby`: comma-separated expressions, each with an optional `asc` or `desc`. */
export function parseOrderBy(text: string, where = '$orderby', offset = 0, maxDepth = DEFAULT_QUERY_LIMITS.expressionMaxDepth): OrderItem[] {
  const parser = new ExpressionParser(tokenize(text, where, offset), where, maxDepth);
  const items: OrderItem[] = [];
  for (;;) {
    const expr = parser.expression(0);
    const direction = parser.direction();
    items.push({ expr, direction });
    if (!parser.skipComma()) break;
  }
  parser.expectEnd();
  return items;
}

const isLogical = (op: BinaryOperator) => op === 'and' || op === 'or';

class ExpressionParser {
  private i = 0;
  /** Syntactic nesting open at the current token. */
  private nesting = 0;
  /** Height of each inner node built so far (leaves are 1). */
  private readonly heights = new WeakMap<Expr, number>();
  constructor(private readonly tokens: Token[], private readonly where: string, private readonly maxDepth: number) {}

  expression(minBinding: number): Expr {
    let left = this.prefix();
    for (;;) {
      const token = this.peek();
      const binding = token.kind === 'name' ? BINDING[token.text as BinaryOperator] : undefined;
      if (binding === undefined || binding <= minBinding) return left;
      this.i++;
      const op = token.text as BinaryOperator;
      // Comparisons are parsed with their own power as the floor, so `a eq b eq c` stops after
      // `b`; the check below then rejects the second comparison instead of nesting it.
      const right = this.expression(binding);
      const chained = isLogical(op) && left.kind === 'binary' && left.op === op;
      const height = chained ? Math.max(this.height(left), this.height(right) + 1) : Math.max(this.height(left), this.height(right)) + 1;
      left = this.built({ kind: 'binary', op, left, right, pos: token.pos }, height, token);
      const following = this.peek();
      if (binding === COMPARISON && following.kind === 'name' && BINDING[following.text as BinaryOperator] === COMPARISON) {
        this.fail(following, 'comparisons cannot be chained; use parentheses');
      }
    }
  }

  direction(): 'asc' | 'desc' {
    const token = this.peek();
    if (token.kind === 'name' && (token.text === 'asc' || token.text === 'desc')) {
      this.i++;
      return token.text;
    }
    return 'asc';
  }

  skipComma(): boolean {
    if (this.peek().kind !== ',') return false;
    this.i++;
    return true;
  }

  expectEnd(): void {
    const token = this.peek();
    if (token.kind !== 'eof') this.fail(token);
  }

  private prefix(): Expr {
    const token = this.next();
    switch (token.kind) {
      case 'string': case 'datetime': case 'duration':
        return { kind: 'literal', type: token.kind, value: token.value, pos: token.pos };
      case 'interval':
        return { kind: 'literal', type: 'interval', value: token.value, pos: token.pos };
      case 'number':
        return { kind: 'literal', type: 'number', value: token.value, pos: token.pos };
      case 'geometry':
        return { kind: 'literal', type: 'geometry', value: token.value, pos: token.pos };
      case '(': {
        const inner = this.nested(token, () => this.expression(0));
        this.expect(')');
        return inner;
      }
      case '-': {
        const operand = this.nested(token, () => this.expression(UNARY));
        // `-5` is a number literal in OData, not an operation on one.
        if (operand.kind === 'literal' && operand.type === 'number') return { ...operand, value: -operand.value, pos: token.pos };
        return this.built({ kind: 'negate', operand, pos: token.pos }, this.height(operand) + 1, token);
      }
      case 'name':
        return this.name(token);
      default:
        return this.fail(token);
    }
  }

  private name(token: Token): Expr {
    const text = token.text;
    if (text === 'not') {
      const operand = this.nested(token, () => this.expression(NOT));
      return this.built({ kind: 'not', operand, pos: token.pos }, this.height(operand) + 1, token);
    }
    if (this.peek().kind === '(') return this.call(token);
    if (text === 'true' || text === 'false') return { kind: 'literal', type: 'boolean', value: text === 'true', pos: token.pos };
    if (text === 'null') return { kind: 'literal', type: 'null', value: null, pos: token.pos };
    if (KEYWORDS.has(text)) return this.fail(token);
    return { kind: 'property', path: text.split('/'), pos: token.pos };
  }

  private call(token: Token): Expr {
    const name = token.text.toLowerCase();
    const arity = FUNCTION_ARITY[name];
    if (!arity) this.fail(token, 'unknown function');
    this.expect('(');
    const args: Expr[] = [];
    if (this.peek().kind !== ')') {
      this.nested(token, () => {
        do args.push(this.expression(0));
        while (this.skipComma());
      });
    }
    this.expect(')');
    if (!arity!.includes(args.length)) {
      const expected = arity!.join(' or ');
      this.fail(token, `${name} takes ${expected} argument${expected === '1' ? '' : 's'}, not ${args.length}`);
    }
    return this.built({ kind: 'call', name, args, pos: token.pos }, args.reduce((most, arg) => Math.max(most, this.height(arg)), 0) + 1, token);
  }

  /** Parses what `token` opens one level deeper, refusing a level beyond the limit before going down. */
  private nested<T>(token: Token, parse: () => T): T {
    if (++this.nesting > this.maxDepth) this.tooDeep(token);
    const result = parse();
    this.nesting--;
    return result;
  }

  private built(expr: Expr, height: number, token: Token): Expr {
    if (height > this.maxDepth) this.tooDeep(token);
    this.heights.set(expr, height);
    return expr;
  }

  private height(expr: Expr): number {
    return this.heights.get(expr) ?? 1;
  }

  private tooDeep(token: Token): never {
    throw limitExceeded(this.where, token.pos, 'expressionMaxDepth', `nests deeper than ${this.maxDepth} levels`);
  }

  private expect(kind: Token['kind']): void {
    const token = this.next();
    if (token.kind !== kind) this.fail(token, `'${kind}' expected, found ${describe(token)}`);
  }

  private peek(): Token {
    return this.tokens[this.i]!;
  }

  private next(): Token {
    const token = this.tokens[this.i]!;
    if (token.kind !== 'eof') this.i++;
    return token;
  }

  private fail(token: Token, message?: string): never {
    throw new StaQueryError(this.where, token.pos, token.text, message ?? (token.kind === 'eof' ? 'unexpected end of expression' : `unexpected ${describe(token)}`));
  }
}

function describe(token: Token): string {
  return token.kind === 'eof' ? 'end of expression' : `'${token.text}'`;
}
