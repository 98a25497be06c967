import type { Kysely } from 'kysely';
import { runStatements } from '../run-statements.js';

/**
 * The DCAT-AP catalogue's view of a dataset: its `catalogue` metadata (licence, keywords, themes,
 * …, a JSON object merge patches build), when it was first released (`dct:issued`) and when its
 * record last changed (`dct:modified`: a metadata change or a release). The partial indexes serve
 * the catalogue's pages, which list the released open datasets in the order of their first release,
 * and its Last-Modified, the latest change of any record it holds or held.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `
    alter table datasets add column catalogue jsonb not null default '{}'::jsonb;
    alter table datasets add column first_released_at timestamptz;
    alter table datasets add column record_modified_at timestamptz not null default now();
    update datasets set record_modified_at = modified_at;
    update datasets set first_released_at = modified_at where status = 'AVAILABLE';
    create index datasets_in_catalogue on datasets (first_released_at, id)
      where status = 'AVAILABLE' and pending_saga_type is null and open_data_access;
    create index datasets_record_modified on datasets (record_modified_at) where first_released_at is not null;
  `);
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(db, `
    drop index if exists datasets_record_modified;
    drop index if exists datasets_in_catalogue;
    alter table datasets drop column record_modified_at;
    alter table datasets drop column first_released_at;
    alter table datasets drop column catalogue;
  `);
}
