import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { SignJWT } from 'jose';
import { getRealmKey } from './realm-keys.js';
import { subjectForEmail, subjectForServiceAccount } from './subject.js';

export const SUPPORTED_GRANT_TYPES = ['password', 'client_credentials'] as const;

/** An OAuth 2.0 error response (RFC 6749 §5.2), shaped as Keycloak sends it. */
export class OAuthError extends Error {
  constructor(
    readonly statusCode: 400 | 401,
    readonly error: 'invalid_request' | 'invalid_grant' | 'unauthorized_client' | 'unsupported_grant_type',
    readonly description: string,
  ) {
    super(description);
  }
}

export interface TokenRequest {
  form: URLSearchParams;
  /** Client credentials from an `Authorization: Basic` header, which Keycloak also accepts. */
  basicAuth?: { clientId: string; clientSecret: string };
}

export interface IssuerSettings {
  issuer: string;
  realm: string;
  password: string;
  tokenTtlSeconds: number;
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_expires_in: 0;
  scope: string;
}

const SCOPE = 'openid email profile';
// Deliberately loose: any address-shaped username is a valid development user.
const EMAIL = /^[^\s@]+@[^\s@]+$/;
const CONTROL_CHARACTER = /\p{Cc}/u;

/** Runs the token endpoint for one request; throws OAuthError on anything it refuses. */
export async function issueToken(request: TokenRequest, settings: IssuerSettings): Promise<TokenResponse> {
  const grantType = requiredParam(request.form, 'grant_type');
  if (grantType === 'password') return passwordGrant(request, settings);
  if (grantType === 'client_credentials') return clientCredentialsGrant(request, settings);
  throw new OAuthError(400, 'unsupported_grant_type', 'Unsupported grant_type');
}

async function passwordGrant({ form, basicAuth }: TokenRequest, settings: IssuerSettings) {
  const clientId = requiredParam(form, 'client_id', basicAuth?.clientId);
  const username = requiredParam(form, 'username');
  const password = requiredParam(form, 'password');
  // A control character (NUL above all, which PostgreSQL text cannot hold) has no place in an
  // email address, and would reach the service inside the token's email and username claims.
  if (CONTROL_CHARACTER.test(username)) throw new OAuthError(400, 'invalid_request', 'username must not contain control characters');
  if (!EMAIL.test(username)) throw new OAuthError(400, 'invalid_request', 'username must be an email address');
  if (!sameSecret(password, settings.password)) {
    throw new OAuthError(401, 'invalid_grant', 'Invalid user credentials');
  }
  const email = username.toLowerCase();
  return signAccessToken(settings, clientId, {
    sub: subjectForEmail(email),
    email,
    email_verified: true,
    preferred_username: email,
    ...namesFromEmail(email),
  });
}

async function clientCredentialsGrant({ form, basicAuth }: TokenRequest, settings: IssuerSettings) {
  const clientId = requiredParam(form, 'client_id', basicAuth?.clientId);
  const clientSecret = requiredParam(form, 'client_secret', basicAuth?.clientSecret);
  if (!sameSecret(clientSecret, settings.password)) {
    throw new OAuthError(401, 'unauthorized_client', 'Invalid client or Invalid client credentials');
  }
  return signAccessToken(settings, clientId, {
    sub: subjectForServiceAccount(clientId),
    preferred_username: `service-account-${clientId}`,
  });
}

async function signAccessToken(
  settings: IssuerSettings,
  clientId: string,
  identityClaims: Record<string, unknown> & { sub: string },
): Promise<TokenResponse> {
  const { kid, privateKey } = await getRealmKey(settings.realm);
  const issuedAt = Math.floor(Date.now() / 1000);
  const { sub, ...otherClaims } = identityClaims;
  const accessToken = await new SignJWT({
    ...otherClaims,
    // Keycloak puts `account` in every audience; verifiers that check aud expect it.
    aud: clientId === 'account' ? ['account'] : [clientId, 'account'],
    azp: clientId,
    typ: 'Bearer',
    scope: SCOPE,
  })
    .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
    .setIssuer(settings.issuer)
    .setSubject(sub)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + settings.tokenTtlSeconds)
    .setJti(randomUUID())
    .sign(privateKey);
  return {
    access_token: accessToken,
    token_type: 'Bearer',
    expires_in: settings.tokenTtlSeconds,
    refresh_expires_in: 0,
    scope: SCOPE,
  };
}

/** `jane.doe@x` -> Jane / Doe; a local part without a dot gets the family name "User". */
export function namesFromEmail(email: string): { given_name: string; family_name: string } {
  const localPart = email.slice(0, email.lastIndexOf('@')).split('+')[0]!;
  const [given = '', ...family] = localPart.split('.').filter(Boolean).map(capitalise);
  return { given_name: given || 'User', family_name: family.join(' ') || 'User' };
}

function capitalise(word: string): string {
  return word
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('-');
}

function singleParam(form: URLSearchParams, name: string): string | undefined {
  const values = form.getAll(name);
  // Keycloak refuses repeated parameters rather than guessing which one was meant.
  if (values.length > 1) throw new OAuthError(400, 'invalid_request', `duplicated parameter: ${name}`);
  return values[0] || undefined;
}

function requiredParam(form: URLSearchParams, name: string, fallback?: string): string {
  const value = singleParam(form, name) ?? (fallback || undefined);
  if (value === undefined) throw new OAuthError(400, 'invalid_request', `Missing form parameter: ${name}`);
  return value;
}

// Hashing first gives equal-length buffers, so the comparison time reveals nothing.
function sameSecret(given: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(expected));
}
