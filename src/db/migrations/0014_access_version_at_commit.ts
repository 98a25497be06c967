import { sql, type Kysely } from 'kysely';
import { runStatements } from '../run-statements.js';

/**
 * The access version (0013) as a counter that moves at commit, together with the change it counts.
 *
 * 0013 advanced a sequence inside the writing transaction. A sequence is not transactional: a
 * reader could see the new version before the change committed, load the old grants under it, and
 * keep serving them from its cache until the next access change, a revocation missed for good. Now
 * a deferred constraint trigger adds one to a single-row counter just before the transaction
 * commits; the row's new value becomes visible exactly when the change does, so a reader that
 * reads the version first and the grants after can only cache grants at least as new as their
 * version.
 *
 * Writers queue on the counter's row only from their commit's last step to its end (the trigger is
 * deferred), so a long transaction does not hold it, and nothing that takes other locks runs after
 * it: two access changes cannot deadlock on it. One bump per transaction, however many rows it
 * touched (a transaction-local setting remembers it).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `
    create table access_version_counter (
      only_row boolean primary key default true check (only_row),
      version bigint not null
    );
    insert into access_version_counter (version) select case when is_called then last_value else 0 end from access_version;
    drop trigger users_access_version on users;
    drop trigger group_members_access_version on group_members;
    drop trigger groups_access_version on groups;
    drop trigger assignments_access_version on assignments;
    drop trigger role_permissions_access_version on role_permissions;
    drop function bump_access_version();
    drop sequence access_version;
  `);
  await sql.raw(`
    create function bump_access_version_at_commit() returns trigger language plpgsql as $$
    begin
      if current_setting('platform.access_version_bumped', true) is distinct from txid_current()::text then
        update access_version_counter set version = version + 1;
        perform set_config('platform.access_version_bumped', txid_current()::text, true);
      end if;
      return null;
    end
    $$`).execute(db);
  await runStatements(db, `
    create constraint trigger users_access_version after insert or update or delete on users
      deferrable initially deferred for each row execute function bump_access_version_at_commit();
    create constraint trigger group_members_access_version after insert or update or delete on group_members
      deferrable initially deferred for each row execute function bump_access_version_at_commit();
    create constraint trigger groups_access_version after update of parent_group_id or delete on groups
      deferrable initially deferred for each row execute function bump_access_version_at_commit();
    create constraint trigger assignments_access_version after insert or update or delete on assignments
      deferrable initially deferred for each row execute function bump_access_version_at_commit();
    create constraint trigger role_permissions_access_version after insert or update or delete on role_permissions
      deferrable initially deferred for each row execute function bump_access_version_at_commit();
  `);
}
