import { sql, type Kysely } from 'kysely';
import { runStatements } from '../run-statements.js';

/**
 * The data API gateway's route table. A payload route exists while its dataset is AVAILABLE and
 * its RELEASE saga has finished (the saga provisions what the route serves), so the table is a
 * view over the datasets and their named APIs rather than a copy that could drift from them.
 *
 * Every gateway process caches the view. A trigger on what the view reads advances a version
 * sequence and sends `pg_notify('gateway_routes', version)`: a process that LISTENs reloads at
 * once, and every process also polls the sequence's `last_value` in case a notification is lost
 * (a dropped listening connection, PGlite). A sequence rather than a counter row, so that
 * concurrent dataset writes never queue on one row lock (a rolled-back write only causes one
 * needless reload). Only changes that can alter a route fire it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `
    create view gateway_routes as
      select d.id as dataset_id, a.slug, a.standard, d.open_data_access, d.datapool_id,
             'ds_' || replace(d.id::text, '-', '') as storage_schema
        from datasets d
        join dataset_named_apis a on a.dataset_id = d.id
       where d.status = 'AVAILABLE' and d.pending_saga_type is distinct from 'RELEASE';

    create sequence gateway_route_version;
  `);
  await sql.raw(`
    create function bump_gateway_route_version() returns trigger language plpgsql as $$
    begin
      perform pg_notify('gateway_routes', nextval('gateway_route_version')::text);
      return null;
    end
    $$`).execute(db);
  await runStatements(db, `
    create trigger datasets_gateway_routes
      after update of status, pending_saga_type, open_data_access, datapool_id on datasets
      for each row
      when (old.status is distinct from new.status or old.pending_saga_type is distinct from new.pending_saga_type
            or old.open_data_access is distinct from new.open_data_access or old.datapool_id is distinct from new.datapool_id)
      execute function bump_gateway_route_version();
    create trigger datasets_deleted_gateway_routes
      after delete on datasets
      for each statement execute function bump_gateway_route_version();
    create trigger named_apis_gateway_routes
      after insert or update or delete on dataset_named_apis
      for each statement execute function bump_gateway_route_version();
  `);
}
