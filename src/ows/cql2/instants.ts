import { shown } from './errors.js';

/**
 * The two instant literals of CQL2, `DATE('2024-05-01')` and `TIMESTAMP('2024-05-01T10:00:00Z')`,
 * checked here rather than left to PostgreSQL: its parser accepts much more (`'today'`,
 * `'May 1'`, a time without a zone read in the session's time zone) and refuses what it cannot
 * read with a 500, so every value that reaches it must name one real instant.
 */

export type Instant = { kind: 'date' | 'timestamp'; value: string };

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
// RFC 3339: seconds are required, a fraction optional; `t` and `z` may be written in lower case.
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))?$/;

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The date `YYYY-MM-DD`, or why it is none. */
export function readDate(text: string): Instant | { problem: string } {
  const m = DATE.exec(text);
  if (!m || !realDay(m[1]!, m[2]!, m[3]!)) return { problem: `'${shown(text)}' is not a date (YYYY-MM-DD)` };
  return { kind: 'date', value: text };
}

/** The timestamp `YYYY-MM-DDThh:mm:ss[.f](Z|±hh:mm)`, or why it is none. */
export function readTimestamp(text: string): Instant | { problem: string } {
  const m = TIMESTAMP.exec(text);
  const [, y, mo, d, h, mi, s, , zone, oh, om] = m ?? [];
  const valid = m && realDay(y!, mo!, d!) && Number(h) <= 23 && Number(mi) <= 59 && Number(s) <= 59
    && (oh === undefined || (Number(oh) <= 14 && Number(om) <= 59));
  if (!valid) return { problem: `'${shown(text)}' is not a timestamp (YYYY-MM-DDThh:mm:ssZ or with an offset ±hh:mm)` };
  // Without a zone the instant would depend on the database session's time zone.
  if (zone === undefined) return { problem: `the timestamp '${shown(text)}' needs a time zone (Z or ±hh:mm)` };
  return { kind: 'timestamp', value: text.toUpperCase() };
}

/**
 * A character string standing for an instant (compared with a date-time property): clients
 * often send `since > '2024-05-01T00:00:00Z'` without the TIMESTAMP wrapper.
 */
export function readInstant(text: string): Instant | { problem: string } {
  if (DATE.test(text)) return readDate(text);
  if (/^\d{4}-\d{2}-\d{2}[Tt]/.test(text)) return readTimestamp(text);
  return { problem: `'${shown(text)}' is not a date-time: write TIMESTAMP('2024-05-01T10:00:00Z') or DATE('2024-05-01')` };
}

function realDay(y: string, mo: string, d: string): boolean {
  const year = Number(y), month = Number(mo), day = Number(d);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (year === 0 || month < 1 || month > 12 || day < 1) return false;
  return day <= DAYS_IN_MONTH[month - 1]! && !(month === 2 && day === 29 && !leap);
}
