import { validationFailed } from '../errors.js';
import { encodeKvp, KvpError, parseKvp, type KvpPair } from './kvp.js';
import { allowedParams, DRAWING_REQUESTS, serviceOfRequest, SERVICE_VERSIONS, XML_READS, XML_WRITES, type OwsService } from './operations.js';
import type { DatasetStyles } from './sld-styles.js';
import { readXmlRequest, XmlRequestError } from './xml-request.js';

/**
 * What an OGC request on an OWS named API is, read off its key-value pairs (GET, or a POSTed
 * form) or its XML body, and what MapServer gets of it. Nothing a caller sends passes through:
 * key-value requests are parsed as MapServer parses them (kvp.ts), cut down to the parameters the
 * gateway knows for that service, version and request (operations.ts), and re-encoded by the
 * gateway; XML documents pass only when a real parse finds one of the WFS operations allowed as
 * XML, without a document type declaration.
 */
export type OwsOperationKind = 'read' | 'write';

export interface OwsMessage {
  method: string;
  /** Raw query string, without `?`. */
  query: string;
  body: Buffer | undefined;
  contentType: string | undefined;
}

/** A request the gateway can send to MapServer, or the exception report it answers instead. */
export type OwsPlan =
  | { kind: 'kvp'; service: OwsService; request: string; version: string | undefined; params: KvpPair[] }
  | { kind: 'xml'; service: 'WFS'; request: string; version: string | undefined; body: Buffer }
  | { kind: 'refused'; service: OwsService | null; code: string; locator?: string; text: string; write: boolean };

/** MapServer's test for a form is a prefix match (strncmp); so is ours, or the two could read one body differently. */
export const isForm = (contentType: string | undefined) => (contentType ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded');

/**
 * A WFS-T Transaction writes; every other OGC operation (capabilities, features, maps, legends)
 * reads. An XML body the gateway cannot read (a DOCTYPE in front, not well-formed) counts as a
 * write: it is refused anyway, and never on the strength of a read permission.
 */
export function owsOperationOf(plan: OwsPlan): OwsOperationKind {
  if (plan.kind === 'refused') return plan.write ? 'write' : 'read';
  return plan.request === 'transaction' ? 'write' : 'read';
}

export function planOwsRequest(message: OwsMessage): OwsPlan {
  const form = message.method === 'POST' && isForm(message.contentType);
  if (message.method === 'POST' && !form) return planXml(message.body);
  let pairs: KvpPair[];
  try {
    // MapServer reads a form's pairs, then the query string's.
    pairs = form ? [...parseKvp(message.body?.toString('latin1') ?? '', { form: true }), ...parseKvp(message.query)] : parseKvp(message.query);
  } catch (error) {
    if (!(error instanceof KvpError)) throw error;
    return refused(null, 'InvalidParameterValue', undefined, error.message, false);
  }
  return planKvp(pairs);
}

function refused(service: OwsService | null, code: string, locator: string | undefined, text: string, write: boolean): OwsPlan {
  return { kind: 'refused', service, code, locator, text, write };
}

function planKvp(pairs: KvpPair[]): OwsPlan {
  const byName = new Map<string, KvpPair[]>();
  for (const pair of pairs) {
    const key = pair.name.toLowerCase();
    byName.set(key, [...(byName.get(key) ?? []), pair]);
  }
  const one = (name: string) => byName.get(name)?.[0]?.value.trim();
  const requested = byName.get('request') ?? [];
  const writes = requested.some((pair) => pair.value.trim().toLowerCase() === 'transaction');
  for (const name of ['service', 'request', 'version', 'wmtver']) {
    if ((byName.get(name)?.length ?? 0) > 1) return refused(null, 'InvalidParameterValue', name, `The parameter ${name.toUpperCase()} is given more than once`, writes);
  }
  const request = one('request')?.toLowerCase();
  if (!request) return refused(null, 'MissingParameterValue', 'request', 'The parameter REQUEST is missing', false);
  const named = one('service')?.toUpperCase();
  const service = named === undefined || named === '' ? serviceOfRequest(request) : named === 'WMS' || named === 'WFS' ? named : null;
  if (!service) {
    return named
      ? refused(null, 'InvalidParameterValue', 'service', `The service ${named} is not served here; SERVICE is WMS or WFS`, writes)
      : refused(null, 'MissingParameterValue', 'service', 'The parameter SERVICE is missing', writes);
  }
  const version = one('version') ?? (service === 'WMS' ? one('wmtver') : undefined);
  if (version !== undefined && !SERVICE_VERSIONS[service].includes(version)) {
    return refused(service, 'InvalidParameterValue', 'version', `${service} version ${version} is not served; versions: ${SERVICE_VERSIONS[service].join(', ')}`, writes);
  }
  const allowed = allowedParams(service, request, version);
  if (!allowed) return refused(service, 'OperationNotSupported', 'request', `${service} request ${one('request')} is not served here`, writes);
  const params = pairs.filter((pair) => allowed.has(pair.name.toLowerCase()));
  const seen = new Set<string>();
  for (const pair of params) {
    const key = pair.name.toLowerCase();
    if (seen.has(key)) return refused(service, 'InvalidParameterValue', key, `The parameter ${key.toUpperCase()} is given more than once`, writes);
    seen.add(key);
  }
  if (!seen.has('service')) params.unshift({ name: 'SERVICE', value: service });
  return { kind: 'kvp', service, request, version, params };
}

function planXml(body: Buffer | undefined): OwsPlan {
  if (!body || body.length === 0) return refused(null, 'MissingParameterValue', undefined, 'A POSTed OGC request needs an XML document or a form as its body', false);
  let root: string;
  let service: string | undefined;
  let version: string | undefined;
  try {
    const document = readXmlRequest(body);
    root = document.root;
    service = document.attributes['service'];
    version = document.attributes['version']?.trim();
  } catch (error) {
    if (!(error instanceof XmlRequestError)) throw error;
    return refused(null, 'InvalidParameterValue', undefined, error.message, true);
  }
  const write = XML_WRITES.has(root);
  if (service?.trim().toUpperCase() !== 'WFS') {
    return refused(null, 'InvalidParameterValue', 'service', `XML requests are served for WFS only (service="WFS" on the root element); ${root} with service="${service ?? ''}" is not`, write);
  }
  if (!XML_READS.has(root) && !write) return refused('WFS', 'OperationNotSupported', 'request', `${root} is not served as an XML request`, false);
  return { kind: 'xml', service: 'WFS', request: root.toLowerCase(), version, body };
}

/**
 * A POSTed OGC request (form or XML) up to `maxBytes` (OWS_MAX_BODY_BYTES), checked before it is
 * read at all: reading it is linear, and this bounds the time one request takes.
 */
export function checkBodySize(message: OwsMessage, maxBytes: number): void {
  if (message.method === 'POST' && message.body && message.body.length > maxBytes) {
    throw validationFailed('body', `an OGC request POSTed as a form or an XML document is at most ${maxBytes} bytes (the limit OWS_MAX_BODY_BYTES)`);
  }
}

const DIMENSIONS = ['width', 'height'];

/** WIDTH and HEIGHT of a drawing request, before MapServer sees them: whole numbers up to `maxSize`. */
export function checkImageSize(plan: OwsPlan, maxSize: number): void {
  if (plan.kind !== 'kvp' || !DRAWING_REQUESTS.has(plan.request)) return;
  for (const pair of plan.params) {
    const key = pair.name.toLowerCase();
    if (!DIMENSIONS.includes(key)) continue;
    const value = pair.value.trim();
    // MapServer reads these with atoi(): "4097abc" would be 4097 to it. Only plain digits pass.
    if (!/^[0-9]{1,9}$/.test(value) || Number(value) < 1 || Number(value) > maxSize) {
      throw validationFailed(key.toUpperCase(), `must be a whole number of pixels from 1 to ${maxSize} (the limit OWS_MAX_IMAGE_SIZE)`);
    }
  }
}

/**
 * The query string MapServer gets for a key-value request: the route's map alias first, the kept
 * parameters, then for WMS drawing requests the dataset's SLD for the requested layers (the only
 * SLD_BODY that ever reaches MapServer). An XML request gets the alias only.
 */
export function mapServerQuery(plan: Extract<OwsPlan, { kind: 'kvp' | 'xml' }>, alias: string, styles: DatasetStyles): string {
  const head: KvpPair = { name: 'map', value: alias };
  if (plan.kind === 'xml') return encodeKvp([head]);
  return encodeKvp([head, ...withStyles(plan, styles)]);
}

function withStyles(plan: Extract<OwsPlan, { kind: 'kvp' }>, styles: DatasetStyles): KvpPair[] {
  if (!DRAWING_REQUESTS.has(plan.request)) return plan.params;
  const [layersKey, stylesKey] = plan.request === 'getlegendgraphic' ? ['layer', 'style'] : ['layers', 'styles'];
  const value = (key: string) => plan.params.find((pair) => pair.name.toLowerCase() === key)?.value ?? '';
  const layers = value(layersKey).split(',').map((name) => name.trim()).filter(Boolean);
  const sld = styles.sldFor(layers, value(stylesKey).split(','));
  if (!sld) return plan.params;
  return [
    ...plan.params.filter((pair) => pair.name.toLowerCase() !== stylesKey),
    { name: stylesKey.toUpperCase(), value: sld.styles },
    { name: 'SLD_BODY', value: sld.sldBody },
  ];
}
