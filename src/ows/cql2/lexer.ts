import type { ComparisonOperator, Geometry } from './ast.js';
import { cql2Error, shown } from './errors.js';
import { geometryEnd, isGeometryType, readGeometry } from './wkt.js';

/**
 * Splits a CQL2 text filter into tokens. Keywords (`AND`, `LIKE`, `TRUE`, `S_INTERSECTS`, …) come
 * out as plain names, since which names are keywords depends on where they stand (`DATE(` is a
 * literal, an attribute may be called `date`), so the parser decides. A geometry literal comes
 * out as one token, read here: its insides (`7 50, 8 51`) are not CQL2 tokens. Every token keeps
 * its position, so that errors point at the character the client wrote.
 */

export type Token =
  | { kind: 'name' | '(' | ')' | ',' | 'eof'; text: string; pos: number }
  /** A property name in double quotes; `value` without the quotes. */
  | { kind: 'quoted'; text: string; value: string; pos: number }
  | { kind: 'string'; text: string; value: string; pos: number }
  | { kind: 'number'; text: string; value: number; integer: boolean; pos: number }
  | { kind: 'operator'; text: ComparisonOperator; pos: number }
  | { kind: 'geometry'; text: string; value: Geometry; pos: number };

// Sticky patterns for one token at one position; never applied to the whole text.
const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
// CQL2's numbers: `7`, `-7.5`, `.5`, `7.`, `1e-3`; the sign belongs to the number (there is no arithmetic here).
const NUMBER = /[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/y;
const NAME_CHAR = /[A-Za-z0-9_]/;

/**
 * Tokens on demand, as the parser asks for them: a filter the parser refuses early (a megabyte
 * of `(` past the depth limit) is not read to its end first.
 */
export class Lexer {
  private i = 0;
  /** Tokens read ahead of the parser (at most the two it peeks at). */
  private readonly ahead: Token[] = [];
  constructor(private readonly text: string) {}

  /** The token `k` places ahead, not consumed. */
  peek(k = 0): Token {
    while (this.ahead.length <= k) this.ahead.push(this.read());
    return this.ahead[k]!;
  }

  /** The next token, consumed (the end stays the end). */
  next(): Token {
    const token = this.peek();
    if (token.kind !== 'eof') this.ahead.shift();
    return token;
  }

  private read(): Token {
    const text = this.text;
    let i = this.i;
    while (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r') i++;
    const token = i < text.length ? this.token(i) : { kind: 'eof' as const, text: '', pos: text.length };
    this.i = token.kind === 'eof' ? text.length : token.pos + token.text.length;
    return token;
  }

  /** The token starting at `pos` (not white space). */
  private token(pos: number): Token {
    const text = this.text;
    const c = text[pos]!;
    if (c === '(' || c === ')' || c === ',') return { kind: c, text: c, pos };
    if (c === '=' || c === '<' || c === '>') {
      const two = text.slice(pos, pos + 2);
      const op: ComparisonOperator = two === '<>' || two === '<=' || two === '>=' ? two : (c as ComparisonOperator);
      return { kind: 'operator', text: op, pos };
    }
    if (c === "'" || c === '"') {
      const end = closingQuote(text, pos);
      const value = text.slice(pos + 1, end - 1).replaceAll(c + c, c);
      if (c === '"' && value === '') throw cql2Error('a property name in double quotes cannot be empty', pos);
      return { kind: c === "'" ? 'string' : 'quoted', text: text.slice(pos, end), value, pos };
    }
    NUMBER.lastIndex = pos;
    const number = NUMBER.exec(text);
    if (number) {
      const end = pos + number[0].length;
      if (end < text.length && (NAME_CHAR.test(text[end]!) || text[end] === '.')) throw unexpected(text, end);
      return numberToken(number[0], pos);
    }
    NAME.lastIndex = pos;
    const name = NAME.exec(text);
    if (!name) throw unexpected(text, pos);
    const wordEnd = pos + name[0].length;
    const end = isGeometryType(name[0]) ? geometryEnd(text, pos, wordEnd) : undefined;
    if (end === undefined) return { kind: 'name', text: name[0], pos };
    return { kind: 'geometry', text: text.slice(pos, end), value: readGeometry(text, pos, end), pos };
  }
}

/**
 * Where the quoted text opening at `start` ends (after its closing quote); the quote doubled
 * stands for itself. Linear: each step jumps to the next quote.
 */
function closingQuote(text: string, start: number): number {
  const quote = text[start]!;
  let i = start + 1;
  for (;;) {
    const next = text.indexOf(quote, i);
    if (next < 0) throw cql2Error(quote === "'" ? 'unterminated character string' : 'unterminated property name in double quotes', start);
    if (text[next + 1] !== quote) return next + 1;
    i = next + 2;
  }
}

function numberToken(text: string, pos: number): Token {
  const value = Number(text);
  const integer = /^[+-]?\d+$/.test(text);
  // An integer beyond 2^53 would silently become another one in JavaScript (and in the parameter sent).
  if (integer && !Number.isSafeInteger(value)) throw cql2Error(`the integer ${shown(text)} is out of range (at most ${Number.MAX_SAFE_INTEGER} in magnitude)`, pos);
  if (!Number.isFinite(value)) throw cql2Error(`the number ${shown(text)} is out of range`, pos);
  return { kind: 'number', text, value, integer, pos };
}

function unexpected(text: string, at: number): Error {
  // A whole character, when it is a surrogate pair.
  const char = String.fromCodePoint(text.codePointAt(at)!);
  return cql2Error(`unexpected character '${char}'`, at);
}
