import { XMLValidator } from 'fast-xml-parser';

/**
 * What an OGC request POSTed as XML is: its root element (the operation) and that element's
 * attributes (`service`, `version`), read by a tokenizer of the prolog and the root's start tag,
 * after the whole body was checked to be one well-formed document. A document type declaration
 * (and with it any entity) is refused wherever it stands: MapServer's XML reader is not ours, and
 * no OGC request needs one.
 */
export interface XmlRequest {
  /** The root element's local name (`GetFeature`, `Transaction`, …). */
  root: string;
  attributes: Record<string, string>;
}

export class XmlRequestError extends Error {
  override name = 'XmlRequestError';
}

const decoder = new TextDecoder('utf-8', { fatal: true });

export function readXmlRequest(body: Buffer): XmlRequest {
  if (body.length >= 2 && ((body[0] === 0xfe && body[1] === 0xff) || (body[0] === 0xff && body[1] === 0xfe))) {
    throw new XmlRequestError('the XML document must be UTF-8');
  }
  refuseDeclarations(body);
  let text: string;
  try {
    text = decoder.decode(body);
  } catch {
    throw new XmlRequestError('the XML document is not valid UTF-8');
  }
  const valid = XMLValidator.validate(text);
  if (valid !== true) throw new XmlRequestError(`the XML document is not well-formed: ${valid.err.msg} (line ${valid.err.line})`);
  return rootOf(text.replace(/^\uFEFF/, ''));
}

/**
 * `<!` opens a comment, a CDATA section, or a declaration (DOCTYPE, ENTITY, ELEMENT, ATTLIST…):
 * only the first two pass. Searched in the bytes, so it costs one native scan of the body.
 */
function refuseDeclarations(body: Buffer): void {
  for (let at = body.indexOf('<!'); at >= 0; at = body.indexOf('<!', at + 2)) {
    if (body.subarray(at, at + 4).toString('latin1') === '<!--') {
      const end = body.indexOf('-->', at + 4);
      if (end < 0) throw new XmlRequestError('the XML document has an unclosed comment');
      at = end;
      continue;
    }
    if (body.subarray(at, at + 9).toString('latin1') === '<![CDATA[') {
      const end = body.indexOf(']]>', at + 9);
      if (end < 0) throw new XmlRequestError('the XML document has an unclosed CDATA section');
      at = end;
      continue;
    }
    throw new XmlRequestError('the XML document has a document type or entity declaration (<!DOCTYPE, <!ENTITY); OGC requests need none');
  }
}

const NAME = /[A-Za-z_][\w.-]*(?::[A-Za-z_][\w.-]*)?/y;
const SPACE = /[ \t\r\n]*/y;

/** The first element's name and attributes, past the XML declaration, processing instructions and comments. */
function rootOf(text: string): XmlRequest {
  let at = 0;
  const skipSpace = () => {
    SPACE.lastIndex = at;
    SPACE.exec(text);
    at = SPACE.lastIndex;
  };
  for (;;) {
    skipSpace();
    if (text.startsWith('<?', at)) at = text.indexOf('?>', at + 2) + 2;
    else if (text.startsWith('<!--', at)) at = text.indexOf('-->', at + 4) + 3;
    else break;
    // Checked well-formed above: both are closed.
  }
  if (text[at] !== '<') throw new XmlRequestError('the body is not an XML document');
  at += 1;
  const qualified = token(NAME);
  if (!qualified) throw new XmlRequestError('the XML document has no root element');
  const attributes: Record<string, string> = Object.create(null) as Record<string, string>;
  for (;;) {
    skipSpace();
    if (text[at] === '>' || text.startsWith('/>', at)) break;
    const name = token(NAME);
    skipSpace();
    if (!name || text[at] !== '=') throw new XmlRequestError('the root element\'s attributes are malformed');
    at += 1;
    skipSpace();
    const quote = text[at];
    const end = quote === '"' || quote === '\'' ? text.indexOf(quote, at + 1) : -1;
    if (end < 0) throw new XmlRequestError('the root element\'s attributes are malformed');
    attributes[name.slice(name.indexOf(':') + 1)] = unescapeAttribute(text.slice(at + 1, end));
    at = end + 1;
  }
  return { root: qualified.slice(qualified.indexOf(':') + 1), attributes };

  function token(pattern: RegExp): string | undefined {
    pattern.lastIndex = at;
    const match = pattern.exec(text);
    if (!match) return undefined;
    at = pattern.lastIndex;
    return match[0];
  }
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: '\'' };

function unescapeAttribute(value: string): string {
  return value.replace(/&(#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-z]+);/g, (whole, ref: string) => {
    const code = ref.startsWith('#x') ? Number.parseInt(ref.slice(2), 16) : ref.startsWith('#') ? Number.parseInt(ref.slice(1), 10) : -1;
    if (code >= 0) return code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    return Object.hasOwn(ENTITIES, ref) ? ENTITIES[ref]! : whole;
  });
}
