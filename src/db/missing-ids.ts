import type { Database } from './client.js';

/**
 * The ids among `ids` that have no row in `table`. The found rows are locked FOR KEY SHARE: a
 * concurrent delete of one of them waits until this transaction has written its reference, then
 * sees it (and its foreign key) instead of slipping in between the check and the write.
 */
export async function lockMissingIds(db: Database, table: 'users' | 'groups', ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const found = await db.selectFrom(table).select('id').where('id', 'in', [...ids]).forKeyShare().execute();
  const existing = new Set(found.map((row) => row.id));
  return new Set(ids.filter((id) => !existing.has(id)));
}
