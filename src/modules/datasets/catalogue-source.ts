import type { Database } from '../../db/client.js';
import { catalogueMetadataOf, type CatalogueEntry, type CatalogueSource } from '../../catalogue/index.js';
import { storageSchemaOf } from './dataset-sagas.js';
import { catalogueLastModified, countCatalogue, findCataloguePage, findCatalogueRow, type CatalogueRow } from './datasets.repo.js';

/** The released open datasets as the open-data catalogue reads them (wired into the data API by app.ts). */
export function datasetCatalogueSource(db: Database): CatalogueSource {
  return {
    state: async (modifiedSince) => {
      const [lastModified, total] = await Promise.all([catalogueLastModified(db), countCatalogue(db, modifiedSince)]);
      return { lastModified, total };
    },
    page: async (query) => (await findCataloguePage(db, query)).map(entryOf),
    entry: async (id) => {
      const row = await findCatalogueRow(db, id);
      return row && entryOf(row);
    },
  };
}

function entryOf(row: CatalogueRow): CatalogueEntry {
  return {
    id: row.id,
    title: row.name,
    description: row.description,
    metadata: catalogueMetadataOf(typeof row.catalogue === 'string' ? JSON.parse(row.catalogue) : row.catalogue),
    issued: row.first_released_at ? new Date(row.first_released_at) : null,
    modified: new Date(row.record_modified_at),
    storageSchema: storageSchemaOf(row.id),
    apis: (typeof row.apis === 'string' ? JSON.parse(row.apis) : row.apis) as CatalogueEntry['apis'],
  };
}
