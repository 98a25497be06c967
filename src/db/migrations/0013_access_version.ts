import { sql, type Kysely } from 'kysely';
import { runStatements } from '../run-statements.js';

/**
 * A version of "who holds what": advanced by every statement that can change a caller's
 * permissions (users, memberships, the group tree, assignments, role permissions). The data API
 * caches callers and reads this one sequence per request instead of their grants: a revoked
 * permission still bites on the very next request. A sequence, so that concurrent writers never
 * queue on it (a rolled-back change only costs one reload).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql.raw(`
    create function bump_access_version() returns trigger language plpgsql as $$
    begin
      perform nextval('access_version');
      return null;
    end
    $$`).execute(db);
  await runStatements(db, `
    create sequence access_version;
    create trigger users_access_version after insert or update or delete on users
      for each statement execute function bump_access_version();
    create trigger group_members_access_version after insert or update or delete on group_members
      for each statement execute function bump_access_version();
    create trigger groups_access_version after update of parent_group_id or delete on groups
      for each statement execute function bump_access_version();
    create trigger assignments_access_version after insert or update or delete on assignments
      for each statement execute function bump_access_version();
    create trigger role_permissions_access_version after insert or update or delete on role_permissions
      for each statement execute function bump_access_version();
  `);
}
