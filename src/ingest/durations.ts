/**
 * Durations as data source configurations write them (`30s`, `5m`, `1h30m`, `500ms`, `1.5h`):
 * a run of amounts, each with its unit. The management API checked the text when it was stored;
 * here it is read again without trusting that, since `ingest/` must not import `modules/*`.
 */

const WHOLE = /^(?:\d{1,9}(?:\.\d{1,9})?(?:ms|h|m|s))+$/;
const PART = /(\d{1,9}(?:\.\d{1,9})?)(ms|h|m|s)/g;
const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };

/** The milliseconds of a duration text, or null when the text is not a duration (null, a number, `5 minutes`). */
export function durationMs(text: unknown): number | null {
  if (typeof text !== 'string' || text.length > 100 || !WHOLE.test(text)) return null;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(PART)) total += Number(amount) * UNIT_MS[unit!]!;
  return total;
}
