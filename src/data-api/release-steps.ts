import type { Database } from '../db/client.js';
import type { SagaStep } from '../jobs/saga-runner.js';
import type { StaServer } from '../sta/types.js';

/** What the payload side needs to know of a dataset at release, supplied by the process wiring. */
export interface ReleaseFacts {
  namedApiStandardsOf(trx: Database, datasetId: string): Promise<Array<'OWS' | 'STA'>>;
  storageSchemaOf(datasetId: string): string;
}

/**
 * The payload's steps of a dataset's RELEASE saga: a dataset with a SensorThings API gets its
 * entity tables (idempotent, and kept through unrelease: the data stays with the dataset). The
 * route itself appears when the saga finishes (the `gateway_routes` view waits for it).
 */
export function payloadReleaseSteps(sta: StaServer, facts: ReleaseFacts): { RELEASE: SagaStep[] } {
  return {
    RELEASE: [{
      name: 'provision SensorThings storage',
      async run(trx, job) {
        if ((await facts.namedApiStandardsOf(trx, job.subjectId)).includes('STA')) await sta.provision(trx, facts.storageSchemaOf(job.subjectId));
      },
    }],
  };
}
