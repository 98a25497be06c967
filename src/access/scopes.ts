import { sql, type RawBuilder } from 'kysely';
import type { Database } from '../db/client.js';
import type { ScopeType } from '../db/schema.js';

/**
 * Where the objects of each scope type live. An assignment's scope_id has no foreign key (it is
 * polymorphic), so existence checks and scope names go through this one table; a later module
 * (datasets, data sources, data structures) adds its table here.
 */
const SCOPE_TABLES: Partial<Record<ScopeType, string>> = {
  TENANT: 'tenant',
  DATAPOOL: 'datapools',
};

/** SQL for the display name of the scope of an assignment row aliased `alias`. */
export function scopeNameSql(alias: string): RawBuilder<string | null> {
  const cases = Object.entries(SCOPE_TABLES).map(
    ([type, table]) => sql`when ${type} then (select s.name from ${sql.table(table)} s where s.id = ${sql.ref(`${alias}.scope_id`)})`,
  );
  return sql<string | null>`(case ${sql.ref(`${alias}.scope_type`)} ${sql.join(cases, sql` `)} end)`;
}

/** The scope type of an existing object id, or null when no scope table holds it. */
export async function findScopeType(db: Database, id: string): Promise<ScopeType | null> {
  for (const [type, table] of Object.entries(SCOPE_TABLES)) {
    const found = await sql`select 1 from ${sql.table(table)} where id = ${id}`.execute(db);
    if (found.rows.length > 0) return type as ScopeType;
  }
  return null;
}

export async function scopeExists(db: Database, scopeType: ScopeType, id: string): Promise<boolean> {
  const table = SCOPE_TABLES[scopeType];
  if (!table) return false;
  const found = await sql`select 1 from ${sql.table(table)} where id = ${id}`.execute(db);
  return found.rows.length > 0;
}
