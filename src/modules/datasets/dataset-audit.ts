import type { Database } from '../../db/client.js';
import { recordEvent, SYSTEM_ACTOR, type Actor, type AuditChange } from '../audit/index.js';
import type { Job } from '../../jobs/saga-runner.js';
import { loadDatasets } from './datasets.repo.js';
import type { Dataset } from './datasets.schemas.js';

/** What the audit log keeps of a dataset: its metadata, status and named APIs (not saga bookkeeping). */
const auditStateOf = (dataset: Dataset) => ({
  name: dataset.name, description: dataset.description, datapoolId: dataset.datapool?.id ?? null, openDataAccess: dataset.openDataAccess,
  dataSetStatus: dataset.dataSetStatus, namedApis: dataset.namedApis,
});

/** A dataset event from `before` to `after` (null: it did not exist, or no longer does); none when nothing changed. */
export const recordDatasetEvent = (trx: Database, actor: Actor, type: AuditChange['type'], id: string, before: Dataset | null, after: Dataset | null) =>
  recordEvent(trx, actor, { type, objectType: 'DATASET', objectId: id, before: before && auditStateOf(before), after: after && auditStateOf(after) });

/** The dataset as the audit log sees it now (the public URL plays no part, hence no data API URL). */
export const datasetNow = async (trx: Database, id: string): Promise<Dataset | null> => (await loadDatasets(trx, [id], ''))[0] ?? null;

/** The payload that carries who asked for a saga, so that its own changes are recorded in their name. */
export const actorPayload = (actor: Actor): Record<string, unknown> => ({ actorId: actor.actorId, requestId: actor.requestId });

/** Who asked for a saga's job (jobs enqueued before the actor was carried: the system). */
export const actorOfJob = (job: Job<Partial<Actor>>): Actor =>
  ({ actorId: job.payload.actorId ?? SYSTEM_ACTOR.actorId, requestId: job.payload.requestId ?? SYSTEM_ACTOR.requestId });
