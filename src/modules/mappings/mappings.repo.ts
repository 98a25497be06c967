import { sql } from 'kysely';
import type { Database } from '../../db/client.js';

/** SQL of a dataset's mappings: one row per version, its content kept as the client sent it. */

export async function versionsOf(db: Database, datasetId: string, name: string): Promise<number[]> {
  const rows = await db.selectFrom('dataset_mappings').select('version')
    .where('dataset_id', '=', datasetId).where('name', '=', name).orderBy('version').execute();
  return rows.map((row) => row.version);
}

export const insertMappingVersion = (db: Database, datasetId: string, name: string, version: number, content: unknown) =>
  db.insertInto('dataset_mappings').values({ dataset_id: datasetId, name, version, content: JSON.stringify(content) }).execute();

/** The content of one version, or of the latest when `version` is null. */
export async function findMappingContent(db: Database, datasetId: string, name: string, version: number | null): Promise<unknown | undefined> {
  return (await findMappingVersion(db, datasetId, name, version))?.content;
}

/** One version (the latest when `version` is null) with its number. */
export async function findMappingVersion(db: Database, datasetId: string, name: string, version: number | null): Promise<{ version: number; content: unknown } | undefined> {
  let query = db.selectFrom('dataset_mappings').select(['version', 'content']).where('dataset_id', '=', datasetId).where('name', '=', name);
  query = version === null ? query.orderBy('version', 'desc').limit(1) : query.where('version', '=', version);
  const row = await query.executeTakeFirst();
  if (!row) return undefined;
  return { version: row.version, content: typeof row.content === 'string' ? JSON.parse(row.content) : row.content };
}

/** Every mapping of the dataset with its versions, oldest version first, mappings by name. */
export async function mappingsOf(db: Database, datasetId: string): Promise<{ name: string; versions: number[] }[]> {
  const rows = await db.selectFrom('dataset_mappings').select(['name', 'version'])
    .where('dataset_id', '=', datasetId).orderBy(sql`name collate "C"`).orderBy('version').execute();
  const byName = new Map<string, number[]>();
  for (const row of rows) {
    const versions = byName.get(row.name);
    if (versions) versions.push(row.version);
    else byName.set(row.name, [row.version]);
  }
  return [...byName].map(([name, versions]) => ({ name, versions }));
}

/** Deletes every version (`version` null) or one; answers how many went. */
export async function deleteMappingRows(db: Database, datasetId: string, name: string, version: number | null): Promise<number> {
  let query = db.deleteFrom('dataset_mappings').where('dataset_id', '=', datasetId).where('name', '=', name);
  if (version !== null) query = query.where('version', '=', version);
  const result = await query.executeTakeFirst();
  return Number(result.numDeletedRows);
}
