import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import { UUID_PATTERN } from '../http/page.js';
import { withoutTrailingSlashes } from '../sta/index.js';

const PAYLOAD_PATH = new RegExp(`^/v1/datasets/([^/?#]+)/([^/?#]+)(/[^?#]*)?$`);
const UUID = new RegExp(`^${UUID_PATTERN}$`, 'i');

/** A payload request's address: the route it names and the rest of its path and query. */
export interface PayloadAddress {
  datasetId: string;
  slug: string;
  /** Below the base, percent-decoded, without a `/v1.1` alias: `''`, `/Things(1)`, `/$batch`. */
  rest: string;
  /**
   * The path below the base exactly as the client sent it (alias and trailing slashes kept):
   * upstream mode normalises it itself (`upstream-path.ts`), since dot segments may come before an alias.
   */
  rawPath: string;
  /** The raw query string (without `?`). */
  query: string;
}

/** Whether a URL lies on a payload route (`/v1/datasets/{id}/{slug}[/…]`), the only anonymous-capable paths. */
export const isPayloadPath = (url: string) => PAYLOAD_PATH.test(url.split('?')[0] ?? '');

/** Splits a payload URL; null when the dataset id is not a UUID (no such route can exist). */
export function payloadAddressOf(request: FastifyRequest): PayloadAddress | null {
  const [rawPath = '', ...queryParts] = request.url.split('?');
  const match = PAYLOAD_PATH.exec(rawPath);
  if (!match) return null;
  const [, rawId = '', rawSlug = '', rawRest = ''] = match;
  const datasetId = decode(rawId).toLowerCase();
  if (!UUID.test(datasetId)) return null;
  // `{base}/v1.1/…` is an alias of `{base}/…`, for clients that append the version.
  const withoutAlias = /^\/v1\.1(\/|$)/.test(rawRest) ? rawRest.slice('/v1.1'.length) : rawRest;
  const trimmed = withoutTrailingSlashes(withoutAlias);
  return { datasetId, slug: decode(rawSlug), rest: decode(trimmed), rawPath: rawRest, query: queryParts.join('?') };
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new AppError('MALFORMED_REQUEST', 'The request path has malformed percent-encoding');
  }
}
