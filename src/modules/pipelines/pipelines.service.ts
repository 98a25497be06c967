import { randomUUID } from 'node:crypto';
import type { Caller } from '../../access/caller.js';
import { AppError, notFound, type FieldError } from '../../errors.js';
import type { Database } from '../../db/client.js';
import { assertIfMatch } from '../../http/etag.js';
import { pageOf, parseSort } from '../../http/page.js';
import { authorizeDatasetPart, type DatasetsContext } from '../datasets/index.js';
import { compileMapping, type MappingFault } from '../../ingest/mapping.js';
import { mappingUrnProblem, resolveMapping } from '../mappings/index.js';
import { existingDataSourceIds } from '../datasources/index.js';
import { cronProblem } from './cron.js';
import { rejectionPage } from '../../ingest/rejections.js';
import {
  bumpRestartGeneration, deletePipelineRow, findPipelinePage, insertPipeline, loadPipelines, PIPELINE_SORT_COLUMNS, pipelineIdsOfDataset, updatePipelineRow,
  type PipelineValues,
} from './pipelines.repo.js';
import type { Pipeline, PipelineInput, PipelineListQuery, PipelinePatch, RejectionListQuery } from './pipelines.schemas.js';

/**
 * A dataset's pipelines. A DRAFT configuration may be incomplete: a write checks the syntax of
 * what it is given (a mapping URN of this dataset, a cron schedule), while whether the mapping,
 * the data sources and the named API exist is checked when the dataset is staged or released.
 * runtimeStatus is written by the pipeline runtime (`src/ingest/`) while the dataset is AVAILABLE.
 */

async function pipelineOrNotFound(db: Database, datasetId: string, id: string): Promise<Pipeline> {
  const [pipeline] = await loadPipelines(db, datasetId, [id]);
  if (!pipeline) throw notFound('Pipeline', id);
  return pipeline;
}

function checkValues(datasetId: string, values: PipelineValues): void {
  const problems: FieldError[] = [];
  const urnProblem = values.mappingRef === null ? null : mappingUrnProblem(datasetId, values.mappingRef);
  if (urnProblem) problems.push({ field: 'mappingRef', message: urnProblem });
  const schedule = values.schedule === null ? null : cronProblem(values.schedule);
  if (schedule) problems.push({ field: 'schedule', message: schedule });
  if (problems.length > 0) throw new AppError('VALIDATION_FAILED', problems.map((p) => `${p.field}: ${p.message}`).join('; '), { fieldErrors: problems });
}

export async function listPipelines(ctx: DatasetsContext, caller: Caller, datasetId: string, query: PipelineListQuery) {
  await authorizeDatasetPart(ctx, caller, datasetId, 'read');
  const request = { page: query.page, size: query.size, sort: parseSort(query.sort, Object.keys(PIPELINE_SORT_COLUMNS)) };
  const { ids, total } = await findPipelinePage(ctx.db, datasetId, query, request);
  return pageOf(await loadPipelines(ctx.db, datasetId, ids), total, request);
}

export async function getPipeline(ctx: DatasetsContext, caller: Caller, datasetId: string, id: string): Promise<Pipeline> {
  await authorizeDatasetPart(ctx, caller, datasetId, 'read');
  return pipelineOrNotFound(ctx.db, datasetId, id);
}

export async function createPipeline(ctx: DatasetsContext, caller: Caller, datasetId: string, input: PipelineInput): Promise<Pipeline> {
  const id = randomUUID();
  return ctx.db.transaction().execute(async (trx) => {
    await authorizeDatasetPart(ctx, caller, datasetId, 'write', trx);
    const values: PipelineValues = {
      name: input.name, description: input.description ?? '', dataSourceIds: input.dataSourceIds ?? [],
      mappingRef: input.mappingRef ?? null, namedApiSlug: input.namedApiSlug ?? null, schedule: input.schedule ?? null,
    };
    checkValues(datasetId, values);
    await insertPipeline(trx, datasetId, id, values);
    return pipelineOrNotFound(trx, datasetId, id);
  });
}

/** PUT replaces every field (omitted or null optional ones are cleared); PATCH changes the given ones, null clearing them. */
export async function updatePipeline(
  ctx: DatasetsContext, caller: Caller, datasetId: string, id: string, input: PipelineInput | PipelinePatch, mode: 'replace' | 'patch', ifMatch: string | undefined,
): Promise<Pipeline> {
  return ctx.db.transaction().execute(async (trx) => {
    await authorizeDatasetPart(ctx, caller, datasetId, 'write', trx);
    const current = await pipelineOrNotFound(trx, datasetId, id);
    assertIfMatch(ifMatch, current);
    const given = <T>(value: T | null | undefined, kept: T | null): T | null => (value !== undefined ? value : mode === 'replace' ? null : kept);
    const values: PipelineValues = {
      name: input.name ?? current.name,
      description: given(input.description, current.description) ?? '',
      dataSourceIds: given(input.dataSourceIds, current.dataSourceIds) ?? [],
      mappingRef: given(input.mappingRef, current.mappingRef),
      namedApiSlug: given(input.namedApiSlug, current.namedApiSlug),
      schedule: given(input.schedule, current.schedule),
    };
    checkValues(datasetId, values);
    await updatePipelineRow(trx, id, values);
    return pipelineOrNotFound(trx, datasetId, id);
  });
}

export async function deletePipeline(ctx: DatasetsContext, caller: Caller, datasetId: string, id: string, ifMatch: string | undefined): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    await authorizeDatasetPart(ctx, caller, datasetId, 'write', trx);
    assertIfMatch(ifMatch, await pipelineOrNotFound(trx, datasetId, id));
    await deletePipelineRow(trx, id);
  });
}

/**
 * Asks whichever process runs the pipeline to start it again (counters from zero, the mapping
 * and data sources read anew): 202, it happens at that process's next pass. Only while the
 * dataset is AVAILABLE with its RELEASE saga ended (else 409 INVALID_STATE).
 */
export async function restartPipeline(ctx: DatasetsContext, caller: Caller, datasetId: string, id: string, kick: () => void): Promise<Pipeline> {
  const pipeline = await ctx.db.transaction().execute(async (trx) => {
    const dataset = await authorizeDatasetPart(ctx, caller, datasetId, 'operate', trx);
    const found = await pipelineOrNotFound(trx, datasetId, id);
    if (dataset.dataSetStatus !== 'AVAILABLE' || dataset.pendingSagaType !== null) {
      throw new AppError('INVALID_STATE', `A pipeline runs only while its dataset is AVAILABLE; the dataset is ${dataset.dataSetStatus}${dataset.pendingSagaType ? ` (${dataset.pendingSagaType} under way)` : ''}`, { status: 409 });
    }
    await bumpRestartGeneration(trx, id);
    return found;
  });
  kick();
  return pipeline;
}

/** A pipeline's rejections, newest first (the dataset's readers may see them). */
export async function listRejections(ctx: DatasetsContext, caller: Caller, datasetId: string, id: string, query: RejectionListQuery) {
  await authorizeDatasetPart(ctx, caller, datasetId, 'read');
  await pipelineOrNotFound(ctx.db, datasetId, id);
  const request = { page: query.page, size: query.size, sort: [{ property: 'receivedAt', direction: 'desc' as const }] };
  const { items, total } = await rejectionPage(ctx.db, id, { offset: query.page * query.size, limit: query.size });
  return pageOf(items, total, request);
}

/**
 * Stage and release: the problems of every pipeline of the dataset, named `pipelines[i].…` in
 * the order of the dataset's `pipelines` (oldest first). The mapping must exist in this dataset
 * and compile (its `fields` and `filter` as JSONata: one entry per fault, each message starting
 * with the target path), every data source must exist, and the named API must be one of the
 * dataset's.
 */
export async function pipelineProblems(db: Database, datasetId: string, namedApiSlugs: readonly string[]): Promise<FieldError[]> {
  const pipelines = await loadPipelines(db, datasetId, await pipelineIdsOfDataset(db, datasetId));
  if (pipelines.length === 0) return [];
  const allSourceIds = [...new Set(pipelines.flatMap((p) => p.dataSourceIds))];
  const existing = allSourceIds.length > 0 ? await existingDataSourceIds(db, allSourceIds) : new Set<string>();
  const problems: FieldError[] = [];
  // Pipelines sharing a mappingRef share its lookup, and those sharing a mapping version its
  // compilation: each URN is read once and each expression compiles once.
  const mappingsByRef = new Map<string, ReturnType<typeof resolveMapping>>();
  const faultsByVersion = new Map<string, MappingFault[]>();
  for (const [index, pipeline] of pipelines.entries()) {
    const at = `pipelines[${index}]`;
    if (pipeline.mappingRef === null) problems.push({ field: `${at}.mappingRef`, message: `pipeline "${pipeline.name}" has no mapping` });
    else {
      let resolving = mappingsByRef.get(pipeline.mappingRef);
      if (!resolving) mappingsByRef.set(pipeline.mappingRef, resolving = resolveMapping(db, datasetId, pipeline.mappingRef));
      const mapping = await resolving;
      if (mapping === undefined) {
        problems.push({ field: `${at}.mappingRef`, message: `pipeline "${pipeline.name}": ${pipeline.mappingRef} names no mapping of this dataset` });
      } else {
        const key = `${mapping.name}:${mapping.version}`;
        let faults = faultsByVersion.get(key);
        if (faults === undefined) {
          const compiled = compileMapping(mapping.document);
          faults = compiled.ok ? [] : compiled.faults;
          faultsByVersion.set(key, faults);
        }
        for (const fault of faults) problems.push({ field: `${at}.mappingRef`, message: fault.message });
      }
    }
    pipeline.dataSourceIds.forEach((sourceId, sourceIndex) => {
      if (!existing.has(sourceId)) problems.push({ field: `${at}.dataSourceIds[${sourceIndex}]`, message: `pipeline "${pipeline.name}": no data source has the id ${sourceId}` });
    });
    if (pipeline.namedApiSlug === null) problems.push({ field: `${at}.namedApiSlug`, message: `pipeline "${pipeline.name}" names no named API` });
    else if (!namedApiSlugs.includes(pipeline.namedApiSlug)) {
      const known = namedApiSlugs.length > 0 ? namedApiSlugs.join(', ') : 'none';
      problems.push({ field: `${at}.namedApiSlug`, message: `pipeline "${pipeline.name}": "${pipeline.namedApiSlug}" is not one of the dataset's named APIs (${known})` });
    }
  }
  return problems;
}
