import { sql, type Kysely } from 'kysely';
import type { Database } from '../client.js';
import { provisionStorage } from '../../sta/storage.js';

/**
 * The MultiDatastream extension in the SensorThings schemas provisioned before it: each dataset's
 * schema (`ds_…`) that holds SensorThings tables gets the MultiDatastream tables, the
 * Observations' `multi_datastream_id` and its indexes. Provisioning is idempotent (every statement
 * `if not exists`, the Observations' upgrade included), so this is the RELEASE saga's own step
 * run once more on each such schema; a dataset released later is provisioned whole by that step.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const { rows } = await sql<{ schema: string }>`select table_schema as schema from information_schema.tables
    where table_name = 'observations' and table_schema like 'ds\\_%' order by 1`.execute(db);
  for (const { schema } of rows) await provisionStorage(db as unknown as Database, schema);
}
