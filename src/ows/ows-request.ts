import type { DatasetStyles } from './sld-styles.js';

/**
 * What an OGC request on an OWS named API is, read off its key-value pairs (GET, or a POSTed
 * form) or its XML body: the gateway authorizes by the operation, not by the HTTP method.
 */
export type OwsOperationKind = 'read' | 'write';

export interface OwsMessage {
  method: string;
  /** Raw query string, without `?`. */
  query: string;
  body: Buffer | undefined;
  contentType: string | undefined;
}

/** A WFS-T Transaction writes; every other OGC operation (capabilities, features, maps, legends) reads. */
export function owsOperationOf(message: OwsMessage): OwsOperationKind {
  return /^transaction$/i.test(requestNameOf(message)) ? 'write' : 'read';
}

/** The operation's name: the REQUEST parameter, or an XML body's root element. */
export function requestNameOf(message: OwsMessage): string {
  if (message.method === 'POST' && message.body && message.body.length > 0) {
    if (isForm(message.contentType)) return paramOf(new URLSearchParams(message.body.toString('utf8')), 'request') ?? '';
    return rootElementOf(message.body) ?? '';
  }
  return paramOf(new URLSearchParams(message.query), 'request') ?? '';
}

export const isForm = (contentType: string | undefined) => /^application\/x-www-form-urlencoded\b/i.test(contentType ?? '');

/** The local name of an XML document's root element, skipping the prolog, comments and a DOCTYPE. */
export function rootElementOf(body: Buffer): string | undefined {
  const head = body.subarray(0, 64 * 1024).toString('utf8');
  const withoutProlog = head.replace(/^\uFEFF/, '').replace(/<\?[\s\S]*?\?>|<!--[\s\S]*?-->|<!DOCTYPE[^>]*>/g, '');
  return /^\s*<(?:[A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)[\s/>]/.exec(withoutProlog)?.[1];
}

function paramOf(params: URLSearchParams, name: string): string | undefined {
  for (const [key, value] of params) if (key.toLowerCase() === name) return value;
  return undefined;
}

/**
 * Parameters a caller may not send to MapServer: the map is the route's own (another alias would
 * be another dataset), and styles come from the dataset (an `SLD` URL would make MapServer fetch
 * any address). Runtime mapfile changes (`map.layer[…]=…`) are refused with them.
 */
const isReserved = (key: string) => {
  const lower = key.toLowerCase();
  return lower === 'map' || lower.startsWith('map.') || lower.startsWith('map_') || lower === 'sld' || lower === 'sld_body';
};

/**
 * The query string MapServer gets: the route's map alias first, the caller's parameters without
 * the reserved ones, and for WMS drawing requests the dataset's SLD for the requested layers.
 */
export function mapServerQuery(params: URLSearchParams, alias: string, styles: DatasetStyles): string {
  const kept = new URLSearchParams();
  kept.append('map', alias);
  for (const [key, value] of params) if (!isReserved(key)) kept.append(key, value);
  applyStyles(kept, styles);
  return kept.toString();
}

function applyStyles(params: URLSearchParams, styles: DatasetStyles): void {
  const request = (paramOf(params, 'request') ?? '').toLowerCase();
  const [layersKey, stylesKey] = request === 'getlegendgraphic' ? ['layer', 'style'] : ['layers', 'styles'];
  if (!['getmap', 'getfeatureinfo', 'getlegendgraphic'].includes(request)) return;
  const layers = (paramOf(params, layersKey) ?? '').split(',').map((name) => name.trim()).filter(Boolean);
  const asked = (paramOf(params, stylesKey) ?? '').split(',');
  const sld = styles.sldFor(layers, asked);
  if (!sld) return;
  for (const key of [...params.keys()]) if (key.toLowerCase() === stylesKey) params.delete(key);
  params.set(stylesKey.toUpperCase(), sld.styles);
  params.set('SLD_BODY', sld.sldBody);
}

/** The caller's parameters: the query string, or a POSTed form. */
export function paramsOf(message: OwsMessage): URLSearchParams {
  if (message.method === 'POST' && isForm(message.contentType) && message.body) return new URLSearchParams(message.body.toString('utf8'));
  return new URLSearchParams(message.query);
}
