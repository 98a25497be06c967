import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import type { ScopeType, Title } from '../db/schema.js';
import type { PermissionName } from './catalogue.js';

/** One permission held on one scope, through some assignment of some group of the caller. */
export interface Grant { scopeType: ScopeType; scopeId: string; permission: PermissionName }

export interface CallerProfile {
  userId: string;
  email: string;
  firstName: string;
  lastName: string;
  title: Title;
}

/** The authenticated caller of one request: who the token names and what the service lets them do. */
export interface Caller {
  subject: string;
  email: string | null;
  username: string | null;
  /** Names the token carries (given_name, family_name): what /users/me shows for an unknown user. */
  givenName: string | null;
  familyName: string | null;
  /** The service's own user with the token's email; null when the email is unknown (no permission). */
  profile: CallerProfile | null;
  grants: Grant[];
}

/**
 * Loads the caller's user and every permission they hold, in one query: user, memberships,
 * assignments and role permissions. `allowedScopeIds` (X-Allowed-Scope-Ids) drops the
 * assignments whose scope is not listed; null means no restriction.
 */
export async function loadCaller(
  db: Database,
  token: { subject: string; email: string | null; username: string | null; givenName: string | null; familyName: string | null },
  allowedScopeIds: ReadonlySet<string> | null,
): Promise<Caller> {
  const caller: Caller = { ...token, profile: null, grants: [] };
  if (!token.email) return caller;
  const rows = await db
    .selectFrom('users as u')
    .leftJoin('group_members as gm', 'gm.user_id', 'u.id')
    .leftJoin('assignments as a', 'a.group_id', 'gm.group_id')
    .leftJoin('role_permissions as rp', 'rp.role_id', 'a.role_id')
    .leftJoin('permissions as p', 'p.id', 'rp.permission_id')
    .select(['u.id', 'u.email', 'u.first_name', 'u.last_name', 'u.title', 'a.scope_type', 'a.scope_id', 'p.name as permission'])
    .where(sql`lower(u.email)`, '=', token.email.toLowerCase())
    .execute();
  const first = rows[0];
  if (!first) return caller;
  caller.profile = { userId: first.id, email: first.email, firstName: first.first_name, lastName: first.last_name, title: first.title };
  const seen = new Set<string>();
  for (const row of rows) {
    if (!row.scope_type || !row.scope_id || !row.permission) continue;
    if (allowedScopeIds && !allowedScopeIds.has(row.scope_id)) continue;
    const key = `${row.scope_type}|${row.scope_id}|${row.permission}`;
    if (seen.has(key)) continue;
    seen.add(key);
    caller.grants.push({ scopeType: row.scope_type, scopeId: row.scope_id, permission: row.permission as PermissionName });
  }
  return caller;
}
