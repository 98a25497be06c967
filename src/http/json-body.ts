import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, validationFailed } from '../errors.js';

export interface JsonBodyOptions {
  /**
   * The deepest nesting of arrays and objects a body may have (DATA_API_JSON_MAX_DEPTH): checked
   * before the body is parsed, because everything after the parse (validation, deep inserts,
   * jsonb in PostgreSQL) walks a body by recursion.
   */
  maxDepth: number;
}

/**
 * JSON bodies, and only JSON bodies, in UTF-8 (RFC 8259 §8.1), as they are: a body in another
 * charset or compressed would otherwise be read as UTF-8 text and stored garbled, or refused
 * as "not JSON" with no hint of why.
 */
export function installJsonBodies(app: FastifyInstance, options: JsonBodyOptions) {
  // text/plain would otherwise be parsed by Fastify's defaults.
  app.removeContentTypeParser(['text/plain', 'application/json']);
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser(['application/json', 'application/merge-patch+json', 'application/geo+json'], { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    const refusal = unsupportedRepresentation(request);
    if (refusal) return done(refusal, undefined);
    // Many clients send Content-Type: application/json on every request, DELETE included; an empty
    // body is then no body (a route that needs one still answers 400), not malformed JSON.
    if (body.length === 0) return done(null, undefined);
    let text: string;
    try {
      text = utf8.decode(body);
    } catch {
      return done(new AppError('MALFORMED_REQUEST', 'The request body is not valid UTF-8'), undefined);
    }
    const tooDeepAt = depthExceededAt(text, options.maxDepth);
    if (tooDeepAt >= 0) return done(jsonTooDeep(options.maxDepth, tooDeepAt), undefined);
    return parseJson(request, text, done);
  });
}

/** The 400 for a body nested deeper than `maxDepth`, naming the limit and where it was met. */
export const jsonTooDeep = (maxDepth: number, offset: number) =>
  validationFailed('body', `nests arrays and objects deeper than ${maxDepth} levels at offset ${offset} (limit jsonMaxDepth)`);

const QUOTE = 0x22, BACKSLASH = 0x5c, OPEN_BRACE = 0x7b, CLOSE_BRACE = 0x7d, OPEN_BRACKET = 0x5b, CLOSE_BRACKET = 0x5d;

/**
 * The offset of the first `[` or `{` that opens a level beyond `maxDepth`, or -1: one pass over
 * the text that skips strings (a bracket inside one is text, `\"` does not end one). It does not
 * validate: a malformed body passes here and `JSON.parse` refuses it. Strings are skipped with
 * `indexOf`, and the backslashes before a quote are counted back only as far as the previous quote,
 * so every character is looked at a bounded number of times.
 */
export function depthExceededAt(text: string, maxDepth: number): number {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = closingQuote(text, i);
      if (end < 0) return -1;
      i = end;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > maxDepth) return i;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return -1;
}

/** The index of the quote that ends the string opened at `open`, or -1 when it never ends. */
function closingQuote(text: string, open: number): number {
  for (let from = open + 1; ;) {
    const quote = text.indexOf('"', from);
    if (quote < 0) return -1;
    let backslashes = 0;
    while (quote - backslashes - 1 > open && text.charCodeAt(quote - backslashes - 1) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    from = quote + 1;
  }
}

// Fatal: invalid bytes are refused, rather than silently turned into U+FFFD.
const utf8 = new TextDecoder('utf-8', { fatal: true });
// The WHATWG Encoding Standard's labels for UTF-8 that a sender of JSON plausibly writes.
const UTF8_LABELS = new Set(['utf-8', 'utf8', 'unicode-1-1-utf-8']);

function unsupportedRepresentation(request: FastifyRequest): AppError | null {
  const charset = charsetOf(request.headers['content-type'] ?? '');
  if (charset !== null && !UTF8_LABELS.has(charset)) {
    return new AppError('UNSUPPORTED_MEDIA_TYPE', `A JSON body must be UTF-8 (got charset=${printable(charset)})`);
  }
  const codings = String(request.headers['content-encoding'] ?? '').split(',').map((coding) => coding.trim().toLowerCase()).filter(Boolean);
  const unsupported = codings.find((coding) => coding !== 'identity');
  if (unsupported !== undefined) {
    return new AppError('UNSUPPORTED_MEDIA_TYPE', `The request body must not be encoded (Content-Encoding: ${printable(unsupported)} is not supported)`);
  }
  return null;
}

/** The charset parameter of a Content-Type, lower-cased and unquoted; null when there is none. */
function charsetOf(contentType: string): string | null {
  for (const parameter of contentType.split(';').slice(1)) {
    const [name = '', value = ''] = parameter.split('=', 2).map((part) => part.trim());
    if (name.toLowerCase() === 'charset') return value.replace(/^"(.*)"$/, '$1').toLowerCase();
  }
  return null;
}

// Header text goes back into the answer: bounded and without control characters.
const printable = (text: string) => text.replace(/[^\x20-\x7e]/g, '?').slice(0, 40);
