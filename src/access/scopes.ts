import { sql, type RawBuilder } from 'kysely';
import type { Database } from '../db/client.js';
import type { ScopeType } from '../db/schema.js';

/**
 * Where the objects of each scope type live, and the assignment column that holds a foreign key
 * to them. Existence checks and scope names go through this one table; a later module (datasets,
 * data sources, data structures) adds its table and column here and to the assignments check.
 */
type ScopeColumn = 'tenant_id' | 'datapool_id' | 'dataset_id' | 'datasource_id' | 'datastructure_id';

const SCOPE_OBJECTS: Record<ScopeType, { table: string; column: ScopeColumn }> = {
  TENANT: { table: 'tenant', column: 'tenant_id' },
  DATAPOOL: { table: 'datapools', column: 'datapool_id' },
  DATASET: { table: 'datasets', column: 'dataset_id' },
  DATASOURCE: { table: 'data_sources', column: 'datasource_id' },
  DATASTRUCTURE: { table: 'data_structures', column: 'datastructure_id' },
};

/** The columns of an assignment row on that scope: `scope_id` plus the foreign key of its type. */
export function scopeColumns(scopeType: ScopeType, scopeId: string): { scope_type: ScopeType; scope_id: string } & Record<ScopeColumn, string | null> {
  const column = SCOPE_OBJECTS[scopeType]?.column;
  if (!column) throw new Error(`no object can be a ${scopeType} scope`);
  return {
    scope_type: scopeType, scope_id: scopeId,
    tenant_id: null, datapool_id: null, dataset_id: null, datasource_id: null, datastructure_id: null, [column]: scopeId,
  };
}

/** SQL for the display name of the scope of an assignment row aliased `alias`. */
export function scopeNameSql(alias: string): RawBuilder<string | null> {
  const cases = Object.entries(SCOPE_OBJECTS).map(
    ([type, { table }]) => sql`when ${type} then (select s.name from ${sql.table(table)} s where s.id = ${sql.ref(`${alias}.scope_id`)})`,
  );
  return sql<string | null>`(case ${sql.ref(`${alias}.scope_type`)} ${sql.join(cases, sql` `)} end)`;
}

/**
 * Whether the object exists, locking it FOR KEY SHARE: a concurrent delete of it waits for this
 * transaction and then removes the assignment written here with it (the foreign key cascades),
 * and a delete that committed first makes this answer false.
 */
async function lockScopeObject(db: Database, table: string, id: string): Promise<boolean> {
  const found = await sql`select 1 from ${sql.table(table)} where id = ${id} for key share`.execute(db);
  return found.rows.length > 0;
}

/** The scope type of an existing object id (locked as above), or null when no scope table holds it. */
export async function findScopeType(db: Database, id: string): Promise<ScopeType | null> {
  for (const [type, { table }] of Object.entries(SCOPE_OBJECTS)) {
    if (await lockScopeObject(db, table, id)) return type as ScopeType;
  }
  return null;
}

export async function scopeExists(db: Database, scopeType: ScopeType, id: string): Promise<boolean> {
  const target = SCOPE_OBJECTS[scopeType];
  return target ? lockScopeObject(db, target.table, id) : false;
}
