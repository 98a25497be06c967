import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';

/**
 * JSON bodies, and only JSON bodies, in UTF-8 (RFC 8259 §8.1), as they are: a body in another
 * charset or compressed would otherwise be read as UTF-8 text and stored garbled, or refused
 * as "not JSON" with no hint of why.
 */
export function installJsonBodies(app: FastifyInstance) {
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
    return parseJson(request, text, done);
  });
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
