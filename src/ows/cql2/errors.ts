import { AppError } from '../../errors.js';

/**
 * A CQL2 filter this server cannot read or answer: 400 VALIDATION_FAILED on the field `filter`,
 * the message ending in the 0-based position (in UTF-16 units of the text, as JavaScript counts)
 * of what is at fault, e.g. `filter: unknown queryable colour; queryables: name, geometry at position 0`.
 */
export function cql2Error(what: string, position: number): AppError {
  const message = `${what} at position ${position}`;
  return new AppError('VALIDATION_FAILED', `filter: ${message}`, { fieldErrors: [{ field: 'filter', message }] });
}

const MAX_QUOTED_LENGTH = 64;

/**
 * Text of the client's own quoted back in a message. Shortened, because a megabyte of it would
 * only inflate the answer (and the log line that records it).
 */
export function shown(text: string): string {
  return text.length > MAX_QUOTED_LENGTH ? `${text.slice(0, MAX_QUOTED_LENGTH)}…` : text;
}
