import { createHash } from 'node:crypto';

/**
 * A name-based UUID (version 5 layout): the same name always yields the same id, so seeded
 * permissions and roles carry the same ids on every installation and clients may hard-code them.
 */
export function stableId(namespace: string, name: string): string {
  const bytes = createHash('sha1').update(`${namespace}:${name}`).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
