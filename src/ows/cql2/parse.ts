import type { Condition, PropertyName, Scalar, SpatialOperand } from './ast.js';
import { cql2Error, shown } from './errors.js';
import { readDate, readTimestamp } from './instants.js';
import { Lexer, type Token } from './lexer.js';
import { tooDeep } from './limits.js';

/**
 * The CQL2 text grammar of the classes Basic CQL2, Advanced Comparison Operators and Basic
 * Spatial Functions, read by recursive descent: hand written, as the SensorThings `$filter`
 * parser is, because the grammar is small and errors must name the position the client wrote.
 *
 *   filter     = or
 *   or         = and { OR and }
 *   and        = not { AND not }
 *   not        = NOT not | primary
 *   primary    = ( or ) | TRUE | FALSE | S_INTERSECTS ( spatial , spatial ) | predicate
 *   predicate  = scalar ( op scalar | [NOT] LIKE 'pattern' | [NOT] BETWEEN scalar AND scalar
 *                       | [NOT] IN ( scalar {, scalar} ) | IS [NOT] NULL )
 *   scalar     = property | 'string' | number | TRUE | FALSE | DATE('…') | TIMESTAMP('…')
 *   spatial    = property | WKT geometry | BBOX ( n , n , n , n )
 *
 * Keywords are case-insensitive; property names are not. A keyword cannot be a property name
 * unless written in double quotes (`"in"`).
 *
 * Depth: the parser recurses only on parentheses and NOT, and refuses the level past `maxDepth`
 * before going down, so no input reaches a deep stack. A chain of one operator (`a AND b AND c`)
 * is read in a loop and counts one level, as do each NOT and each pair of parentheses; the
 * height so counted (a predicate alone is 0) is what the compiler recurses on.
 */

const KEYWORDS = new Set(['and', 'or', 'not', 'like', 'between', 'in', 'is', 'null']);
/** The other functions of CQL2, named so that a client learns they exist but are not offered here. */
const UNSUPPORTED_FUNCTIONS = /^(s_(equals|disjoint|touches|within|overlaps|crosses|contains)|t_\w+|a_\w+|casei|accenti|interval)$/i;

export function parseCql2(text: string, maxDepth: number): Condition {
  const parser = new Parser(new Lexer(text), maxDepth);
  return parser.filter();
}

const word = (token: Token) => (token.kind === 'name' ? token.text.toLowerCase() : undefined);

class Parser {
  /** Parentheses and NOTs open at the current token. */
  private nesting = 0;
  /** Height of each condition built so far (a predicate alone is 0). */
  private readonly heights = new WeakMap<Condition, number>();
  constructor(private readonly lexer: Lexer, private readonly maxDepth: number) {}

  filter(): Condition {
    const condition = this.or();
    const token = this.peek();
    if (token.kind !== 'eof') this.fail(token, `unexpected ${describe(token)}: AND, OR or the end of the filter expected`);
    return condition;
  }

  private or(): Condition {
    return this.chain('or', () => this.and());
  }

  private and(): Condition {
    return this.chain('and', () => this.not());
  }

  private chain(kind: 'and' | 'or', operand: () => Condition): Condition {
    const first = operand();
    if (word(this.peek()) !== kind) return first;
    const pos = this.peek().pos;
    const operands = [first];
    while (word(this.peek()) === kind) {
      this.next();
      operands.push(operand());
    }
    // Not Math.max(...operands): a chain may hold more operands than a call takes arguments.
    const height = operands.reduce((most, o) => Math.max(most, this.height(o)), 0) + 1;
    return this.built({ kind, operands, pos }, height, pos);
  }

  private not(): Condition {
    const token = this.peek();
    if (word(token) !== 'not') return this.primary();
    this.next();
    const operand = this.nested(token, () => this.not());
    return this.built({ kind: 'not', operand, pos: token.pos }, this.height(operand) + 1, token.pos);
  }

  private primary(): Condition {
    const token = this.peek();
    if (token.kind === '(') {
      this.next();
      const inner = this.nested(token, () => this.or());
      this.expect(')', 'to close the parenthesis');
      // The parentheses leave no node of their own, but count as a level.
      return this.built(inner, this.height(inner) + 1, token.pos);
    }
    const name = word(token);
    if (name === 's_intersects' && this.peekAt(1).kind === '(') return this.intersects(token);
    if ((name === 'true' || name === 'false') && !this.predicateFollows(1)) {
      this.next();
      return { kind: 'constant', value: name === 'true', pos: token.pos };
    }
    return this.predicate();
  }

  private predicate(): Condition {
    const subject = this.scalar();
    const token = this.next();
    if (token.kind === 'operator') {
      const right = this.scalar();
      const following = this.peek();
      if (following.kind === 'operator') this.fail(following, 'comparisons cannot be chained; combine them with AND');
      return { kind: 'compare', op: token.text, left: subject, right, pos: token.pos };
    }
    let keyword = word(token);
    if (keyword === 'is') {
      const negated = word(this.peek()) === 'not';
      if (negated) this.next();
      const what = this.next();
      if (word(what) !== 'null') this.fail(what, `NULL expected after IS${negated ? ' NOT' : ''}, found ${describe(what)}`);
      return { kind: 'isNull', negated, subject, pos: token.pos };
    }
    const negated = keyword === 'not';
    const operator = negated ? this.next() : token;
    keyword = word(operator);
    if (keyword === 'like') {
      const pattern = this.next();
      if (pattern.kind !== 'string') this.fail(pattern, `LIKE takes a pattern in single quotes, found ${describe(pattern)}`);
      return { kind: 'like', negated, subject, pattern: { kind: 'string', value: pattern.value, pos: pattern.pos }, pos: operator.pos };
    }
    if (keyword === 'between') {
      const low = this.scalar();
      const and = this.next();
      if (word(and) !== 'and') this.fail(and, `AND expected between the bounds of BETWEEN, found ${describe(and)}`);
      const high = this.scalar();
      return { kind: 'between', negated, subject, low, high, pos: operator.pos };
    }
    if (keyword === 'in') {
      this.expect('(', 'after IN');
      const list = [this.scalar()];
      while (this.peek().kind === ',') {
        this.next();
        list.push(this.scalar());
      }
      this.expect(')', 'to close the list of IN');
      return { kind: 'in', negated, subject, list, pos: operator.pos };
    }
    if (negated) return this.fail(operator, `LIKE, BETWEEN or IN expected after NOT, found ${describe(operator)}`);
    if (subject.kind === 'property' && (token.kind === 'eof' || token.kind === ')' || keyword === 'and' || keyword === 'or')) {
      return this.fail(token, `the property ${shown(subject.name)} alone is no condition: compare it (=, <>, <, >, <=, >=) or use LIKE, BETWEEN, IN or IS NULL`);
    }
    return this.fail(token, `a comparison operator, LIKE, BETWEEN, IN or IS expected, found ${describe(token)}`);
  }

  /** A property or a literal: what a predicate compares. */
  private scalar(): Scalar {
    const token = this.next();
    switch (token.kind) {
      case 'string':
        return { kind: 'string', value: token.value, pos: token.pos };
      case 'number':
        return { kind: 'number', value: token.value, integer: token.integer, pos: token.pos };
      case 'quoted':
        return { kind: 'property', name: token.value, pos: token.pos };
      case 'geometry':
        return this.fail(token, 'a geometry can only be an argument of S_INTERSECTS');
      case 'name':
        return this.namedScalar(token);
      default:
        return this.fail(token, `a property or a literal expected, found ${describe(token)}`);
    }
  }

  private namedScalar(token: Token): Scalar {
    const name = token.text.toLowerCase();
    if (name === 'true' || name === 'false') return { kind: 'boolean', value: name === 'true', pos: token.pos };
    if (name === 'null') return this.fail(token, 'NULL can only be tested with IS NULL or IS NOT NULL');
    if (KEYWORDS.has(name)) {
      return this.fail(token, `a property or a literal expected, found the keyword ${token.text} (a property of that name is written in double quotes: "${token.text}")`);
    }
    if (this.peek().kind !== '(') return { kind: 'property', name: token.text, pos: token.pos };
    if (name === 'date' || name === 'timestamp') {
      this.next();
      const literal = this.next();
      const example = name === 'date' ? "DATE('2024-05-01')" : "TIMESTAMP('2024-05-01T10:00:00Z')";
      if (literal.kind !== 'string') this.fail(literal, `${name.toUpperCase()} takes its value in single quotes, as in ${example}`);
      const instant = name === 'date' ? readDate(literal.value) : readTimestamp(literal.value);
      if ('problem' in instant) return this.fail(literal, instant.problem);
      this.expect(')', `to close ${name.toUpperCase()}`);
      return { kind: instant.kind, value: instant.value, pos: token.pos };
    }
    return this.function(token);
  }

  private intersects(token: Token): Condition {
    // The name and its parenthesis.
    this.next();
    this.next();
    const left = this.spatial();
    this.expect(',', 'between the arguments of S_INTERSECTS');
    const right = this.spatial();
    this.expect(')', 'to close S_INTERSECTS (it takes two arguments)');
    return { kind: 'intersects', left, right, pos: token.pos };
  }

  /** An argument of S_INTERSECTS: the geometry queryable, a WKT geometry or a BBOX. */
  private spatial(): SpatialOperand {
    const token = this.next();
    if (token.kind === 'geometry') return { kind: 'geometry', value: token.value, pos: token.pos };
    if (token.kind === 'quoted') return { kind: 'property', name: token.value, pos: token.pos };
    if (token.kind === 'name' && !KEYWORDS.has(token.text.toLowerCase())) {
      if (this.peek().kind !== '(') return { kind: 'property', name: token.text, pos: token.pos } satisfies PropertyName;
      if (token.text.toLowerCase() === 'bbox') return this.bbox(token);
      return this.function(token);
    }
    return this.fail(token, `S_INTERSECTS takes the geometry queryable and a geometry (WKT or BBOX), found ${describe(token)}`);
  }

  private bbox(token: Token): SpatialOperand {
    this.next();
    const values: number[] = [];
    for (;;) {
      const value = this.next();
      if (value.kind !== 'number') return this.fail(value, `BBOX takes numbers, found ${describe(value)}`);
      values.push(value.value);
      if (this.peek().kind !== ',') break;
      this.next();
    }
    this.expect(')', 'to close BBOX');
    if (values.length !== 4) {
      const elevation = values.length === 6 ? ' (a box with elevations is not supported)' : '';
      this.fail(token, `BBOX takes 4 numbers, minx, miny, maxx, maxy, not ${values.length}${elevation}`);
    }
    return { kind: 'bbox', value: values as [number, number, number, number], pos: token.pos };
  }

  /** A name followed by a parenthesis that is none of the functions and literals read here. */
  private function(token: Token): never {
    const name = token.text;
    if (name.toLowerCase() === 'bbox') return this.fail(token, 'a BBOX can only be an argument of S_INTERSECTS');
    if (name.toLowerCase() === 's_intersects') return this.fail(token, 'S_INTERSECTS is a condition, not a value');
    if (UNSUPPORTED_FUNCTIONS.test(name)) return this.fail(token, `${name.toUpperCase()} is not supported; the spatial function offered is S_INTERSECTS`);
    return this.fail(token, `unknown function ${shown(name)}`);
  }

  /** Whether the token `ahead` places from here continues a predicate (`TRUE = covered`), so that TRUE there is a value. */
  private predicateFollows(ahead: number): boolean {
    const token = this.peekAt(ahead);
    return token.kind === 'operator' || ['is', 'not', 'like', 'between', 'in'].includes(word(token) ?? '');
  }

  /** Parses what `token` opens one level deeper, refusing the level past the limit before going down. */
  private nested<T>(token: Token, parse: () => T): T {
    if (++this.nesting > this.maxDepth) throw tooDeep(this.maxDepth, token.pos);
    const result = parse();
    this.nesting--;
    return result;
  }

  private built(condition: Condition, height: number, pos: number): Condition {
    if (height > this.maxDepth) throw tooDeep(this.maxDepth, pos);
    this.heights.set(condition, height);
    return condition;
  }

  private height(condition: Condition): number {
    return this.heights.get(condition) ?? 0;
  }

  private expect(kind: '(' | ')' | ',', why: string): void {
    const token = this.next();
    if (token.kind !== kind) this.fail(token, `'${kind}' expected ${why}, found ${describe(token)}`);
  }

  private peek(): Token {
    return this.lexer.peek();
  }

  private peekAt(ahead: number): Token {
    return this.lexer.peek(ahead);
  }

  private next(): Token {
    return this.lexer.next();
  }

  private fail(token: Token, message: string): never {
    throw cql2Error(message, token.pos);
  }
}

function describe(token: Token): string {
  return token.kind === 'eof' ? 'the end of the filter' : `'${shown(token.text)}'`;
}
