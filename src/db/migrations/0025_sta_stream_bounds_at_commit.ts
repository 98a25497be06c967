import { sql, type Kysely } from 'kysely';
import type { Database } from '../client.js';
import { provisionStorage } from '../../sta/storage.js';

/**
 * A stream's bounds (phenomenonTime, resultTime) widened by an insert as its transaction commits,
 * not at its statement (see createTriggers in sta/derived.ts): the SensorThings schemas provisioned
 * before get the table of pending bounds and the new triggers. As in 0020, this is the RELEASE
 * saga's own idempotent step run once more on each such schema.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const { rows } = await sql<{ schema: string }>`select table_schema as schema from information_schema.tables
    where table_name = 'observations' and table_schema like 'ds\\_%' order by 1`.execute(db);
  for (const { schema } of rows) await provisionStorage(db as unknown as Database, schema);
}
