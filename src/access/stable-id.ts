import { nameBasedUuid } from '../util/name-based-uuid.js';

// Fixed namespace of the seeded objects' ids; changing it would change every seeded id.
const SEED_NAMESPACE = '6f0f3f5e-2a8b-4c57-9a61-0b9f3c1d2e47';

/**
 * The id of a seeded object (permission, role, group, bootstrap user): the same on every
 * installation, so that clients may hard-code them.
 */
export const stableId = (kind: string, name: string) => nameBasedUuid(SEED_NAMESPACE, `${kind}:${name}`);
