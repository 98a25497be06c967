/**
 * What an OGC request POSTed as XML is: its root element (the operation) and that element's
 * attributes (`service`, `version`), read by a tokenizer of the prolog and the root's start tag.
 * A document type declaration (and with it any entity) is refused wherever it stands: MapServer's
 * XML reader is not ours, and no OGC request needs one. The document must end with the root's end
 * tag, so that a reader taking the last top-level element (GDAL's, in builds without libxml2)
 * finds the same operation as one taking the first (libxml2 refuses a second root). Every check
 * is a native scan or bounded to the document's head: the cost stays linear and small.
 */
export interface XmlRequest {
  /** The root element's local name (`GetFeature`, `Transaction`, …). */
  root: string;
  attributes: Record<string, string>;
}

export class XmlRequestError extends Error {
  override name = 'XmlRequestError';
}

export function readXmlRequest(body: Buffer): XmlRequest {
  if (body.length >= 2 && ((body[0] === 0xfe && body[1] === 0xff) || (body[0] === 0xff && body[1] === 0xfe))) {
    throw new XmlRequestError('the XML document must be UTF-8');
  }
  refuseDeclarations(body);
  let head: string;
  try {
    // The root's start tag lies in the head; a multi-byte character cut at its end is left out
    // (streaming keeps it for a next call this fresh decoder never gets).
    head = new TextDecoder('utf-8', { fatal: true }).decode(body.subarray(0, HEAD_BYTES), { stream: true });
  } catch {
    throw new XmlRequestError('the XML document is not valid UTF-8');
  }
  const bom = head.startsWith('\uFEFF');
  const text = bom ? head.slice(1) : head;
  const request = rootOf(text);
  const selfClosedEnd = request.selfClosedAt === undefined ? undefined : (bom ? 3 : 0) + Buffer.byteLength(text.slice(0, request.selfClosedAt));
  refuseTrailingContent(body, request.qualifiedName, selfClosedEnd);
  return { root: request.root, attributes: request.attributes };
}

/** The root's start tag must end within the first 64 KiB. */
const HEAD_BYTES = 64 * 1024;

/** After the root element, white space only: the body's last tag is the root's end tag. */
function refuseTrailingContent(body: Buffer, qualifiedName: string, selfClosedEnd: number | undefined): void {
  let end = body.length;
  while (end > 0 && (body[end - 1] === 0x20 || body[end - 1] === 0x09 || body[end - 1] === 0x0a || body[end - 1] === 0x0d)) end -= 1;
  if (selfClosedEnd !== undefined) {
    if (end > selfClosedEnd) throw new XmlRequestError('the XML document has content after its root element');
    return;
  }
  const tail = body.subarray(Math.max(0, end - qualifiedName.length - 64), end).toString('latin1');
  if (!new RegExp(`</${qualifiedName.replace(/[.]/g, '\\.')}[ \t\r\n]*>$`).test(tail)) {
    throw new XmlRequestError(`the XML document must end with the root element's end tag </${qualifiedName}>`);
  }
}

/**
 * `<!` opens a comment, a CDATA section, or a declaration (DOCTYPE, ENTITY, ELEMENT, ATTLIST…):
 * only the first two pass. Searched in the bytes, so it costs one native scan of the body.
 */
const CDATA = Buffer.from('<![CDATA[');

function refuseDeclarations(body: Buffer): void {
  for (let at = body.indexOf('<!'); at >= 0; at = body.indexOf('<!', at + 2)) {
    if (body[at + 2] === 0x2d && body[at + 3] === 0x2d) {
      const end = body.indexOf('-->', at + 4);
      if (end < 0) throw new XmlRequestError('the XML document has an unclosed comment');
      at = end;
      continue;
    }
    if (body.compare(CDATA, 0, CDATA.length, at, at + CDATA.length) === 0) {
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

interface Root extends XmlRequest {
  qualifiedName: string;
  /** Where a self-closed root's start tag ends (`/>`), in characters of the head. */
  selfClosedAt?: number;
}

/** The first element's name and attributes, past the XML declaration, processing instructions and comments. */
function rootOf(text: string): Root {
  let at = 0;
  const skipSpace = () => {
    SPACE.lastIndex = at;
    SPACE.exec(text);
    at = SPACE.lastIndex;
  };
  for (;;) {
    skipSpace();
    const close = text.startsWith('<?', at) ? text.indexOf('?>', at + 2) + 2 : text.startsWith('<!--', at) ? text.indexOf('-->', at + 4) + 3 : -1;
    if (close === -1) break;
    if (close < 2) throw new XmlRequestError('the XML document\'s prolog is not closed within its first 64 KiB');
    at = close;
  }
  if (text[at] !== '<') throw new XmlRequestError('the body is not an XML document');
  at += 1;
  const qualified = token(NAME);
  if (!qualified) throw new XmlRequestError('the XML document has no root element');
  const attributes: Record<string, string> = Object.create(null) as Record<string, string>;
  let selfClosedAt: number | undefined;
  for (;;) {
    skipSpace();
    if (text[at] === '>') break;
    if (text.startsWith('/>', at)) {
      selfClosedAt = at + 2;
      break;
    }
    if (at >= text.length) throw new XmlRequestError('the root element\'s start tag does not end within the document\'s first 64 KiB');
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
  return { root: qualified.slice(qualified.indexOf(':') + 1), attributes, qualifiedName: qualified, selfClosedAt };

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
