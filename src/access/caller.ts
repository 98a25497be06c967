import { sql, type RawBuilder } from 'kysely';
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
  active: boolean;
}

/** The authenticated caller of one request: who the token names and what the service lets them do. */
export interface Caller {
  subject: string;
  email: string | null;
  username: string | null;
  /** Names the token carries (given_name, family_name): what /users/me shows for an unknown user. */
  givenName: string | null;
  familyName: string | null;
  /** The service's own user the token names; null when it names none (no permission). */
  profile: CallerProfile | null;
  grants: Grant[];
  /**
   * The datasets a narrowed credential (a personal access token with `datasetIds`) may reach on
   * the data API; absent: no narrowing. Outside them the caller holds nothing.
   */
  datasetIds?: readonly string[];
}

/**
 * The groups whose assignments the given members hold: their own groups and every ancestor of
 * those (a subgroup's members hold its parents' assignments). `members` is SQL selecting
 * (user_id, group_id) membership rows. Recursive with `union`, so even a cycle would end.
 */
export const heldGroupsCte = (members: RawBuilder<unknown>) => sql`
  held(user_id, group_id) as (
    ${members}
    union
    select h.user_id, g.parent_group_id from held h join groups g on g.id = h.group_id where g.parent_group_id is not null
  )`;

interface CallerRow {
  id: string; email: string; first_name: string; last_name: string; title: Title; active: boolean;
  scope_type: ScopeType | null; scope_id: string | null; permission: string | null;
}

/** Who a caller is before their user is looked up: what the credential names. */
export type CallerIdentity = Pick<Caller, 'subject' | 'email' | 'username' | 'givenName' | 'familyName'>;

/**
 * Loads the caller's user and every permission they hold, in one query. The user is the one whose
 * externalId is the token's `sub`, else the one without an externalId whose email is the token's
 * (a user bound to a subject is never taken over by another subject with the same email). An
 * inactive user holds nothing. `allowedScopeIds` (X-Allowed-Scope-Ids) drops the assignments
 * whose scope is not listed; null means no restriction.
 */
export async function loadCaller(db: Database, token: CallerIdentity, allowedScopeIds: ReadonlySet<string> | null): Promise<Caller> {
  const email = token.email?.toLowerCase() ?? null;
  return loadWhere(db, token, sql`u.external_id = ${token.subject} or (u.external_id is null and lower(u.email) = ${email})`, allowedScopeIds);
}

/**
 * The caller of a credential the service issued itself to one of its users (a personal access
 * token): that user, with what they hold now. `identity` names the credential (its subject).
 */
export async function loadCallerOfUser(db: Database, identity: CallerIdentity, userId: string): Promise<Caller> {
  return loadWhere(db, identity, sql`u.id = ${userId}`, null);
}

async function loadWhere(db: Database, identity: CallerIdentity, userMatches: RawBuilder<unknown>, allowedScopeIds: ReadonlySet<string> | null): Promise<Caller> {
  const caller: Caller = { ...identity, profile: null, grants: [] };
  const { rows } = await sql<CallerRow>`
    with recursive me as (
      select u.id, u.email, u.first_name, u.last_name, u.title, u.active from users u
       where ${userMatches}
       order by (u.external_id is not null) desc
       limit 1
    ), ${heldGroupsCte(sql`select gm.user_id, gm.group_id from group_members gm join me on me.id = gm.user_id where me.active`)}
    select me.*, a.scope_type, a.scope_id, p.name as permission
      from me
      left join held h on h.user_id = me.id
      left join assignments a on a.group_id = h.group_id
      left join role_permissions rp on rp.role_id = a.role_id
      left join permissions p on p.id = rp.permission_id`.execute(db);
  const first = rows[0];
  if (!first) return caller;
  caller.profile = { userId: first.id, email: first.email, firstName: first.first_name, lastName: first.last_name, title: first.title, active: first.active };
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
