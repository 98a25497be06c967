import { randomUUID } from 'node:crypto';
import type { Caller } from '../../access/caller.js';
import { notFound, validationFailed } from '../../errors.js';
import type { Database } from '../../db/client.js';
import { uniquely } from '../../db/constraint-errors.js';
import { assertIfMatch } from '../../http/etag.js';
import { pageOf, parseSort } from '../../http/page.js';
import { authorizeDatasetPart, type Dataset, type DatasetsContext } from '../datasets/index.js';
import { sldProblem } from './sld.js';
import { deleteStyleRow, findStylePage, insertStyle, loadStyles, STYLE_SORT_COLUMNS, updateStyleRow } from './styles.repo.js';
import type { Style, StyleInput, StyleListQuery, StylePatch } from './styles.schemas.js';

/**
 * A style is in use while its dataset is released with an OWS named API: the map server then
 * serves it (WMS `STYLES=<name>`). It cannot change meanwhile anyway (writes need a DRAFT dataset);
 * inUse tells a client why.
 */
const inUseBy = (dataset: Dataset) => dataset.dataSetStatus === 'AVAILABLE' && dataset.namedApis.some((api) => api.standard === 'OWS');

const duplicateName = (name: string) => `A style named "${name}" already exists in this dataset`;

async function styleOrNotFound(db: Database, dataset: Dataset, id: string): Promise<Style> {
  const [style] = await loadStyles(db, dataset.id, [id], inUseBy(dataset));
  if (!style) throw notFound('Style', id);
  return style;
}

function checkSld(sldContent: string | undefined): void {
  if (sldContent === undefined) return;
  const problem = sldProblem(sldContent);
  if (problem) throw validationFailed('sldContent', problem);
}

export async function listStyles(ctx: DatasetsContext, caller: Caller, datasetId: string, query: StyleListQuery) {
  const dataset = await authorizeDatasetPart(ctx, caller, datasetId, 'read');
  const request = { page: query.page, size: query.size, sort: parseSort(query.sort, Object.keys(STYLE_SORT_COLUMNS)) };
  const { ids, total } = await findStylePage(ctx.db, datasetId, query, request);
  return pageOf(await loadStyles(ctx.db, datasetId, ids, inUseBy(dataset)), total, request);
}

export async function getStyle(ctx: DatasetsContext, caller: Caller, datasetId: string, id: string): Promise<Style> {
  return styleOrNotFound(ctx.db, await authorizeDatasetPart(ctx, caller, datasetId, 'read'), id);
}

export async function createStyle(ctx: DatasetsContext, caller: Caller, datasetId: string, input: StyleInput): Promise<Style> {
  const id = randomUUID();
  return ctx.db.transaction().execute(async (trx) => {
    const dataset = await authorizeDatasetPart(ctx, caller, datasetId, 'write', trx);
    checkSld(input.sldContent);
    await uniquely(() => insertStyle(trx, datasetId, id, input), duplicateName(input.name), 'name');
    return styleOrNotFound(trx, dataset, id);
  });
}

/** PUT replaces both fields, PATCH the given ones. */
export async function updateStyle(
  ctx: DatasetsContext, caller: Caller, datasetId: string, id: string, input: StyleInput | StylePatch, ifMatch: string | undefined,
): Promise<Style> {
  return ctx.db.transaction().execute(async (trx) => {
    const dataset = await authorizeDatasetPart(ctx, caller, datasetId, 'write', trx);
    const current = await styleOrNotFound(trx, dataset, id);
    assertIfMatch(ifMatch, current);
    checkSld(input.sldContent);
    const values = { name: input.name ?? current.name, sldContent: input.sldContent ?? current.sldContent };
    await uniquely(() => updateStyleRow(trx, id, values), duplicateName(values.name), 'name');
    return styleOrNotFound(trx, dataset, id);
  });
}

export async function deleteStyle(ctx: DatasetsContext, caller: Caller, datasetId: string, id: string, ifMatch: string | undefined): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    const dataset = await authorizeDatasetPart(ctx, caller, datasetId, 'write', trx);
    assertIfMatch(ifMatch, await styleOrNotFound(trx, dataset, id));
    await deleteStyleRow(trx, id);
  });
}
