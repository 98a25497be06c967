import { sql, type Kysely } from 'kysely';
import { runStatements } from '../run-statements.js';

/**
 * The gateway's route version (0011) as a counter that moves at commit, as the access version did
 * in 0014.
 *
 * 0011 took `nextval` of a sequence in a row trigger, inside the writing transaction. A sequence is
 * not transactional: a gateway that reloaded between the RELEASE saga's finishing UPDATE and its
 * COMMIT read the new version, then the view as it was before the change, and stored the new
 * version with the old rows. Its poll then saw nothing to do, and only the commit's own NOTIFY
 * could repair it; with that notification lost, the released dataset answered 404 until some other
 * route changed. Now a deferred constraint trigger adds one to a single-row counter just before
 * the transaction commits (once per transaction, however many rows changed) and sends the NOTIFY
 * with the new value: the version becomes visible exactly when the change does, so a table that
 * reads the version first and the rows after never holds a version newer than its rows.
 *
 * `announce_gateway_route_change()` bumps the same counter at once, for the writes that change what
 * a route serves without touching the tables the view reads (a feature collection created or
 * dropped). It is the last statement of those transactions, so the counter's row is held only
 * until their commit.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `
    create table gateway_route_version_counter (
      only_row boolean primary key default true check (only_row),
      version bigint not null
    );
    insert into gateway_route_version_counter (version)
      select case when is_called then last_value else 0 end from gateway_route_version;
    drop trigger datasets_gateway_routes on datasets;
    drop trigger datasets_deleted_gateway_routes on datasets;
    drop trigger named_apis_gateway_routes on dataset_named_apis;
    drop function bump_gateway_route_version();
    drop sequence gateway_route_version;
  `);
  await sql.raw(`
    create function announce_gateway_route_change() returns void language plpgsql as $$
    declare
      moved bigint;
    begin
      if current_setting('platform.gateway_route_version_bumped', true) is distinct from txid_current()::text then
        update gateway_route_version_counter set version = version + 1 returning version into moved;
        -- Delivered at commit, with the version that becomes visible then.
        perform pg_notify('gateway_routes', moved::text);
        perform set_config('platform.gateway_route_version_bumped', txid_current()::text, true);
      end if;
    end
    $$`).execute(db);
  await sql.raw(`
    create function bump_gateway_route_version_at_commit() returns trigger language plpgsql as $$
    begin
      perform announce_gateway_route_change();
      return null;
    end
    $$`).execute(db);
  await runStatements(db, `
    create constraint trigger datasets_gateway_routes
      after update of status, pending_saga_type, open_data_access, datapool_id on datasets
      deferrable initially deferred
      for each row
      when (old.status is distinct from new.status or old.pending_saga_type is distinct from new.pending_saga_type
            or old.open_data_access is distinct from new.open_data_access or old.datapool_id is distinct from new.datapool_id)
      execute function bump_gateway_route_version_at_commit();
    create constraint trigger datasets_deleted_gateway_routes
      after delete on datasets
      deferrable initially deferred
      for each row execute function bump_gateway_route_version_at_commit();
    create constraint trigger named_apis_gateway_routes
      after insert or update or delete on dataset_named_apis
      deferrable initially deferred
      for each row execute function bump_gateway_route_version_at_commit();
  `);
}
