import type { Database } from '../../db/client.js';
import type { AppError } from '../../errors.js';

/**
 * Something that refers to a dataset's mappings by URN: pipelines do (`mappingRef`). A DRAFT
 * pipeline may name a mapping that does not exist yet (stage and release report it), so no
 * foreign key can hold the reference. The module that refers registers this check (app.ts), and
 * this module imports none of its referrers.
 */
export interface MappingReferrer {
  /**
   * The 409 RESOURCE_IN_USE, naming what refers to one of these URNs (the logical URN or the
   * versions a delete would remove), that refuses the delete; null when nothing does.
   */
  refusal(db: Database, datasetId: string, urns: readonly string[]): Promise<AppError | null>;
}
