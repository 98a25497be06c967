import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Sealing of secrets kept in the database (data source passwords, secret headers): AES-256-GCM
 * with a random 96-bit IV per value, so that a copy of the database reveals nothing and a changed
 * byte is refused (the GCM tag) instead of opening to garbage. A sealed value reads
 * `enc:v1:<key id>:<iv>:<tag>:<ciphertext>`, each part base64url; the key id (a short hash of the
 * key) says which key of the ring opens it, so that a rotation can tell old values from new.
 */

export const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const PREFIX = 'enc:v1:';
const SEALED = /^enc:v1:([A-Za-z0-9_-]+):([A-Za-z0-9_-]{16}):([A-Za-z0-9_-]{22}):([A-Za-z0-9_-]*)$/;

/** A value sealed with no key of the ring, or altered since it was sealed. The message never holds the value. */
export class SecretUnreadableError extends Error {}

export interface SecretKey { id: string; bytes: Buffer }

/** The id a sealed value names its key by: 8 base64url characters of a hash, which reveals nothing of the key. */
export function keyId(bytes: Buffer): string {
  return createHash('sha256').update('secrets-key-id\0').update(bytes).digest().subarray(0, 6).toString('base64url');
}

export function secretKey(bytes: Buffer): SecretKey {
  if (bytes.length !== KEY_BYTES) throw new Error(`a secrets key must be ${KEY_BYTES} bytes (got ${bytes.length})`);
  return { id: keyId(bytes), bytes };
}

export const isSealed = (value: unknown): value is string => typeof value === 'string' && SEALED.test(value);

/** The id of the key a sealed value names (null: not a sealed value). */
export const sealedKeyId = (value: string): string | null => SEALED.exec(value)?.[1] ?? null;

/**
 * The current key seals; every key of the ring (current, previous, a generated one no longer
 * current) opens. The header `enc:v1:<key id>` is authenticated with the value, so that neither
 * can be swapped on its own.
 */
export class SecretKeyRing {
  readonly current: SecretKey;
  private readonly byId: Map<string, SecretKey>;

  constructor(current: SecretKey, others: readonly SecretKey[] = []) {
    this.current = current;
    this.byId = new Map([current, ...others].map((key) => [key.id, key]));
  }

  seal(clear: string): string {
    const iv = randomBytes(IV_BYTES);
    const header = `${PREFIX}${this.current.id}`;
    const cipher = createCipheriv('aes-256-gcm', this.current.bytes, iv);
    cipher.setAAD(Buffer.from(header));
    const ciphertext = Buffer.concat([cipher.update(clear, 'utf8'), cipher.final()]);
    return `${header}:${iv.toString('base64url')}:${cipher.getAuthTag().toString('base64url')}:${ciphertext.toString('base64url')}`;
  }

  /** The clear value; SecretUnreadableError when no key of the ring opens it or it was altered. */
  open(sealed: string): string {
    const parts = SEALED.exec(sealed);
    if (!parts) throw new SecretUnreadableError('not a sealed value (expected enc:v1:<key id>:<iv>:<tag>:<ciphertext>)');
    const [, id, iv, tag, ciphertext] = parts;
    const key = this.byId.get(id!);
    if (!key) {
      throw new SecretUnreadableError(`sealed with the key ${id}, which is neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS (keys here: ${[...this.byId.keys()].join(', ')})`);
    }
    const decipher = createDecipheriv('aes-256-gcm', key.bytes, Buffer.from(iv!, 'base64url'), { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(`${PREFIX}${id}`));
    decipher.setAuthTag(Buffer.from(tag!, 'base64url'));
    try {
      return Buffer.concat([decipher.update(Buffer.from(ciphertext!, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretUnreadableError(`sealed with the key ${id} but altered since (its authentication tag does not match)`);
    }
  }

  /** Sealed with the current key: nothing to do on a re-seal. */
  isCurrent(value: string): boolean {
    return sealedKeyId(value) === this.current.id;
  }
}
