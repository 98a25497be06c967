import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import { containsAny, fetchPageIds, inIdOrder, withSharedFilters, type ListRequest } from '../../db/list-query.js';
import { iso } from '../../http/resource.js';
import type { Style, StyleListQuery } from './styles.schemas.js';

export const STYLE_SORT_COLUMNS: Record<string, string> = { name: 's.name', createdAt: 's.created_at', modifiedAt: 's.modified_at' };

/** Style representations of a dataset in the order of `ids`; `inUse` is the dataset's (the same for all its styles). */
export async function loadStyles(db: Database, datasetId: string, ids: readonly string[], inUse: boolean): Promise<Style[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('dataset_styles').selectAll().where('dataset_id', '=', datasetId).where('id', 'in', [...ids]).execute();
  return inIdOrder(ids, rows.map((row) => ({
    id: row.id,
    dataSetId: row.dataset_id,
    name: row.name,
    sldContent: row.sld_content,
    inUse,
    createdAt: iso(row.created_at),
    modifiedAt: iso(row.modified_at),
  })));
}

export async function findStylePage(db: Database, datasetId: string, query: StyleListQuery, request: ListRequest) {
  let qb = withSharedFilters(db.selectFrom('dataset_styles as s').where('s.dataset_id', '=', datasetId), 's', query);
  if (query.name) qb = qb.where(containsAny(['s.name'], query.name));
  return fetchPageIds(qb, 's', request, STYLE_SORT_COLUMNS);
}

export const insertStyle = (db: Database, datasetId: string, id: string, values: { name: string; sldContent: string }) =>
  db.insertInto('dataset_styles').values({ id, dataset_id: datasetId, name: values.name, sld_content: values.sldContent }).execute();

export const updateStyleRow = (db: Database, id: string, values: { name: string; sldContent: string }) =>
  db.updateTable('dataset_styles').set({ name: values.name, sld_content: values.sldContent, modified_at: sql`now()` }).where('id', '=', id).execute();

export const deleteStyleRow = (db: Database, id: string) => db.deleteFrom('dataset_styles').where('id', '=', id).execute();

/** Every style of a dataset, name and SLD only: what the OWS server draws a published dataset's layers with. */
export const stylesOfDataset = (db: Database, datasetId: string) =>
  db.selectFrom('dataset_styles').select(['name', 'sld_content as sldContent']).where('dataset_id', '=', datasetId).orderBy('name').execute();
