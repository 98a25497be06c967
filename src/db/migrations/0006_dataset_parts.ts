import type { Kysely } from 'kysely';
import { runStatements } from '../run-statements.js';

/**
 * The parts of a dataset that only change while it is DRAFT: its styles (SLD documents), its
 * mappings (versioned JSON documents named by URN) and its pipelines. They go with the dataset.
 *
 * A pipeline names its data sources and its mapping by reference without a foreign key: the
 * contract lets a DRAFT configuration be incomplete, and stage and release validate the
 * references (every problem at once, 422). The data sources module reads `data_source_ids` to
 * refuse deleting a data source still in use.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `
    create table dataset_styles (
      id uuid primary key,
      dataset_id uuid not null references datasets (id) on delete cascade,
      name text not null,
      sld_content text not null,
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now(),
      unique (dataset_id, name)
    );
    create index dataset_styles_created_at_idx on dataset_styles (dataset_id, created_at, id);

    create table dataset_mappings (
      dataset_id uuid not null references datasets (id) on delete cascade,
      name text not null,
      version integer not null check (version >= 1),
      content jsonb not null,
      created_at timestamptz not null default now(),
      primary key (dataset_id, name, version)
    );

    create table pipelines (
      id uuid primary key,
      dataset_id uuid not null references datasets (id) on delete cascade,
      name text not null,
      description text not null default '',
      data_source_ids uuid[] not null default '{}',
      mapping_ref text,
      named_api_slug text,
      schedule text,
      runtime_status jsonb,
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index pipelines_dataset_idx on pipelines (dataset_id, created_at, id);
    create index pipelines_data_sources_idx on pipelines using gin (data_source_ids);
  `);
}
