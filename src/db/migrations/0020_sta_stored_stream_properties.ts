import { sql, type Kysely } from 'kysely';
import type { Database } from '../client.js';
import { provisionStorage } from '../../sta/storage.js';

/**
 * A stream's derived properties stored in its row (see sta/derived.ts) in the SensorThings schemas
 * provisioned before: provisioning adds the columns to a schema that lacks them, fills them from
 * the Observations once, and creates the triggers that keep them. As in 0019, this is the RELEASE
 * saga's own idempotent step run once more on each such schema.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const { rows } = await sql<{ schema: string }>`select table_schema as schema from information_schema.tables
    where table_name = 'observations' and table_schema like 'ds\\_%' order by 1`.execute(db);
  for (const { schema } of rows) await provisionStorage(db as unknown as Database, schema);
}
