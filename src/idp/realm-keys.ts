import { calculateJwkThumbprint, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';

export interface RealmKey {
  kid: string;
  privateKey: CryptoKey;
  /** Public half as published in the realm's JWKS (carries kid, alg and use). */
  publicJwk: JWK;
}

// Keyed by realm name. The promise is stored, not the key, so that concurrent first
// requests for a realm share one generation instead of racing to publish two keys.
// Keys live only as long as the process: a restart rotates them, and verifiers
// refetch the JWKS on an unknown kid.
const realmKeys = new Map<string, Promise<RealmKey>>();

// Any realm name works, but each new one costs an RSA key generation and keeps a key: a bound
// stops a client that invents realm names from exhausting CPU and memory.
const MAX_REALMS = 64;

export const knownOrRoomFor = (realm: string) => realmKeys.has(realm) || realmKeys.size < MAX_REALMS;

/** The realm's signing key, generated on first use. */
export function getRealmKey(realm: string): Promise<RealmKey> {
  let key = realmKeys.get(realm);
  if (!key) {
    key = generateRealmKey();
    // A failed generation must not poison the realm for the rest of the process.
    key.catch(() => realmKeys.delete(realm));
    realmKeys.set(realm, key);
  }
  return key;
}

async function generateRealmKey(): Promise<RealmKey> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = await exportJWK(publicKey);
  // RFC 7638 thumbprint: derived from the key itself, so the kid needs no counter.
  const kid = await calculateJwkThumbprint(jwk);
  return { kid, privateKey, publicJwk: { ...jwk, kid, alg: 'RS256', use: 'sig' } };
}
