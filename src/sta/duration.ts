/**
 * ISO 8601 durations in written time intervals (`2016-01-01T00:00:00Z/PT2H`, `P1D/2016-01-02T00:00:00Z`):
 * read, then added to (or taken from) an instant in UTC, so that the interval is stored by its two
 * ends. Years and months move the calendar (the day kept, or the month's last day when it has fewer,
 * as PostgreSQL does); weeks, days and the time part are fixed lengths (UTC has no daylight saving).
 */

// Bounded: each number at most 9 digits (a longer one is no duration anyone means), so no value
// here can overflow a Date or cost more than one pass.
const DURATION = /^P(?!$)(?:(\d{1,9})Y)?(?:(\d{1,9})M)?(?:(\d{1,9})W)?(?:(\d{1,9})D)?(?:T(?=\d)(?:(\d{1,9})H)?(?:(\d{1,9})M)?(?:(\d{1,9}(?:\.\d{1,9})?)S)?)?$/;

export interface Duration {
  months: number;
  milliseconds: number;
}

export function parseDuration(text: string): Duration | undefined {
  const m = DURATION.exec(text);
  if (!m) return undefined;
  const n = (i: number) => Number(m[i] ?? 0);
  return {
    months: n(1) * 12 + n(2),
    milliseconds: ((((n(3) * 7 + n(4)) * 24 + n(5)) * 60 + n(6)) * 60 + n(7)) * 1000,
  };
}

const daysIn = (year: number, month: number) => new Date(Date.UTC(year, month + 1, 0)).getUTCDate();

/** `instant` moved by `duration`, forwards (`sign` 1) or backwards (-1); NaN when out of the Date range. */
export function shift(instant: Date, duration: Duration, sign: 1 | -1): number {
  const monthIndex = instant.getUTCFullYear() * 12 + instant.getUTCMonth() + sign * duration.months;
  const year = Math.floor(monthIndex / 12), month = monthIndex - year * 12;
  const shifted = new Date(instant.getTime());
  shifted.setUTCFullYear(year, month, Math.min(instant.getUTCDate(), daysIn(year, month)));
  return shifted.getTime() + sign * duration.milliseconds;
}
