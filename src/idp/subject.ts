import { createHash } from 'node:crypto';

// Fixed namespace for this identity provider's name-based UUIDs. Changing it changes
// every subject, which would orphan users already linked to a `sub`.
const SUBJECT_NAMESPACE = 'd199c9b9-1536-4969-a74e-b9f212dcaab7';

/** RFC 9562 version 5 UUID (SHA-1, name-based) of `name` in `namespace`. */
export function nameBasedUuid(namespace: string, name: string): string {
  const namespaceBytes = Buffer.from(namespace.replaceAll('-', ''), 'hex');
  const hash = createHash('sha1').update(namespaceBytes).update(name, 'utf8').digest();
  const bytes = hash.subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The `sub` of a user: stable across restarts and case-insensitive in the email. */
export function subjectForEmail(email: string): string {
  return nameBasedUuid(SUBJECT_NAMESPACE, email.toLowerCase());
}

/**
 * The `sub` of a client's service account. The name has no `@`, so it can never
 * collide with a user's subject.
 */
export function subjectForServiceAccount(clientId: string): string {
  return nameBasedUuid(SUBJECT_NAMESPACE, `service-account-${clientId}`);
}
