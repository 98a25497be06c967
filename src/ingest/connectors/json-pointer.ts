/**
 * RFC 6901 JSON Pointers (`/data/items`, `/a~1b` for the member `a/b`), resolved on a parsed JSON
 * value. `records_pointer` of an HTTP data source says where in the answer its records are.
 */

/** The pointer's reference tokens, or null when the text is not a pointer (`""` is the whole document). */
export function pointerTokens(pointer: string): string[] | null {
  if (pointer === '') return [];
  if (!pointer.startsWith('/') || /~[^01]|~$/.test(pointer)) return null;
  return pointer.slice(1).split('/').map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
}

export type Resolution = { found: true; value: unknown } | { found: false; reason: string };

/** The value `pointer` names in `document`, or why there is none (naming the pointer, which is configuration, not data). */
export function resolvePointer(document: unknown, pointer: string): Resolution {
  const tokens = pointerTokens(pointer);
  if (tokens === null) return { found: false, reason: `records_pointer ${JSON.stringify(pointer)} is not a JSON Pointer` };
  let value = document;
  for (const token of tokens) {
    if (Array.isArray(value)) {
      // RFC 6901 §4: an array index is 0 or digits without a leading zero; "-" names no element.
      if (!/^(0|[1-9]\d*)$/.test(token) || Number(token) >= value.length) return missing(pointer);
      value = value[Number(token)];
    } else if (value !== null && typeof value === 'object' && Object.hasOwn(value, token)) {
      value = (value as Record<string, unknown>)[token];
    } else {
      return missing(pointer);
    }
  }
  return { found: true, value };
}

const missing = (pointer: string): Resolution => ({ found: false, reason: `the answer has no value at records_pointer ${pointer}` });
