import type { Database } from '../../db/client.js';
import type { AppError } from '../../errors.js';

/**
 * Something that refers to data sources by id: pipelines read them. The contract lets a DRAFT
 * pipeline name a data source that does not exist (stage and release report it), so no foreign
 * key can hold the reference. The module that refers registers this check instead (app.ts wires
 * it into `SourcesContext.referrers`), and this module imports none of its referrers.
 */
export interface DataSourceReferrer {
  /** Of these data sources, the ones it refers to (what `inUse` shows). */
  referenced(db: Database, ids: readonly string[]): Promise<ReadonlySet<string>>;
  /** The 409 RESOURCE_IN_USE, naming what refers to the data source, that refuses its deletion; null when nothing does. */
  refusal(db: Database, id: string): Promise<AppError | null>;
}

/** The data sources among `ids` that any referrer refers to. */
export async function referencedSources(referrers: readonly DataSourceReferrer[], db: Database, ids: readonly string[]): Promise<Set<string>> {
  const referenced = new Set<string>();
  if (ids.length === 0) return referenced;
  for (const referrer of referrers) for (const id of await referrer.referenced(db, ids)) referenced.add(id);
  return referenced;
}

/** Throws the first referrer's refusal, if one refers to the data source. */
export async function assertUnreferenced(referrers: readonly DataSourceReferrer[], db: Database, id: string): Promise<void> {
  for (const referrer of referrers) {
    const refusal = await referrer.refusal(db, id);
    if (refusal) throw refusal;
  }
}
