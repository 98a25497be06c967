import { nameBasedUuid } from '../util/name-based-uuid.js';

// Fixed namespace for this identity provider's name-based UUIDs. Changing it changes
// every subject, which would orphan users already linked to a `sub`.
const SUBJECT_NAMESPACE = 'd199c9b9-1536-4969-a74e-b9f212dcaab7';

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
