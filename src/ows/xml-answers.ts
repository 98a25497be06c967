/**
 * MapServer's XML documents as a client gets them:
 * - MapServer heads them with a comment naming its version and build options, and puts warning
 *   comments into capabilities (metadata it found missing): both are cut.
 * - WFS 2.0.0 types date-time attributes `gml:TimeInstantType` and wraps their values in
 *   `gml:timePosition`: they are plain `dateTime` values, as in WFS 1.1.0.
 * - WFS capabilities advertise each feature type's extent from its data (the mapfile's WFS extent is
 *   the world, for queries: see mapfile.ts).
 * - DescribeFeatureType binds XML Schema both as the default namespace and to `xsd`, and names its
 *   types unprefixed. OWSLib's schema reader takes whichever binding it meets last as the one that
 *   types are prefixed with, and read no property at all when that was the default: the schema is
 *   written with `xsd` alone (`<xsd:element … type="xsd:long"/>`), which every reader resolves.
 * - WFS 1.0.0 features are labelled with the EPSG URN (`wfs_return_srs_as_urn`, which 1.1.0 needs)
 *   although their coordinates are x/y, as 1.0.0 always is: QGIS then swapped them. They are
 *   labelled `EPSG:4326`, the form that means x/y.
 */

/** Comments are only looked for in the head of big documents (feature collections): MapServer writes them there. */
const HEAD_BYTES = 64 * 1024;

export interface XmlAnswerContext {
  service: 'WFS' | 'WMS';
  /** The request, lowercase (`getcapabilities`, `describefeaturetype`, `getfeature`, …). */
  request: string;
  version: string | undefined;
  /** Each collection's WGS 84 extent as last computed (null while empty): what WFS capabilities advertise. */
  extents: ReadonlyMap<string, readonly [number, number, number, number] | null>;
}

export function rewriteXmlAnswer(body: Buffer, context: XmlAnswerContext): Buffer {
  if (!needsWholeText(body, context)) return withoutHeadComments(body);
  const small = body.length <= HEAD_BYTES;
  const head = small ? body.toString('utf8') : body.subarray(0, HEAD_BYTES).toString('utf8');
  // A multi-byte character cut at the head's end is left for the tail to carry, untouched.
  const cut = small ? head.length : head.lastIndexOf('>') + 1;
  const tail = small ? '' : body.subarray(Buffer.byteLength(head.slice(0, cut))).toString('utf8');
  let text = withoutComments(head.slice(0, cut)) + tail;
  if (context.service === 'WFS' && isWfs2(context.version)) text = plainDateTimes(text, context.request);
  if (context.service === 'WFS' && context.request === 'describefeaturetype') text = xsdPrefixedSchema(text);
  if (context.service === 'WFS' && isWfs1_0(context.version) && FEATURE_ANSWERS.has(context.request)) text = epsgCodeLabels(text);
  if (context.service === 'WFS' && context.request === 'getcapabilities') text = dataExtents(text, context.extents);
  return Buffer.from(text, 'utf8');
}

/** Whether more than the head's comments may change: schemas, capabilities, WFS 2.0 features with date-times. */
function needsWholeText(body: Buffer, context: XmlAnswerContext): boolean {
  if (context.service !== 'WFS') return false;
  if (context.request === 'describefeaturetype' || context.request === 'getcapabilities') return true;
  if (!FEATURE_ANSWERS.has(context.request)) return false;
  if (isWfs1_0(context.version)) return body.includes(URN_LABEL);
  return isWfs2(context.version) && body.includes('<gml:timePosition>');
}

/**
 * The head's comments cut without decoding the rest: feature collections and maps' XML are passed
 * on as they came, but for the bytes up to the end of the last comment in the head (ASCII `-->`, so
 * never inside a character). Nothing to cut: the body itself, not a copy.
 */
function withoutHeadComments(body: Buffer): Buffer {
  const last = body.lastIndexOf('<!--', HEAD_BYTES);
  if (last < 0) return body;
  const close = body.indexOf('-->', last);
  if (close < 0) return body;
  let cut = close + 3;
  while (body[cut] === 0x20 || body[cut] === 0x09) cut += 1;
  if (body[cut] === 0x0d && body[cut + 1] === 0x0a) cut += 2;
  else if (body[cut] === 0x0a) cut += 1;
  return Buffer.concat([Buffer.from(withoutComments(body.subarray(0, cut).toString('utf8')), 'utf8'), body.subarray(cut)]);
}

/** The requests whose answers hold attribute values. */
const FEATURE_ANSWERS = new Set(['getfeature', 'getpropertyvalue']);

const isWfs2 = (version: string | undefined) => version === undefined || version.startsWith('2');
const isWfs1_0 = (version: string | undefined) => version === '1.0.0';

const URN_LABEL = 'srsName="urn:ogc:def:crs:EPSG::';

/** WFS 1.0.0: `srsName="urn:ogc:def:crs:EPSG::4326"` becomes `srsName="EPSG:4326"` (x/y, as the coordinates are). */
const epsgCodeLabels = (text: string) => text.replaceAll(URN_LABEL, 'srsName="EPSG:');

/**
 * WFS 2.0.0: `type="gml:TimeInstantType"` in a feature type's schema becomes XML Schema's
 * `dateTime`, and in features a value `<x gml:id="…"><gml:timePosition>v</gml:timePosition></x>`
 * becomes `<x>v</x>`, as in WFS 1.1.0: GIS clients then read a date-time field, not an object.
 */
function plainDateTimes(text: string, request: string): string {
  if (request === 'describefeaturetype') return text.replaceAll('type="gml:TimeInstantType"', 'type="dateTime"');
  if (!FEATURE_ANSWERS.has(request) || !text.includes('<gml:timePosition>')) return text;
  return text.replace(/(<[A-Za-z_][\w.-]*:[A-Za-z_][\w.-]*)\s+gml:id="[^"]*"\s*>\s*<gml:timePosition>([^<]*)<\/gml:timePosition>\s*(<\/)/g, '$1>$2$3');
}

function dataExtents(text: string, extents: XmlAnswerContext['extents']): string {
  return text.replace(/<FeatureType\b[\s\S]*?<\/FeatureType>/g, (block) => {
    const name = /<Name>(?:[^<:]*:)?([^<]*)<\/Name>/.exec(block)?.[1];
    const box = name === undefined ? undefined : extents.get(name);
    if (!box) return block;
    const [minx, miny, maxx, maxy] = box.map((value) => value.toFixed(6));
    return block
      .replace(/<LatLongBoundingBox\b[^>]*\/>/, `<LatLongBoundingBox minx="${minx}" miny="${miny}" maxx="${maxx}" maxy="${maxy}" />`)
      .replace(/<ows:LowerCorner>[^<]*<\/ows:LowerCorner>/, `<ows:LowerCorner>${minx} ${miny}</ows:LowerCorner>`)
      .replace(/<ows:UpperCorner>[^<]*<\/ows:UpperCorner>/, `<ows:UpperCorner>${maxx} ${maxy}</ows:UpperCorner>`);
  });
}

/** MapServer's own comments: its version banner and its warnings. */
function withoutComments(text: string): string {
  return text.replace(/[ \t]*<!--\s*(?:MapServer version|WARNING|end of DOCTYPE)[\s\S]*?-->[ \t]*(?:\r?\n)?/g, '');
}

const XML_SCHEMA = 'http://www.w3.org/2001/XMLSchema';
const XSD_TYPES = /(<xsd:element\b[^>]*\btype=")(string|long|integer|int|double|boolean|dateTime|date|time)"/g;
/** A start or end tag without a namespace prefix: in a schema whose default namespace is XML Schema's, one of its elements. */
const UNPREFIXED_TAG = /<(\/?)([A-Za-z_][\w.-]*)(?=[\s/>])/g;

/** The schema written with XML Schema bound to `xsd` alone: its elements and its built-in types prefixed. */
function xsdPrefixedSchema(text: string): string {
  if (!text.includes(`xmlns="${XML_SCHEMA}"`)) return text;
  let prefixed = text.replace(UNPREFIXED_TAG, '<$1xsd:$2').replace(/\s+xmlns="http:\/\/www\.w3\.org\/2001\/XMLSchema"/, '');
  if (!prefixed.includes(`xmlns:xsd="${XML_SCHEMA}"`)) prefixed = prefixed.replace('<xsd:schema', `<xsd:schema xmlns:xsd="${XML_SCHEMA}"`);
  return prefixed.replace(XSD_TYPES, '$1xsd:$2"');
}
