import { AppError, validationFailed } from '../errors.js';
import type { DataApiLimits } from '../config.js';

/**
 * Upstream mode never passes a client's path or query through: both are decoded and rebuilt by
 * the gateway, so that what the upstream receives means to it what the gateway authorized.
 * Servers disagree on encoded dots, encoded slashes, backslashes and Tomcat's `;` path parameters
 * (`/..;/`); a rebuilt path has none of them, and one that would leave the API's base is refused.
 */

/**
 * The decoded segments of a path below the API's base, `.` and `..` resolved (`%2e`, any case,
 * counts as a dot). Refused (400 naming `field`): a `..` above the base, a segment holding an
 * encoded slash, a backslash or a control character, a segment beginning or ending with `..`
 * (`..;` is `..` to Tomcat), and one still holding an encoded dot, slash or backslash once decoded.
 */
export function normalisedSegments(rawPath: string, field: string): string[] {
  const segments: string[] = [];
  for (const raw of rawPath.split('/')) {
    const segment = decodePart(raw, field);
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (segments.length === 0) throw validationFailed(field, 'leads outside the API\'s base (..)');
      segments.pop();
      continue;
    }
    if (/[/\\]/.test(segment)) throw validationFailed(field, 'a path segment may not hold a slash or backslash, encoded or not');
    if (segment.startsWith('..') || segment.endsWith('..')) throw validationFailed(field, 'a path segment may not begin or end with ..');
    // Encoded twice (`%252e%252e`): a server behind the upstream that decodes once more would see `..`.
    if (/%(2e|2f|5c)/i.test(segment)) throw validationFailed(field, 'a path segment may not hold an encoded dot, slash or backslash after decoding');
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f\u007f]/.test(segment)) throw validationFailed(field, 'a path segment may not hold control characters');
    segments.push(segment);
  }
  // `{base}/v1.1/…` is an alias of `{base}/…` (also when spelled with percent-encoding).
  if (segments[0] === 'v1.1') segments.shift();
  return segments;
}

/** A normalised path as the upstream gets it: `''` or `/Things(1)/Datastreams`, each segment re-encoded. */
export const encodePath = (segments: readonly string[]) => segments.map((segment) => `/${encodeSegment(segment)}`).join('');

/** Whether a path addresses a `$batch` by its last segment (any case, with or without path parameters), normalised as above. */
export function isBatchPath(rawPath: string): boolean {
  try {
    const last = normalisedSegments(rawPath, 'path').at(-1) ?? '';
    return last.toLowerCase().split(';', 1)[0] === '$batch';
  } catch {
    // Refused later, when the request is served; a path that cannot be normalised is no batch.
    return false;
  }
}

// A segment keeps RFC 3986's pchar set unescaped except `;`, which Tomcat takes as a path parameter.
const encodeSegment = (segment: string) => encodeURIComponent(segment).replace(/%(24|26|2B|2C|3D|3A|40)/g, (escaped) => decodeURIComponent(escaped));

/**
 * The query string rebuilt: each `name=value` pair decoded and encoded again by the gateway, in
 * the client's order. A literal `+` stays a `+` and an encoded one stays encoded (a servlet reads
 * the first as a space), so that the rebuilt query means what the client's did. The values of
 * `$filter`, `$orderby`, `$select` (and any other option) are bounded by `expressionMaxBytes`,
 * `$expand` by `expandMaxBytes`, as for our own server. Returns the query without `?`.
 */
export function rebuildQuery(rawQuery: string, limits: Pick<DataApiLimits, 'expressionMaxBytes' | 'expandMaxBytes'>, field?: string): string {
  const pairs: string[] = [];
  for (const pair of rawQuery.split('&')) {
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    const rawName = equals < 0 ? pair : pair.slice(0, equals);
    const rawValue = equals < 0 ? undefined : pair.slice(equals + 1);
    const name = reencodeQueryPart(rawName, field ?? 'query');
    const decodedName = decodePart(rawName.replaceAll('+', ' '), field ?? 'query');
    if (rawValue === undefined) {
      pairs.push(name);
      continue;
    }
    const value = reencodeQueryPart(rawValue, field ?? decodedName);
    const decodedValue = decodePart(rawValue.replaceAll('+', ' '), field ?? decodedName);
    const isExpand = /^\$?expand$/i.test(decodedName.trim());
    const limit = isExpand ? limits.expandMaxBytes : limits.expressionMaxBytes;
    const bytes = Buffer.byteLength(decodedValue);
    if (bytes > limit) {
      const setting = isExpand ? 'expandMaxBytes' : 'expressionMaxBytes';
      throw validationFailed(field ?? decodedName, `is ${bytes} bytes long; at most ${limit} bytes are taken (${setting})`);
    }
    pairs.push(`${name}=${value}`);
  }
  return pairs.join('&');
}

function reencodeQueryPart(raw: string, field: string): string {
  return raw.split('+').map((piece) => encodeQueryPiece(decodePart(piece, field))).join('+');
}

// Like encodeURIComponent, but `$`, `,`, `:`, `@` and `/` stay readable and `'` is always escaped.
const encodeQueryPiece = (text: string) =>
  encodeURIComponent(text).replace(/%(24|2C|3A|40|2F)/g, (escaped) => decodeURIComponent(escaped)).replaceAll('\'', '%27');

function decodePart(text: string, field: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new AppError('MALFORMED_REQUEST', `${field} has malformed percent-encoding`, { fieldErrors: [{ field, message: 'has malformed percent-encoding' }] });
  }
}
