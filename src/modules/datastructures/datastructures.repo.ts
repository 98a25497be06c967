import { sql } from 'kysely';
import { jsonArrayFrom, jsonObjectFrom } from 'kysely/helpers/postgres';
import type { Database } from '../../db/client.js';
import type { ReleaseStatus } from '../../db/schema.js';
import { fetchPageIds, inIdOrder, withNameDescriptionFilters, withSharedFilters, type ListRequest } from '../../db/list-query.js';
import { withReadableScope } from '../../access/readable-scope.js';
import { iso } from '../../http/resource.js';
import type { ReadableScope } from '../../access/check-access.js';
import type { DataStructure, DataStructureListQuery, DataStructureVersion, VersionSummary } from './datastructures.schemas.js';

export const STRUCTURE_SORT_COLUMNS: Record<string, string> = {
  name: 's.name', description: 's.description', dataStructureStatus: 's.status', createdAt: 's.created_at', modifiedAt: 's.modified_at',
};

const summaryOf = (row: { id: string; data_structure_id: string; version: string; description: string | null; status: ReleaseStatus; created_at: Date | string; modified_at: Date | string }): VersionSummary => ({
  id: row.id, dataStructureId: row.data_structure_id, version: row.version, description: row.description, status: row.status, source: 'OWN',
  createdAt: iso(row.created_at), modifiedAt: iso(row.modified_at),
});

/** Full data structure representations (datapool, version summaries oldest first, inUse), in one query. */
export async function loadStructures(db: Database, ids: readonly string[]): Promise<DataStructure[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('data_structures as s')
    .selectAll('s')
    .select((eb) => [
      jsonObjectFrom(eb.selectFrom('datapools as p').select(['p.id', 'p.name']).whereRef('p.id', '=', 's.datapool_id')).as('datapool'),
      jsonArrayFrom(eb.selectFrom('data_structure_versions as v').select(['v.id', 'v.data_structure_id', 'v.version', 'v.description', 'v.status', 'v.created_at', 'v.modified_at'])
        .whereRef('v.data_structure_id', '=', 's.id').orderBy('v.created_at').orderBy('v.id')).as('versions'),
      sql<boolean>`exists (select 1 from data_sources ds join data_structure_versions v on v.id = ds.data_structure_version_id where v.data_structure_id = s.id)`.as('in_use'),
    ])
    .where('s.id', 'in', [...ids])
    .execute();
  return inIdOrder(ids, rows.map((row) => ({
    id: row.id,
    name: row.name,
    description: row.description,
    datapool: row.datapool ?? null,
    createdFromDataSource: row.created_from_data_source,
    dataStructureVersions: (row.versions as Parameters<typeof summaryOf>[0][]).map(summaryOf),
    dataStructureStatus: row.status,
    inUse: row.in_use,
    createdAt: iso(row.created_at),
    modifiedAt: iso(row.modified_at),
  })));
}

/** One page of the structures matching the filters among those the caller may read (filtered in SQL). */
export async function findStructurePage(db: Database, query: DataStructureListQuery, request: ListRequest, readable: ReadableScope) {
  let qb = withSharedFilters(db.selectFrom('data_structures as s'), 's', query);
  qb = withReadableScope(qb, 's', readable, (eb, datapoolIds) => eb('s.datapool_id', 'in', datapoolIds));
  qb = withNameDescriptionFilters(qb, 's', query);
  if (query.dataStructureStatus) qb = qb.where('s.status', '=', query.dataStructureStatus);
  return fetchPageIds(qb, 's', request, STRUCTURE_SORT_COLUMNS);
}

export interface StructureState { id: string; name: string; status: ReleaseStatus; datapoolId: string | null }

/** The state of a structure, its row locked FOR UPDATE when `lock` (every write of it or of its versions). */
export async function structureState(db: Database, id: string, lock: boolean): Promise<StructureState | undefined> {
  let qb = db.selectFrom('data_structures').select(['id', 'name', 'status', 'datapool_id']).where('id', '=', id);
  if (lock) qb = qb.forUpdate();
  const row = await qb.executeTakeFirst();
  return row && { id: row.id, name: row.name, status: row.status, datapoolId: row.datapool_id };
}

export interface StructureValues { name: string; description: string | null; datapoolId: string | null; createdFromDataSource: boolean }

export const insertStructure = (db: Database, id: string, v: StructureValues) =>
  db.insertInto('data_structures').values({ id, name: v.name, description: v.description, datapool_id: v.datapoolId, created_from_data_source: v.createdFromDataSource }).execute();

export const updateStructureRow = (db: Database, id: string, v: StructureValues) =>
  db.updateTable('data_structures').set({
    name: v.name, description: v.description, datapool_id: v.datapoolId, created_from_data_source: v.createdFromDataSource, modified_at: sql`now()`,
  }).where('id', '=', id).execute();

export const setStructureStatus = (db: Database, id: string, status: ReleaseStatus) =>
  db.updateTable('data_structures').set({ status, modified_at: sql`now()` }).where('id', '=', id).execute();

export const deleteStructureRow = (db: Database, id: string) => db.deleteFrom('data_structures').where('id', '=', id).execute();

/** The data sources referencing any version of a structure (or one version): what makes it in use. */
export async function dataSourcesReferencing(db: Database, by: { structureId?: string; versionId?: string }): Promise<{ id: string; name: string }[]> {
  let qb = db.selectFrom('data_sources as ds').innerJoin('data_structure_versions as v', 'v.id', 'ds.data_structure_version_id').select(['ds.id', 'ds.name']);
  if (by.structureId) qb = qb.where('v.data_structure_id', '=', by.structureId);
  if (by.versionId) qb = qb.where('v.id', '=', by.versionId);
  return qb.orderBy('ds.name').orderBy('ds.id').execute();
}

/** A version with its structure (ref) and whether a data source references it. */
export async function loadVersion(db: Database, structureId: string, versionId: string): Promise<DataStructureVersion | undefined> {
  const row = await db.selectFrom('data_structure_versions as v')
    .innerJoin('data_structures as s', 's.id', 'v.data_structure_id')
    .selectAll('v')
    .select(['s.name as structure_name', sql<boolean>`exists (select 1 from data_sources ds where ds.data_structure_version_id = v.id)`.as('in_use')])
    .where('v.id', '=', versionId).where('v.data_structure_id', '=', structureId)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    id: row.id,
    dataStructure: { id: row.data_structure_id, name: row.structure_name },
    dataStructureVersionSource: 'OWN',
    version: row.version,
    description: row.description,
    modelName: row.model_name,
    model: (typeof row.model === 'string' ? JSON.parse(row.model) : row.model) ?? null,
    styles: (typeof row.styles === 'string' ? JSON.parse(row.styles) : row.styles) ?? {},
    dataStructureVersionStatus: row.status,
    inUse: row.in_use,
    createdAt: iso(row.created_at),
    modifiedAt: iso(row.modified_at),
  };
}

export async function versionsOfStructure(db: Database, structureId: string): Promise<{ id: string; version: string; status: ReleaseStatus }[]> {
  return db.selectFrom('data_structure_versions').select(['id', 'version', 'status']).where('data_structure_id', '=', structureId).execute();
}

export interface VersionValues { version: string; description: string | null; modelName: string | null; model: unknown; styles: Record<string, unknown> }

const jsonOrNull = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));

export const insertVersion = (db: Database, id: string, structureId: string, v: VersionValues) =>
  db.insertInto('data_structure_versions').values({
    id, data_structure_id: structureId, version: v.version, description: v.description, model_name: v.modelName, model: jsonOrNull(v.model), styles: JSON.stringify(v.styles),
  }).execute();

export const updateVersionRow = (db: Database, id: string, v: VersionValues) =>
  db.updateTable('data_structure_versions').set({
    version: v.version, description: v.description, model_name: v.modelName, model: jsonOrNull(v.model), styles: JSON.stringify(v.styles), modified_at: sql`now()`,
  }).where('id', '=', id).execute();

export const setVersionStatus = (db: Database, id: string, status: ReleaseStatus) =>
  db.updateTable('data_structure_versions').set({ status, modified_at: sql`now()` }).where('id', '=', id).execute();

export const deleteVersionRow = (db: Database, id: string) => db.deleteFrom('data_structure_versions').where('id', '=', id).execute();

/** Version summaries by id (for the data sources that name them). */
export async function loadVersionSummaries(db: Database, ids: readonly string[]): Promise<Map<string, VersionSummary>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('data_structure_versions').select(['id', 'data_structure_id', 'version', 'description', 'status', 'created_at', 'modified_at'])
    .where('id', 'in', [...ids]).execute();
  return new Map(rows.map((row) => [row.id, summaryOf(row)]));
}

/** A version with the state of its structure, locked FOR KEY SHARE (a data source about to reference it). */
export async function lockVersionForReference(db: Database, versionId: string) {
  return db.selectFrom('data_structure_versions as v').innerJoin('data_structures as s', 's.id', 'v.data_structure_id')
    .select(['v.id', 'v.status as version_status', 's.id as structure_id', 's.status as structure_status', 's.datapool_id'])
    .where('v.id', '=', versionId).forKeyShare().executeTakeFirst();
}
