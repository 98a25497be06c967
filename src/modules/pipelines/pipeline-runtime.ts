import { randomUUID } from 'node:crypto';
import type { Database } from '../../db/client.js';
import type { SecretKeyRing } from '../../db/secrets.js';
import type { SagaStep } from '../../jobs/saga-runner.js';
import type { PipelineCatalog } from '../../ingest/runtime.js';
import type { PipelineSpec } from '../../ingest/pipeline-run.js';
import type { DataSourceSpec } from '../../ingest/types.js';
import { namedApiStandardOf, storageSchemaOf, type DatasetSagaSteps } from '../datasets/index.js';
import { availableDataSourceIds, openedSourceConfiguration } from '../datasources/index.js';
import { resolveMapping } from '../mappings/index.js';
import {
  mayStillRun, pipelineDefinition, pipelineIdsOfDataset, runnablePipelineRows, saveRuntimeStatusRow, setRuntimeStatusOfPipelines,
} from './pipelines.repo.js';

/**
 * What the pipeline runtime (`src/ingest/`) learns of pipelines, and the steps by which the
 * dataset lifecycle starts and stops them. The runtime never reads the management tables itself.
 */
export function pipelineCatalog(secrets: SecretKeyRing): PipelineCatalog {
  return {
    async runnable(db) {
      return (await runnablePipelineRows(db)).map((row) => ({ id: row.id, generation: row.restart_generation }));
    },
    async load(db, id) {
      const row = await pipelineDefinition(db, id);
      if (!row) return null;
      const sourceIds = row.data_source_ids;
      const dataSources: DataSourceSpec[] = [];
      for (const sourceId of sourceIds) {
        const opened = await openedSourceConfiguration(db, secrets, sourceId);
        if (opened) dataSources.push({ id: sourceId, ...opened });
      }
      const mapping = row.mapping_ref === null ? undefined : await resolveMapping(db, row.dataset_id, row.mapping_ref);
      const spec: PipelineSpec = {
        id: row.id,
        datasetId: row.dataset_id,
        name: row.name,
        schema: storageSchemaOf(row.dataset_id),
        standard: row.named_api_slug === null ? null : (await namedApiStandardOf(db, row.dataset_id, row.named_api_slug)) ?? null,
        mappingDocument: mapping?.document ?? null,
        dataSources,
        schedule: row.schedule,
        restartGeneration: row.restart_generation,
      };
      return spec;
    },
    stillRunnable: mayStillRun,
    async saveStatus(db, id, status) {
      await saveRuntimeStatusRow(db, id, { ...status });
    },
  };
}

/** The status a released pipeline shows until a process starts it, or why it will not start. */
function waitingStatus(state: 'STARTING' | 'STOPPED', message: string) {
  return {
    state, message, occurredAt: new Date().toISOString(), source: 'RUNTIME', lastEventId: randomUUID(),
    received: 0, written: 0, rejected: 0, skipped: 0, lastReceivedAt: null,
  };
}

/**
 * RELEASE: each pipeline shows STARTING (a process takes it once the saga ended), or STOPPED when
 * one of its data sources is not AVAILABLE (it starts once they all are). UNRELEASE and DELETE:
 * the status goes back to null; the process running a pipeline stops it at its next pass, and no
 * batch of it commits after this step (each batch holds the dataset row while it writes).
 */
export function pipelineSagaSteps(): DatasetSagaSteps {
  const stop: SagaStep = {
    name: 'stop pipelines',
    async run(trx, job) {
      await setRuntimeStatusOfPipelines(trx, await pipelineIdsOfDataset(trx, job.subjectId), null);
    },
  };
  return {
    RELEASE: [{
      name: 'start pipelines',
      async run(trx: Database, job) {
        for (const id of await pipelineIdsOfDataset(trx, job.subjectId)) {
          const row = (await pipelineDefinition(trx, id))!;
          const sourceIds = row.data_source_ids;
          const available = await availableDataSourceIds(trx, sourceIds);
          const waiting = sourceIds.filter((sourceId) => !available.has(sourceId));
          await setRuntimeStatusOfPipelines(trx, [id], waiting.length === 0
            ? waitingStatus('STARTING', 'waiting for a process to start it')
            : waitingStatus('STOPPED', `data source ${waiting.join(', ')} is not AVAILABLE; the pipeline starts once it is released`));
        }
      },
    }],
    UNRELEASE: [stop],
    DELETE: [stop],
  };
}
