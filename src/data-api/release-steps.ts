import type { Database } from '../db/client.js';
import type { SagaStep } from '../jobs/saga-runner.js';
import type { StaServer } from '../sta/types.js';
import type { FeatureStore } from '../ows/types.js';

/** What the payload side needs to know of a dataset at release, supplied by the process wiring. */
export interface ReleaseFacts {
  namedApiStandardsOf(trx: Database, datasetId: string): Promise<Array<'OWS' | 'STA'>>;
  storageSchemaOf(datasetId: string): string;
}

/** The payload servers whose storage a release prepares. */
export interface PayloadServers {
  sta: StaServer;
  features: FeatureStore;
}

/**
 * The payload's steps of a dataset's RELEASE saga: a dataset with a SensorThings API gets its
 * entity tables, one with an OWS API its feature collection catalogue (idempotent, and kept
 * through unrelease: the data stays with the dataset). Without PostGIS the OWS step does nothing,
 * so that releases still work on PGlite; the OWS API then answers 503 naming what it needs. The
 * route itself appears when the saga finishes (the `gateway_routes` view waits for it).
 */
export function payloadReleaseSteps(servers: PayloadServers, facts: ReleaseFacts): { RELEASE: SagaStep[] } {
  return {
    RELEASE: [{
      name: 'provision payload storage',
      async run(trx, job) {
        const standards = await facts.namedApiStandardsOf(trx, job.subjectId);
        const schema = facts.storageSchemaOf(job.subjectId);
        if (standards.includes('STA')) await servers.sta.provision(trx, schema);
        if (standards.includes('OWS') && servers.features.available) await servers.features.provision(trx, schema);
      },
    }],
  };
}
