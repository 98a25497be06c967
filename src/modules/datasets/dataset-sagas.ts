import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import type { SagaType } from '../../db/schema.js';
import type { Job, Saga, SagaStep } from '../../jobs/saga-runner.js';
import { recordCascadingAssignmentDeletes } from '../assignments/index.js';
import type { Actor } from '../audit/index.js';
import { actorOfJob, datasetNow, recordDatasetEvent } from './dataset-audit.js';
import { deleteDatasetRow, markReleased, recordSagaError, setDatasetState } from './datasets.repo.js';

/**
 * The sagas of the dataset lifecycle, each an ordered list of idempotent steps. Every step first
 * locks the dataset row, so that it runs either before or after a concurrent write of the dataset,
 * never in between. Modules that act on a transition (the gateway publishing routes, the map
 * server's configuration) contribute steps through `DatasetSagaSteps`; the lifecycle does not
 * import them.
 */

export const SAGA_KINDS: Record<SagaType, string> = {
  CREATE: 'dataset.create', DELETE: 'dataset.delete', RELEASE: 'dataset.release', UNRELEASE: 'dataset.unrelease',
};

/** Steps other modules run in a transition, before the lifecycle's own final step. */
export type DatasetSagaSteps = Partial<Record<SagaType, readonly SagaStep[]>>;

/** The PostgreSQL schema that holds a dataset's payload. Built from our own UUID: safe as an identifier. */
export const storageSchemaOf = (datasetId: string) => `ds_${datasetId.replaceAll('-', '')}`;

const lockRow = async (trx: Database, id: string) =>
  trx.selectFrom('datasets').select(['id', 'pending_saga_type', 'status']).where('id', '=', id).forUpdate().executeTakeFirst();

const dropStorage = (trx: Database, id: string) => sql`drop schema if exists ${sql.id(storageSchemaOf(id))} cascade`.execute(trx);

const createSaga: Saga = {
  kind: SAGA_KINDS.CREATE,
  steps: [
    {
      name: 'provision storage',
      async run(trx, job) {
        // A dataset deleted before it was provisioned leaves nothing behind: the saga compensates.
        if (!(await lockRow(trx, job.subjectId))) await dropStorage(trx, job.subjectId);
        else await sql`create schema if not exists ${sql.id(storageSchemaOf(job.subjectId))}`.execute(trx);
      },
    },
    {
      name: 'mark provisioned',
      async run(trx, job) {
        const row = await lockRow(trx, job.subjectId);
        if (!row) await dropStorage(trx, job.subjectId);
        else await setDatasetState(trx, job.subjectId, { provisioned: true, ...(row.pending_saga_type === 'CREATE' ? { pendingSagaType: null } : {}) });
      },
    },
  ],
  async failed(trx, job, error) {
    if (await lockRow(trx, job.subjectId)) await recordSagaError(trx, job.subjectId, { sagaType: 'CREATE', message: error });
  },
};

const deleteSaga = (extra: readonly SagaStep[]): Saga => ({
  kind: SAGA_KINDS.DELETE,
  steps: [
    ...extra,
    { name: 'remove storage', run: (trx, job) => dropStorage(trx, job.subjectId).then(() => undefined) },
    // Its assignments and named APIs go with it (foreign keys cascade); the assignments are recorded
    // as removed in the name of whoever asked for the deletion (older jobs carry no actor).
    {
      name: 'remove dataset',
      async run(trx, job: Job<Partial<Actor>>) {
        await recordCascadingAssignmentDeletes(trx, actorOfJob(job), { column: 'scope_id', value: job.subjectId });
        await deleteDatasetRow(trx, job.subjectId);
      },
    },
  ],
  async failed(trx, job, error) {
    if (await lockRow(trx, job.subjectId)) await recordSagaError(trx, job.subjectId, { sagaType: 'DELETE', message: error });
  },
});

/** RELEASE and UNRELEASE: the contributed steps, then the lifecycle clears `pendingSagaType`. */
const transitionSaga = (sagaType: 'RELEASE' | 'UNRELEASE', extra: readonly SagaStep[]): Saga => ({
  kind: SAGA_KINDS[sagaType],
  steps: [
    ...extra,
    {
      name: 'finish',
      async run(trx: Database, job: Job) {
        const row = await lockRow(trx, job.subjectId);
        if (row?.pending_saga_type !== sagaType) return;
        await setDatasetState(trx, job.subjectId, { pendingSagaType: null });
        if (sagaType === 'RELEASE') await markReleased(trx, job.subjectId);
      },
    },
  ],
  async failed(trx, job, error) {
    if (!(await lockRow(trx, job.subjectId))) return;
    // A release that could not publish everything is not a release: the dataset goes back to DRAFT,
    // a transition the audit log records in the name of whoever asked for the release.
    if (sagaType === 'RELEASE') {
      const before = await datasetNow(trx, job.subjectId);
      await setDatasetState(trx, job.subjectId, { status: 'DRAFT' });
      await recordDatasetEvent(trx, actorOfJob(job), 'DATASET_UNRELEASED', job.subjectId, before, await datasetNow(trx, job.subjectId));
    }
    await recordSagaError(trx, job.subjectId, { sagaType, message: error });
  },
});

export function datasetSagas(extra: DatasetSagaSteps = {}): Saga[] {
  return [createSaga, deleteSaga(extra.DELETE ?? []), transitionSaga('RELEASE', extra.RELEASE ?? []), transitionSaga('UNRELEASE', extra.UNRELEASE ?? [])];
}
