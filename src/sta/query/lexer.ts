import { StaQueryError } from './errors.js';
import { parseWkt } from './wkt.js';
import type { IntervalText } from './ast.js';
import { instantText } from './typed.js';
import { parseDuration } from '../duration.js';

/**
 * Splits a `$filter` / `$orderby` expression into tokens. Operators (`eq`, `and`, …) and the
 * keywords `true`, `false`, `null`, `not`, `asc`, `desc` come out as plain names: which names are
 * operators depends on where they stand, so the parser decides. Every token keeps its absolute
 * position (the offset of the expression inside the option value plus its own index), so errors
 * point at the character the user wrote.
 */

export type Token =
  | { kind: 'name' | '(' | ')' | ',' | '-' | 'eof'; text: string; pos: number }
  | { kind: 'string' | 'datetime' | 'duration'; text: string; pos: number; value: string }
  | { kind: 'interval'; text: string; pos: number; value: IntervalText }
  | { kind: 'number'; text: string; pos: number; value: number }
  | { kind: 'geometry'; text: string; pos: number; value: { type: string; coordinates: unknown } };

// Sticky patterns for single tokens at one position; never applied to a whole expression.
// A space may stand where `+` began a UTC offset: the query string decodes `+` as a space.
const DATETIME = /(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+\- ](\d{2}):(\d{2}))?)?/y;
const NUMBER = /\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
// A segment after the first may be an array index (`location/geometry/coordinates/0`); digits
// followed by a date's `-` are not one (`P1D/2016-01-02` is an interval).
const NAME = /[A-Za-z_@][\w.@]*(?:\/(?:[A-Za-z_@][\w.@]*|\d+(?![\w.@-])))*/y;
const DURATION = /^-?P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$/;
const NAME_CHAR = /[\w.@]/;

/** Names that introduce a quoted literal of their own type, as in `duration'P1D'`. */
const TYPED_LITERALS = new Set(['duration', 'geography', 'geometry']);

export function tokenize(text: string, where: string, offset = 0): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const fail = (at: number, token: string, message: string): never => {
    throw new StaQueryError(where, offset + at, token, message);
  };

  while (i < text.length) {
    const c = text[i]!;
    const pos = offset + i;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') { i++; continue; }
    if (c === '(' || c === ')' || c === ',' || c === '-') {
      tokens.push({ kind: c, text: c, pos });
      i++;
      continue;
    }
    if (c === "'") {
      const { value, end } = readQuoted(text, i, fail);
      tokens.push({ kind: 'string', text: text.slice(i, end), pos, value });
      i = end;
      continue;
    }
    if (c >= '0' && c <= '9') {
      DATETIME.lastIndex = i;
      const dt = DATETIME.exec(text);
      if (dt) {
        checkDateTime(dt, () => fail(i, dt[0], 'invalid date-time'));
        const start = normaliseOffset(dt[0]);
        i += dt[0].length;
        if (text[i] === '/') {
          // `start/end` or `start/duration`.
          const second = i + 1;
          const end = readDateTime(text, second, fail);
          const duration = end ? undefined : readDuration(text, second, fail);
          const value: IntervalText = end ? { start, end: end.value } : { start, duration: duration!.value };
          i = (end ?? duration)!.end;
          checkOrder(value, () => fail(pos - offset, text.slice(pos - offset, i), 'the interval ends before it starts'));
          tokens.push({ kind: 'interval', text: text.slice(pos - offset, i), pos, value });
        } else {
          tokens.push({ kind: 'datetime', text: dt[0], pos, value: start });
        }
      } else {
        NUMBER.lastIndex = i;
        const num = NUMBER.exec(text)!;
        const value = Number(num[0]);
        if (!Number.isFinite(value)) fail(i, num[0], 'number out of range');
        tokens.push({ kind: 'number', text: num[0], pos, value });
        i += num[0].length;
      }
      if (i < text.length && NAME_CHAR.test(text[i]!)) fail(i, text[i]!, 'unexpected character');
      continue;
    }
    NAME.lastIndex = i;
    const name = NAME.exec(text);
    if (name) {
      const end = i + name[0].length;
      if (text[end] === '/' && DURATION.test(name[0])) {
        // `duration/end`.
        if (!withinRange(name[0])) fail(i, name[0], DURATION_RANGE);
        const until = readDateTime(text, end + 1, fail) ?? fail(end + 1, text.slice(end + 1, end + 21), 'a date-time must follow the duration of an interval');
        tokens.push({ kind: 'interval', text: text.slice(i, until.end), pos, value: { duration: name[0], end: until.value } });
        i = until.end;
        continue;
      }
      if (text[end] === '/') fail(end, '/', 'a property path segment must follow');
      const lower = name[0].toLowerCase();
      if (TYPED_LITERALS.has(lower) && text[end] === "'") {
        const quoted = readQuoted(text, end, fail);
        tokens.push(typedLiteral(lower, quoted.value, text.slice(i, quoted.end), pos, offset + end + 1, where));
        i = quoted.end;
      } else {
        tokens.push({ kind: 'name', text: name[0], pos });
        i = end;
      }
      continue;
    }
    fail(i, c, 'unexpected character');
  }
  tokens.push({ kind: 'eof', text: '', pos: offset + text.length });
  return tokens;
}

// A duration moves an instant of years 1 to 9999 by at most this much, so that PostgreSQL's
// timestamps (4713 BC to 294276 AD) and intervals hold every result and no cast fails at run time.
const DURATION_MAX_YEARS = 4000;
const DURATION_RANGE = `a duration may span at most ${DURATION_MAX_YEARS} years`;

function withinRange(text: string): boolean {
  const duration = parseDuration(text);
  return duration !== undefined && duration.months / 12 + duration.milliseconds / (365 * 86_400_000) <= DURATION_MAX_YEARS;
}

type Fail = (at: number, token: string, message: string) => never;

/** A date-time at `at` (the second part of an interval), or undefined when none starts there. */
function readDateTime(text: string, at: number, fail: Fail): { value: string; end: number } | undefined {
  DATETIME.lastIndex = at;
  const dt = DATETIME.exec(text);
  if (!dt) return undefined;
  checkDateTime(dt, () => fail(at, dt[0], 'invalid date-time'));
  const end = at + dt[0].length;
  if (end < text.length && NAME_CHAR.test(text[end]!)) fail(end, text[end]!, 'unexpected character');
  return { value: normaliseOffset(dt[0]), end };
}

/** An ISO 8601 duration at `at` (the second part of an interval `start/duration`). */
function readDuration(text: string, at: number, fail: Fail): { value: string; end: number } {
  NAME.lastIndex = at;
  const name = NAME.exec(text);
  if (!name || !DURATION.test(name[0]) || name[0].startsWith('-')) {
    return fail(at, name?.[0] ?? text.slice(at, at + 20), 'an interval is start/end, start/duration or duration/end');
  }
  if (!withinRange(name[0])) fail(at, name[0], DURATION_RANGE);
  return { value: name[0], end: at + name[0].length };
}

/** An interval given by its two ends must not end before it starts (one with a duration cannot). */
function checkOrder(value: IntervalText, fail: () => never): void {
  if (value.duration !== undefined) return;
  const start = Date.parse(instantText(value.start));
  const end = Date.parse(instantText(value.end));
  if (Number.isFinite(start) && Number.isFinite(end) && end < start) fail();
}

/** Reads `'…'` starting at the quote; `''` inside stands for one quote. */
function readQuoted(text: string, start: number, fail: (at: number, token: string, message: string) => never): { value: string; end: number } {
  let value = '';
  let i = start + 1;
  for (;;) {
    const next = text.indexOf("'", i);
    if (next < 0) return fail(start, text.slice(start), 'unterminated string literal');
    value += text.slice(i, next);
    if (text[next + 1] === "'") {
      value += "'";
      i = next + 2;
    } else {
      return { value, end: next + 1 };
    }
  }
}

function typedLiteral(kind: string, body: string, text: string, pos: number, bodyPos: number, where: string): Token {
  if (kind === 'duration') {
    if (!DURATION.test(body)) throw new StaQueryError(where, pos, text, 'invalid ISO 8601 duration');
    if (!withinRange(body.replace(/^-/, ''))) throw new StaQueryError(where, pos, text, DURATION_RANGE);
    return { kind: 'duration', text, pos, value: body };
  }
  return { kind: 'geometry', text, pos, value: parseWkt(body, where, bodyPos) };
}

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Rejects what looks like a date-time but names no real instant (month 13, 31 April, 25:00). */
function checkDateTime(m: RegExpExecArray, fail: () => never): void {
  const [, y, mo, d, h, mi, s, , oh, om] = m;
  const year = Number(y), month = Number(mo), day = Number(d);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (year === 0 || month < 1 || month > 12 || day < 1) fail();
  if (day > DAYS_IN_MONTH[month - 1]! || (month === 2 && day === 29 && !leap)) fail();
  if (h !== undefined && (Number(h) > 23 || Number(mi) > 59 || Number(s ?? 0) > 59)) fail();
  if (oh !== undefined && (Number(oh) > 14 || Number(om) > 59)) fail();
}

function normaliseOffset(text: string): string {
  return text.length > 19 && text.includes(' ') ? text.replace(' ', '+') : text;
}
