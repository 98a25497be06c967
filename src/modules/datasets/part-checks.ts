import type { Database } from '../../db/client.js';
import type { FieldError } from '../../errors.js';
import type { Dataset } from './datasets.schemas.js';

/**
 * What a part of a dataset (its pipelines, say) adds to the validation of stage and release.
 * The parts depend on `datasets`, never the reverse: the process wiring (app.ts) hands their
 * checks to this module in `DatasetsContext.partChecks`, as runtime.ts hands it their saga steps
 * (`DatasetSagaSteps`).
 */
export interface DatasetPartCheck {
  /**
   * Every problem of this part, each named by its field (`pipelines[0].mappingRef`), or none.
   * Runs inside the transition's transaction, the dataset row locked.
   */
  problems(trx: Database, dataset: Dataset, purpose: 'stage' | 'release'): Promise<FieldError[]>;
}
