import { cql2Error } from './errors.js';

/**
 * The bounds of one filter beyond the caller's `maxBytes` and `maxDepth`. Every check runs in
 * time linear in the text, before or while it is read, so that no input reaches a deep stack,
 * quadratic work or a query PostgreSQL refuses with a 500.
 */

/**
 * The values one filter may bind as parameters. PostgreSQL's protocol takes at most 65,535 per
 * statement and the items query adds its own; a filter with more is no meaningful question
 * (`IN` lists of thousands are better sent as several requests), so it is refused with a 400 here
 * rather than failing in the driver.
 */
export const MAX_VALUES = 10_000;

/**
 * Refuses a text longer than `maxBytes` in UTF-8. Counting stops at the first character past the
 * limit, so that a megabyte costs no more than the limit does.
 */
export function checkBytes(text: string, maxBytes: number): void {
  if (text.length * 3 <= maxBytes) return; // A UTF-16 unit is at most 3 bytes in UTF-8.
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    // A surrogate pair (4 bytes) counts 2 + 2.
    bytes += code < 0x80 ? 1 : code < 0x800 || (code >= 0xd800 && code < 0xe000) ? 2 : 3;
    if (bytes > maxBytes) throw cql2Error(`the filter is longer than ${maxBytes} bytes`, i);
  }
}

/** The error for a filter nesting past `maxDepth`, at the token that opened the level too many. */
export function tooDeep(maxDepth: number, position: number): Error {
  return cql2Error(`the filter nests deeper than ${maxDepth} levels`, position);
}
