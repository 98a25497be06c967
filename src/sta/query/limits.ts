import { StaQueryError } from './errors.js';

/**
 * What one request's query options may hold (the contract's "Limits of the data API"). Every
 * check here runs before the expensive work and in time linear in the text, and every recursion
 * of the parsers is cut at these depths, so that no input reaches a deep stack or quadratic work.
 * The names are those of `config.dataApi.limits`, and errors name them, so that a client sees
 * which limit it met and an operator which setting raises it.
 */
export interface QueryLimits {
  /** A `$filter`, `$orderby` or `$select` value: UTF-8 bytes (STA_EXPRESSION_MAX_BYTES). */
  expressionMaxBytes: number;
  /** Nesting levels of one expression (STA_EXPRESSION_MAX_DEPTH). */
  expressionMaxDepth: number;
  /** Levels of `$expand`, a navigation path's segments counted each (STA_EXPAND_MAX_DEPTH). */
  expandMaxDepth: number;
  /** A whole `$expand` value, nested options included: UTF-8 bytes (STA_EXPAND_MAX_BYTES). */
  expandMaxBytes: number;
}

/** The contract's defaults, for callers that build a server without the configuration (tests, benchmarks). */
export const DEFAULT_QUERY_LIMITS: Readonly<QueryLimits> = Object.freeze({
  expressionMaxBytes: 8192,
  expressionMaxDepth: 64,
  expandMaxDepth: 8,
  expandMaxBytes: 8192,
});

/**
 * The `exists` one condition may nest to follow its to-many paths (`Datastreams/Thing/Datastreams/…`
 * nests one per to-many step, two paths in one comparison one per path): a fixed bound rather
 * than a setting, since no meaningful question needs more and the SQL grows with each.
 */
export const RELATED_MAX_DEPTH = 8;

/**
 * Refuses a value longer than `maxBytes` in UTF-8. Counting stops at the first character past the
 * limit, so a megabyte costs no more than the limit does.
 */
export function checkBytes(value: string, maxBytes: number, where: string, offset: number, limit: keyof QueryLimits): void {
  if (value.length <= maxBytes / 3) return; // A UTF-16 unit is at most 3 bytes in UTF-8.
  let bytes = 0;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    // A surrogate pair (4 bytes) counts 2 + 2.
    bytes += code < 0x80 ? 1 : code < 0x800 || (code >= 0xd800 && code < 0xe000) ? 2 : 3;
    if (bytes > maxBytes) throw limitExceeded(where, offset + i, limit, `is longer than ${maxBytes} bytes`);
  }
}

/** A 400 naming the limit (its setting's name) and where in the value it was met. */
export function limitExceeded(where: string, position: number, limit: keyof QueryLimits, message: string): StaQueryError {
  return new StaQueryError(where, position, '', `${message} (limit ${limit})`);
}
