import { validationFailed } from '../errors.js';

/**
 * An ISO 8601 date-time as the one text it is stored and answered as (`toISOString`, UTC,
 * milliseconds): a bulk insert checks one per row, so the common case is quick.
 */

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

export function isoTime(value: unknown, field: string): string {
  if (typeof value === 'string' && isNormalForm(value)) return value;
  // Parsed once; a day past the month's end or 24:00 rolls over to the next, as Date does.
  const time = typeof value === 'string' && ISO_DATE_TIME.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(time)) throw validationFailed(field, 'must be an ISO 8601 date-time');
  return new Date(time).toISOString();
}

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * `YYYY-MM-DDTHH:MM:SS.sssZ` with every field in range: what `toISOString` writes for it is the
 * text itself (what a client that formats with toISOString, or this server's answers, sends),
 * so it needs no round trip through Date (which costs most of a row's check).
 */
function isNormalForm(text: string): boolean {
  if (text.length !== 24 || text.charCodeAt(23) !== 0x5a /* Z */ || text.charCodeAt(19) !== 0x2e /* . */) return false;
  if (text.charCodeAt(4) !== 0x2d || text.charCodeAt(7) !== 0x2d || text.charCodeAt(10) !== 0x54 /* T */) return false;
  if (text.charCodeAt(13) !== 0x3a || text.charCodeAt(16) !== 0x3a) return false;
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 7);
  const day = digits(text, 8, 10);
  const hour = digits(text, 11, 13);
  const minute = digits(text, 14, 16);
  const second = digits(text, 17, 19);
  // -1: not digits there.
  if (year < 0 || digits(text, 20, 23) < 0 || hour < 0 || minute < 0 || second < 0) return false;
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 && leap ? 29 : DAYS[month - 1]!);
}

/** The decimal number `text[from, to)` spells, or -1 when a character there is not a digit 0-9. */
function digits(text: string, from: number, to: number): number {
  let value = 0;
  for (let i = from; i < to; i++) {
    const digit = text.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}
