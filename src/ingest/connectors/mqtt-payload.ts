import { depthExceededAt } from '../../http/json-body.js';
import type { SourceRecord } from '../types.js';

/**
 * An MQTT payload turned into records: JSON, an object being one record and an array one record
 * per element. Whatever else arrives (not JSON, not UTF-8, a bare number) becomes one record
 * without a value that carries the payload as text and the reason, so that the runtime rejects it
 * visibly instead of the connector dropping it. Nothing here throws on a payload.
 */

/** Payloads above this size are not parsed: a pipeline's records are small, and a parse holds the whole text. */
export const MAX_PAYLOAD_BYTES = 1024 * 1024;
/** How much of an unreadable payload its record keeps as text (what a rejection shows). */
export const MAX_TEXT_BYTES = 64 * 1024;
/**
 * The deepest nesting of arrays and objects parsed: mapping (JSONata) and the writers walk a record
 * by recursion, so depth is bounded before the parse, as the data API bounds request bodies.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * JSON nested deeper than MAX_JSON_DEPTH opens and closes that many brackets: a shorter payload
 * (most are) needs no depth scan; if it is too deep it is no JSON, and V8's JSON.parse refuses it
 * without recursing.
 */
const SHORTEST_TOO_DEEP = 2 * (MAX_JSON_DEPTH + 1);

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

export function recordsOfPayload(topic: string, payload: Uint8Array, receivedAt: Date): SourceRecord[] {
  const unreadable = (reason: string): SourceRecord[] => [{ value: undefined, text: textOf(payload), unreadable: reason, topic, receivedAt }];
  if (payload.length > MAX_PAYLOAD_BYTES) {
    return unreadable(`the payload has ${payload.length} bytes, more than the ${MAX_PAYLOAD_BYTES} read as JSON`);
  }
  let text: string;
  try {
    // The decoder drops a leading byte order mark, which JSON.parse would refuse.
    text = strictUtf8.decode(payload);
  } catch {
    return unreadable('the payload is not valid UTF-8');
  }
  if (payload.length >= SHORTEST_TOO_DEEP) {
    const tooDeepAt = depthExceededAt(text, MAX_JSON_DEPTH);
    if (tooDeepAt >= 0) return unreadable(`the payload nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels at offset ${tooDeepAt}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return unreadable(`the payload is not JSON (${(error as Error).message.slice(0, 200)})`);
  }
  if (Array.isArray(value)) return value.map((element) => ({ value: element, topic, receivedAt }));
  if (value !== null && typeof value === 'object') return [{ value, topic, receivedAt }];
  return unreadable(`the payload is a JSON ${value === null ? 'null' : typeof value}, not an object or an array of records`);
}

/**
 * The payload's first MAX_TEXT_BYTES as text, invalid UTF-8 replaced by U+FFFD. Decoding in stream
 * mode holds back a character the cut splits, rather than turning its first bytes into U+FFFD.
 */
function textOf(payload: Uint8Array): string {
  const head = payload.subarray(0, MAX_TEXT_BYTES);
  return new TextDecoder('utf-8').decode(head, { stream: head.length < payload.length });
}
