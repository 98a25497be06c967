import assert from 'node:assert/strict';
import type { TestApp } from './test-app.js';
import { bearer, uniqueName } from './factories.js';
import { publishDataset, waitForNoSaga, type PublishedDataset } from './sta-dataset.js';
import { waitFor } from './wait.js';

type Json = Record<string, any>;

/** The pipeline tests' steps through the real management API. */

async function ok(t: TestApp, method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown, status?: number): Promise<Json> {
  const response = await t.app.inject({ method, url, headers: bearer(t.adminToken), ...(payload === undefined ? {} : { payload: payload as Json }) });
  assert.equal(response.statusCode, status ?? (method === 'POST' ? 201 : 200), `${method} ${url}: ${response.body}`);
  return response.body ? response.json() : {};
}

/** An AVAILABLE data source of that connector (with the AVAILABLE structure version release needs). */
export async function releasedDataSource(t: TestApp, connectorType: 'MQTT' | 'HTTP' | 'SQL', configuration: Json): Promise<Json> {
  const structure = await ok(t, 'POST', '/v1/datastructures', { name: uniqueName('Structure') });
  const version = await ok(t, 'POST', `/v1/datastructures/${structure.id}/versions`, { dataStructureVersionSource: 'OWN', model: { type: 'object' } });
  await ok(t, 'POST', `/v1/datastructures/${structure.id}/versions/${version.id}/release`, undefined, 200);
  await ok(t, 'POST', `/v1/datastructures/${structure.id}/release`, undefined, 200);
  const source = await ok(t, 'POST', '/v1/datasources', { name: uniqueName('Source'), connectorType, dataStructureVersionId: version.id, configuration });
  return ok(t, 'POST', `/v1/datasources/${source.id}/release`, undefined, 200);
}

export interface PipelineDataset extends PublishedDataset {
  pipelineId: string;
  /** The pipeline as the management API answers it now. */
  pipeline(): Promise<Json>;
  /** Waits until the pipeline's runtimeStatus satisfies `done`; answers the status. */
  statusUntil(done: (status: Json | null) => boolean, what: string, timeoutMs?: number): Promise<Json | null>;
  rejections(): Promise<Json[]>;
}

/**
 * A dataset with one named API and one pipeline reading `dataSourceIds` with `mapping` (the
 * CIVITAS/CORE document's `fields` and `filter`), released once its parts exist.
 */
export async function pipelineDataset(t: TestApp, options: {
  standard?: 'STA' | 'OWS'; dataSourceIds: string[]; mapping: Json; schedule?: string;
  /** Runs while the dataset is DRAFT (e.g. nothing; OWS collections are made after release). */
}): Promise<PipelineDataset> {
  let pipelineId = '';
  const published = await publishDataset(t, {
    standard: options.standard ?? 'STA',
    beforeRelease: async (datasetId) => {
      const mapping = await ok(t, 'POST', `/v1/datasets/${datasetId}/mappings`, { name: 'm', title: 'test mapping', ...options.mapping }, 200);
      const pipeline = await ok(t, 'POST', `/v1/datasets/${datasetId}/pipelines`, {
        name: uniqueName('Pipeline'), mappingRef: mapping.logicalUrn, namedApiSlug: 'sensors', dataSourceIds: options.dataSourceIds,
        ...(options.schedule ? { schedule: options.schedule } : {}),
      });
      pipelineId = pipeline.id;
    },
  });
  const url = `/v1/datasets/${published.datasetId}/pipelines/${pipelineId}`;
  const pipeline = () => ok(t, 'GET', url);
  return {
    ...published,
    pipelineId,
    pipeline,
    statusUntil: async (done, what, timeoutMs = 15_000) => {
      let last: Json | null = null;
      await waitFor(async () => {
        last = (await pipeline()).runtimeStatus;
        return done(last) ? true : undefined;
      }, { what, timeoutMs, last: () => JSON.stringify(last) });
      return last;
    },
    rejections: async () => (await ok(t, 'GET', `${url}/rejections?size=100`)).content,
  };
}

export async function unrelease(t: TestApp, datasetId: string): Promise<void> {
  await ok(t, 'POST', `/v1/datasets/${datasetId}/unrelease`, undefined, 202);
  await waitForNoSaga(t, datasetId);
}

export async function release(t: TestApp, datasetId: string): Promise<void> {
  await ok(t, 'POST', `/v1/datasets/${datasetId}/release`, undefined, 202);
  await waitForNoSaga(t, datasetId);
}
