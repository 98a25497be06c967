/**
 * Durations as data source configurations write them (`30s`, `5m`, `1h30m`, `500ms`), read here
 * rather than through the data source module, which `ingest/` does not import. The module checks
 * them on write; this reader still refuses anything else, for a configuration stored before.
 */

const WHOLE = /^(?:\d+(?:\.\d+)?(?:h|ms|m|s))+$/;
const PART = /(\d+(?:\.\d+)?)(h|ms|m|s)/g;
const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };

/** Milliseconds of a duration such as `1h30m`, or null when the text is not one. */
export function durationMs(text: unknown): number | null {
  if (typeof text !== 'string' || text.length > 64 || !WHOLE.test(text)) return null;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(PART)) total += Number(amount) * UNIT_MS[unit!]!;
  return Number.isFinite(total) ? Math.round(total) : null;
}
