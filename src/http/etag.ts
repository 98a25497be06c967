import { createHash } from 'node:crypto';
import { AppError } from '../errors.js';

/** A strong ETag over the JSON representation: any visible change of the resource changes it. */
export function etagOf(representation: unknown): string {
  return `"${createHash('sha1').update(JSON.stringify(representation)).digest('base64url')}"`;
}

/**
 * Compares an If-Match header with the resource as it is now. No header means last write wins;
 * `*` matches any existing resource.
 */
export function assertIfMatch(ifMatch: string | undefined, current: unknown): void {
  if (ifMatch === undefined) return;
  // Strong comparison (RFC 9110): a weak tag never matches an If-Match.
  const candidates = ifMatch.split(',').map((tag) => tag.trim());
  if (candidates.includes('*') || candidates.includes(etagOf(current))) return;
  throw new AppError('PRECONDITION_FAILED', 'The resource has changed since it was read (If-Match does not match its ETag)');
}
