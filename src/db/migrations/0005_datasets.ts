import type { Kysely } from 'kysely';
import { runStatements } from '../run-statements.js';

/**
 * Datasets and their named APIs. A dataset lives in at most one datapool (a datapool that still
 * holds datasets cannot be deleted: RESTRICT). Its storage is a PostgreSQL schema of its own,
 * created by the CREATE saga (`provisioned`); `pending_saga_type` names the saga under way, and
 * `saga_error` what made the last one give up.
 *
 * Assignments gain the foreign key of the DATASET scope: deleting a dataset deletes them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `
    create table datasets (
      id uuid primary key,
      name text not null,
      description text not null,
      datapool_id uuid references datapools (id) on delete restrict,
      created_by uuid references users (id) on delete set null,
      open_data_access boolean not null default false,
      status text not null default 'DRAFT' check (status in ('DRAFT', 'READY', 'AVAILABLE')),
      pending_saga_type text check (pending_saga_type in ('CREATE', 'DELETE', 'RELEASE', 'UNRELEASE')),
      provisioned boolean not null default false,
      saga_error jsonb,
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create index datasets_created_at_idx on datasets (created_at, id);
    create index datasets_datapool_idx on datasets (datapool_id, created_at, id);

    create table dataset_named_apis (
      dataset_id uuid not null references datasets (id) on delete cascade,
      position integer not null,
      slug text not null,
      name text not null,
      standard text not null check (standard in ('OWS', 'STA')),
      version text,
      description text,
      primary key (dataset_id, slug)
    );

    alter table assignments add column dataset_id uuid references datasets (id) on delete cascade;
    create index assignments_dataset_idx on assignments (dataset_id) where dataset_id is not null;
    alter table assignments drop constraint assignments_scope_object;
    alter table assignments add constraint assignments_scope_object check (
      num_nonnulls(tenant_id, datapool_id, dataset_id) = 1
      and scope_id = coalesce(tenant_id, datapool_id, dataset_id)
      and case scope_type
            when 'TENANT' then tenant_id is not null
            when 'DATAPOOL' then datapool_id is not null
            when 'DATASET' then dataset_id is not null
            else false
          end
    );
  `);
}
