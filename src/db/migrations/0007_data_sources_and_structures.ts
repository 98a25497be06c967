import type { Kysely } from 'kysely';
import { runStatements } from '../run-statements.js';

/**
 * Data structures, their versions, and data sources.
 *
 * - A data structure lies in at most one datapool. Deleting that datapool leaves the structure at
 *   tenant level (SET NULL): the datapools module refuses deletes only for the datasets it holds,
 *   and a structure is a description of records, not data to lose.
 * - A version belongs to one structure (its `version` unique within it) and goes with it.
 * - A data source names its version by a foreign key (RESTRICT: the services answer 409
 *   RESOURCE_IN_USE before ever reaching it) and the datapools of a SPECIFIC scope through a join
 *   table. Deleting a datapool that a SPECIFIC scope names drops it from the scope (CASCADE): the
 *   data source then no longer lies in it, and a scope left empty lies in no datapool at all
 *   (it reads back SPECIFIC with no ids; the next PUT or PATCH of the scope must name one).
 * - Assignments gain the foreign keys of the DATASOURCE and DATASTRUCTURE scopes, and the check
 *   `assignments_scope_object` covers all five scope types: an assignment never outlives its object.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `
    create table data_structures (
      id uuid primary key,
      name text not null,
      description text,
      datapool_id uuid references datapools (id) on delete set null,
      created_from_data_source boolean not null default false,
      status text not null default 'DRAFT' check (status in ('DRAFT', 'AVAILABLE')),
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index data_structures_created_at_idx on data_structures (created_at, id);
    create index data_structures_datapool_idx on data_structures (datapool_id) where datapool_id is not null;

    create table data_structure_versions (
      id uuid primary key,
      data_structure_id uuid not null references data_structures (id) on delete cascade,
      version text not null,
      source text not null default 'OWN' check (source in ('OWN')),
      description text,
      model_name text,
      model jsonb,
      styles jsonb not null default '{}'::jsonb,
      status text not null default 'DRAFT' check (status in ('DRAFT', 'AVAILABLE')),
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now(),
      constraint data_structure_versions_version_key unique (data_structure_id, version)
    );

    create table data_sources (
      id uuid primary key,
      name text not null,
      description text,
      connector_type text not null check (connector_type in ('MQTT', 'SQL', 'HTTP')),
      configuration jsonb not null default '{}'::jsonb,
      data_structure_version_id uuid references data_structure_versions (id) on delete restrict,
      datapool_scope_type text not null default 'ALL' check (datapool_scope_type in ('ALL', 'NONE', 'SPECIFIC')),
      status text not null default 'DRAFT' check (status in ('DRAFT', 'AVAILABLE')),
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index data_sources_created_at_idx on data_sources (created_at, id);
    create index data_sources_version_idx on data_sources (data_structure_version_id) where data_structure_version_id is not null;

    create table data_source_datapools (
      data_source_id uuid not null references data_sources (id) on delete cascade,
      datapool_id uuid not null references datapools (id) on delete cascade,
      primary key (data_source_id, datapool_id)
    );
    create index data_source_datapools_datapool_idx on data_source_datapools (datapool_id);

    alter table assignments
      add column datasource_id uuid references data_sources (id) on delete cascade,
      add column datastructure_id uuid references data_structures (id) on delete cascade;
    create index assignments_datasource_idx on assignments (datasource_id) where datasource_id is not null;
    create index assignments_datastructure_idx on assignments (datastructure_id) where datastructure_id is not null;
    alter table assignments drop constraint assignments_scope_object;
    alter table assignments add constraint assignments_scope_object check (
      num_nonnulls(tenant_id, datapool_id, dataset_id, datasource_id, datastructure_id) = 1
      and scope_id = coalesce(tenant_id, datapool_id, dataset_id, datasource_id, datastructure_id)
      and case scope_type
            when 'TENANT' then tenant_id is not null
            when 'DATAPOOL' then datapool_id is not null
            when 'DATASET' then dataset_id is not null
            when 'DATASOURCE' then datasource_id is not null
            when 'DATASTRUCTURE' then datastructure_id is not null
            else false
          end
    );
  `);
}
