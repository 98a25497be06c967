import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import { loadCallerOfUser, type Caller, type CallerIdentity } from './caller.js';

/**
 * Turning a credential into an identity, for the HTTP token check (src/http/authentication.ts) and
 * the MQTT broker alike: an OpenID Connect token the verifier accepted, or a personal access token
 * the service issued itself (`pat_` + 43 base64url characters, 256 random bits, of which only the
 * SHA-256 digest is stored).
 */

/**
 * The identity a verified token claims, as far as the database can hold it. PostgreSQL text
 * cannot hold U+0000: a claim carrying it is treated as absent, so the caller is authenticated
 * without permissions rather than every request failing with a 500.
 */
export function identityOf(token: { subject: string; email: string | null; claims: Record<string, unknown> }): CallerIdentity {
  const usableSubject = storable(token.subject);
  return {
    // The subject scopes idempotency keys, so it must stay distinct per token subject: an unusable
    // one is replaced by its digest. The contract matches a caller by `sub` before `email`, so a
    // token whose `sub` is unusable names nobody reliably and its email is not used either.
    subject: usableSubject ?? `unusable-sub:${createHash('sha256').update(token.subject).digest('hex')}`,
    email: usableSubject === null ? null : storable(token.email),
    username: storable(claim(token.claims, 'preferred_username')),
    givenName: storable(claim(token.claims, 'given_name')),
    familyName: storable(claim(token.claims, 'family_name')),
  };
}

const storable = (text: string | null) => (text === null || text.includes('\u0000') ? null : text);

const claim = (claims: Record<string, unknown>, name: string) => (typeof claims[name] === 'string' ? (claims[name] as string) : null);

export const PERSONAL_ACCESS_TOKEN_PREFIX = 'pat_';
const PERSONAL_ACCESS_TOKEN_SHAPE = /^pat_[A-Za-z0-9_-]{43}$/;

/** Whether a presented secret is meant as a personal access token (judged on its prefix: a malformed one is then refused as such). */
export const isPersonalAccessToken = (secret: string) => secret.startsWith(PERSONAL_ACCESS_TOKEN_PREFIX);

/** A new secret: 32 random bytes, base64url without padding (43 characters). */
export const newPersonalAccessToken = () => `${PERSONAL_ACCESS_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;

/** What is stored of a secret and what it is looked up by: its SHA-256 digest, hex. */
export const personalAccessTokenDigest = (secret: string) => createHash('sha256').update(secret, 'utf8').digest('hex');

/** The digest to look a presented secret up by; null when it cannot be one of ours (no query for it). */
export const digestOfPresented = (secret: string): string | null =>
  (PERSONAL_ACCESS_TOKEN_SHAPE.test(secret) ? personalAccessTokenDigest(secret) : null);

/** A personal access token as authentication needs it. */
export interface PersonalAccessToken {
  id: string;
  userId: string;
  datasetIds: readonly string[] | null;
  expiresAtMs: number;
  lastUsedAtMs: number | null;
}

interface TokenRow { id: string; user_id: string; dataset_ids: string[] | string | null; expires_at: Date | string; last_used_at: Date | string | null }

/** The token stored under a digest, expired or not; null when none is. */
export async function findPersonalAccessToken(db: Database, digest: string): Promise<PersonalAccessToken | null> {
  const { rows: [row] } = await sql<TokenRow>`
    select id, user_id, dataset_ids, expires_at, last_used_at from personal_access_tokens where token_hash = ${digest}`.execute(db);
  if (!row) return null;
  return {
    id: row.id,
    userId: row.user_id,
    datasetIds: row.dataset_ids === null ? null : uuidArray(row.dataset_ids),
    expiresAtMs: new Date(row.expires_at).getTime(),
    lastUsedAtMs: row.last_used_at === null ? null : new Date(row.last_used_at).getTime(),
  };
}

/** A uuid[] as the driver hands it back: an array (pg), or its text form `{a,b}` (a driver that does not parse it). */
function uuidArray(value: string[] | string): string[] {
  if (Array.isArray(value)) return value;
  const inner = value.replace(/^\{|\}$/g, '');
  return inner === '' ? [] : inner.split(',');
}

/**
 * The caller a personal access token stands for: its user with what the user holds now (nothing
 * when the user is inactive), narrowed to the token's datasets when it names some. Its subject is
 * the token's own (`pat:{id}`), so that MQTT client ids and fair shares are per token.
 */
export async function loadTokenCaller(db: Database, token: PersonalAccessToken): Promise<Caller> {
  const caller = await loadCallerOfUser(db, { subject: `pat:${token.id}`, email: null, username: null, givenName: null, familyName: null }, token.userId);
  if (caller.profile) {
    caller.email = caller.profile.email;
    caller.givenName = caller.profile.firstName;
    caller.familyName = caller.profile.lastName;
  }
  if (token.datasetIds !== null) caller.datasetIds = Object.freeze([...token.datasetIds]);
  return caller;
}

/** How seldom a token's `lastUsedAt` is written: a request is not a write. */
export const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * Writes `lastUsedAt` at most once a minute per token: this process remembers when it last wrote
 * (or read) it, and the UPDATE itself only moves a value older than a minute, so that several
 * processes together write no more often either. The write is not awaited by the request.
 */
export class LastUseRecorder {
  private readonly known = new Map<string, number>();

  constructor(private readonly db: Database, private readonly onError: (error: Error) => void = () => {}, private readonly maxEntries = 10_000) {}

  used(token: PersonalAccessToken, nowMs = Date.now()): void {
    const last = this.known.get(token.id) ?? token.lastUsedAtMs ?? -Infinity;
    if (nowMs - last < LAST_USED_RESOLUTION_MS) return;
    if (this.known.size >= this.maxEntries) this.known.clear();
    this.known.set(token.id, nowMs);
    void sql`update personal_access_tokens set last_used_at = now()
              where id = ${token.id} and (last_used_at is null or last_used_at < now() - interval '1 minute')`
      .execute(this.db).catch((error: Error) => this.onError(error));
  }
}
