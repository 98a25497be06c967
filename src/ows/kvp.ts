/**
 * Key-value pairs read exactly as MapServer 8's CGI loader reads them (`loadParams` in cgiutil.c):
 * the text is split at every `&` (`;` is no separator), each piece has `+` turned into a space and
 * is percent-decoded as a whole (a `%` not followed by two hex digits stays as it is), and only then
 * is it split at its first `=` into name and value. So `SLD%3Dhttp…` is the pair `SLD` = `http…`
 * for MapServer, whatever URLSearchParams makes of it: the gateway must read names the same way
 * before it decides what passes.
 *
 * Pairs are returned as UTF-8 text. A piece that decodes to invalid UTF-8 or to a NUL byte (which
 * would cut MapServer's C string where ours goes on) is refused: no reading then differs.
 */
export interface KvpPair { name: string; value: string }

export class KvpError extends Error {
  override name = 'KvpError';
}

/** More pieces than any OGC request has: a text with more is refused before it is decoded. */
export const MAX_PAIRS = 200;

/** The pairs of a query string (or of a form body: `form` trims trailing white space first, as MapServer does). */
export function parseKvp(text: string, options: { form?: boolean } = {}): KvpPair[] {
  let bytes = toBytes(text);
  if (options.form) {
    let end = bytes.length;
    while (end > 0 && isCSpace(bytes[end - 1]!)) end -= 1;
    bytes = bytes.subarray(0, end);
  }
  let pieces = 0;
  for (let at = bytes.indexOf(0x26); at >= 0 && at < bytes.length - 1; at = bytes.indexOf(0x26, at + 1)) {
    if (++pieces >= MAX_PAIRS) throw new KvpError(`more than ${MAX_PAIRS} parameters`);
  }
  const pairs: KvpPair[] = [];
  let start = 0;
  // MapServer's loop ends at the end of the text: a trailing `&` makes no empty piece, `a&&b` does.
  while (start < bytes.length) {
    let end = bytes.indexOf(0x26, start);
    if (end < 0) end = bytes.length;
    const decoded = decodePiece(bytes.subarray(start, end));
    start = end + 1;
    const equals = decoded.indexOf('=');
    pairs.push(equals < 0 ? { name: decoded, value: '' } : { name: decoded.slice(0, equals), value: decoded.slice(equals + 1) });
  }
  return pairs;
}

/**
 * The query string MapServer reads back as exactly these pairs. A name holding `=` has no such
 * encoding (MapServer splits at the first `=` after decoding): the gateway sends none.
 */
export function encodeKvp(pairs: readonly KvpPair[]): string {
  if (pairs.some(({ name }) => name.includes('='))) throw new Error('a parameter name with "=" cannot be sent to MapServer');
  return pairs.map(({ name, value }) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join('&');
}

/**
 * The request line's characters are its bytes (Node reads a raw request target as latin1); text
 * given with wider characters (a test's `inject`) is taken as UTF-8, as a client would have sent it.
 */
function toBytes(text: string): Buffer {
  for (let i = 0; i < text.length; i += 1) if (text.charCodeAt(i) > 0xff) return Buffer.from(text, 'utf8');
  return Buffer.from(text, 'latin1');
}

/** C's isspace in the "C" locale. */
const isCSpace = (byte: number) => byte === 0x20 || (byte >= 0x09 && byte <= 0x0d);

function hexValue(byte: number | undefined): number {
  if (byte === undefined) return -1;
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x41 + 10;
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x61 + 10;
  return -1;
}

/**
 * One piece as MapServer decodes it, as UTF-8 text. Splitting the decoded piece at its first `=`
 * is the same on bytes and on text (`=` is one byte in UTF-8 and part of no other character).
 * Pieces of ASCII whose every `%` starts an escape decode natively (decodeURIComponent refuses
 * exactly the invalid UTF-8 we refuse); the others byte by byte.
 */
function decodePiece(piece: Buffer): string {
  const ascii = piece.toString('latin1');
  if (!/[^\x00-\x7f]|%(?![0-9A-Fa-f]{2})/.test(ascii)) {
    let text: string;
    try {
      text = decodeURIComponent(ascii.replaceAll('+', ' '));
    } catch {
      throw new KvpError('a parameter is not valid UTF-8 once percent-decoded');
    }
    if (text.includes('\0')) throw new KvpError('a parameter holds a NUL byte (%00)');
    return text;
  }
  return utf8(unescape(piece));
}

/** `+` to space, then `%XX` to its byte, one pass (a decoded `%` is not decoded again). */
function unescape(piece: Buffer): Buffer {
  const out = Buffer.alloc(piece.length);
  let length = 0;
  for (let i = 0; i < piece.length; i += 1) {
    const byte = piece[i]!;
    if (byte === 0x25) {
      const hi = hexValue(piece[i + 1]);
      const lo = hexValue(piece[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out[length++] = hi * 16 + lo;
        i += 2;
        continue;
      }
    }
    out[length++] = byte === 0x2b ? 0x20 : byte;
  }
  return out.subarray(0, length);
}

const decoder = new TextDecoder('utf-8', { fatal: true });

function utf8(bytes: Buffer): string {
  if (bytes.includes(0)) throw new KvpError('a parameter holds a NUL byte (%00)');
  try {
    return decoder.decode(bytes);
  } catch {
    throw new KvpError('a parameter is not valid UTF-8 once percent-decoded');
  }
}
