import type { Kysely } from 'kysely';
import { runStatements } from '../run-statements.js';

/**
 * Upstream mode: a SensorThings named API may name an existing SensorThings server (FROST-Server)
 * that answers it instead of ours. The route table carries it to every gateway process.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `
    alter table dataset_named_apis add column upstream_url text;
    create or replace view gateway_routes as
      select d.id as dataset_id, a.slug, a.standard, d.open_data_access, d.datapool_id,
             'ds_' || replace(d.id::text, '-', '') as storage_schema, a.upstream_url
        from datasets d
        join dataset_named_apis a on a.dataset_id = d.id
       where d.status = 'AVAILABLE' and d.pending_saga_type is distinct from 'RELEASE';
  `);
}
