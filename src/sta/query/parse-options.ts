import type { ExpandItem, QueryOptions } from './ast.js';
import { StaQueryError } from './errors.js';
import { parseFilter, parseOrderBy } from './parse-expression.js';
import { checkBytes, DEFAULT_QUERY_LIMITS, limitExceeded, type QueryLimits } from './limits.js';

/**
 * The query options of a SensorThings request. Option names are case-sensitive, as the standard
 * writes them (`$top`, not `$TOP`), which is also what FROST-Server does. Parameters that do not
 * start with `$` belong to someone else and are ignored.
 *
 * Values are decoded like a servlet container does (`+` is a space), so an unencoded `+01:00`
 * offset arrives as ` 01:00`; the lexer accepts that space inside a date-time literal.
 *
 * Each value is held to `limits` before it is parsed: its bytes first, then its depth as the
 * parsers go (an `$expand` level at a time, an expression token by token), so the work stays
 * linear in the text and no recursion goes deeper than a limit.
 */

type OptionName = '$top' | '$skip' | '$count' | '$filter' | '$orderby' | '$select' | '$expand' | '$resultFormat';

const OPTION_NAMES = new Set<string>(['$top', '$skip', '$count', '$filter', '$orderby', '$select', '$expand', '$resultFormat']);

/**
 * What an error inside a value should name, where that value starts, and the `$expand` levels
 * above it (0 outside any `$expand`).
 */
interface Site { where: string; offset: number; limits: QueryLimits; expandLevel: number }

export function parseQueryOptions(rawQuery: string, limits: QueryLimits = DEFAULT_QUERY_LIMITS): QueryOptions {
  const options: QueryOptions = {};
  const seen = new Set<string>();
  for (const pair of rawQuery.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const rawKey = eq < 0 ? pair : pair.slice(0, eq);
    const key = decode(rawKey, 'query', 0);
    if (!key.startsWith('$')) continue;
    const value = decode(eq < 0 ? '' : pair.slice(eq + 1), key, 0);
    if (!OPTION_NAMES.has(key)) throw new StaQueryError(key, 0, key, 'unknown query option');
    if (seen.has(key)) throw new StaQueryError(key, 0, key, 'the option is given more than once');
    seen.add(key);
    applyOption(options, key as OptionName, value, { where: key, offset: 0, limits, expandLevel: 0 });
  }
  return options;
}

function decode(text: string, where: string, position: number): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    throw new StaQueryError(where, position, text, 'malformed percent-encoding');
  }
}

function applyOption(options: QueryOptions, name: OptionName, value: string, site: Site): void {
  switch (name) {
    case '$top': options.top = nonNegativeInteger(value, site); break;
    case '$skip': options.skip = nonNegativeInteger(value, site); break;
    case '$count':
      if (value !== 'true' && value !== 'false') fail(site, 0, value, "expected 'true' or 'false'");
      options.count = value === 'true';
      break;
    case '$filter':
      checkExpressionBytes(value, site);
      options.filter = parseFilter(value, site.where, site.offset, site.limits.expressionMaxDepth);
      break;
    case '$orderby':
      checkExpressionBytes(value, site);
      options.orderBy = parseOrderBy(value, site.where, site.offset, site.limits.expressionMaxDepth);
      break;
    case '$select':
      checkExpressionBytes(value, site);
      options.select = parseSelect(value, site);
      break;
    case '$expand':
      // A nested `$expand` lies inside the outer value, which was held to the limit already.
      if (site.expandLevel === 0) checkBytes(value, site.limits.expandMaxBytes, site.where, site.offset, 'expandMaxBytes');
      options.expand = parseExpand(value, site);
      break;
    case '$resultFormat':
      if (value !== 'dataArray') fail(site, 0, value, "the only result format is 'dataArray'");
      options.resultFormat = 'dataArray';
      break;
  }
}

function checkExpressionBytes(value: string, site: Site): void {
  checkBytes(value, site.limits.expressionMaxBytes, site.where, site.offset, 'expressionMaxBytes');
}

function fail(site: Site, at: number, token: string, message: string): never {
  throw new StaQueryError(site.where, site.offset + at, token, message);
}

function nonNegativeInteger(value: string, site: Site): number {
  const trimmed = value.trim();
  const lead = value.indexOf(trimmed);
  if (!/^\d+$/.test(trimmed)) fail(site, lead, trimmed, 'expected a non-negative integer');
  const n = Number(trimmed);
  if (!Number.isSafeInteger(n)) fail(site, lead, trimmed, 'the number is too large');
  return n;
}

const SELECT_NAME = /^(?:@iot\.)?[A-Za-z_][A-Za-z0-9_]*$/;

function parseSelect(value: string, site: Site): string[] {
  return splitTopLevel(value, ',', site).map(({ text, at }) => {
    const name = text.trim();
    const lead = at + text.indexOf(name);
    if (!SELECT_NAME.test(name)) fail(site, lead, name, name === '' ? 'a property name is expected' : 'invalid property name');
    return name;
  });
}

const NAVIGATION_PATH = /^[A-Za-z_][A-Za-z0-9_]*(?:\/[A-Za-z_][A-Za-z0-9_]*)*/;

/**
 * `A/B(opts),C`: the options in parentheses may hold further `$expand`s, up to `expandMaxDepth`
 * levels, each segment of a navigation path counting as one (`A/B` expands two levels). The
 * depth is checked before an item's options are split, so each level scans the text once.
 */
function parseExpand(value: string, site: Site): ExpandItem[] {
  return splitTopLevel(value, ',', site).map(({ text, at }) => {
    const lead = text.length - text.trimStart().length;
    const item = text.trim();
    const pos = at + lead;
    const path = NAVIGATION_PATH.exec(item)?.[0];
    if (!path) fail(site, pos, item, item === '' ? 'a navigation property is expected' : 'invalid navigation property');
    const rest = item.slice(path!.length);
    const expand: ExpandItem = { path: path!.split('/'), options: {}, pos: site.offset + pos };
    const level = site.expandLevel + expand.path.length;
    if (level > site.limits.expandMaxDepth) {
      throw limitExceeded(site.where, expand.pos, 'expandMaxDepth', `nests deeper than ${site.limits.expandMaxDepth} levels`);
    }
    if (rest === '') return expand;
    if (!rest.startsWith('(') || !rest.endsWith(')')) fail(site, pos + path!.length, rest, "'(' with options expected after the navigation");
    const innerAt = pos + path!.length + 1;
    expand.options = parseNestedOptions(rest.slice(1, -1), { ...site, offset: site.offset + innerAt, expandLevel: level });
    return expand;
  });
}

/** `$filter=…;$top=2;$expand=…` inside an `$expand` item; positions stay those of the outer value. */
function parseNestedOptions(text: string, site: Site): QueryOptions {
  const options: QueryOptions = {};
  const seen = new Set<string>();
  for (const { text: part, at } of splitTopLevel(text, ';', site)) {
    const eq = part.indexOf('=');
    const key = (eq < 0 ? part : part.slice(0, eq)).trim();
    const keyAt = at + part.indexOf(key);
    if (!OPTION_NAMES.has(key)) fail(site, keyAt, key, key === '' ? 'a query option is expected' : 'unknown query option');
    if (eq < 0) fail(site, keyAt + key.length, '', "'=' expected");
    if (seen.has(key)) fail(site, keyAt, key, 'the option is given more than once');
    seen.add(key);
    applyOption(options, key as OptionName, part.slice(eq + 1), { ...site, offset: site.offset + at + eq + 1 });
  }
  return options;
}

/**
 * Splits on `separator` where it stands outside parentheses and quoted strings (`''` inside a
 * string toggles out and back in, which leaves the state right).
 */
function splitTopLevel(text: string, separator: string, site: Site): { text: string; at: number }[] {
  const parts: { text: string; at: number }[] = [];
  let depth = 0, quoted = false, start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'") quoted = !quoted;
    else if (quoted) continue;
    else if (c === '(') depth++;
    else if (c === ')') {
      if (--depth < 0) fail(site, i, ')', "unbalanced ')'");
    } else if (c === separator && depth === 0) {
      parts.push({ text: text.slice(start, i), at: start });
      start = i + 1;
    }
  }
  if (quoted) fail(site, text.lastIndexOf("'"), "'", 'unterminated string literal');
  if (depth > 0) fail(site, text.length, '', "')' expected");
  parts.push({ text: text.slice(start), at: start });
  return parts;
}
