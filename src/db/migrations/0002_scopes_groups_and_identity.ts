import type { Kysely } from 'kysely';
import { runStatements } from '../run-statements.js';

/**
 * 1. An assignment can never point at a missing object: besides the polymorphic `scope_id` it
 *    carries one nullable foreign-key column per scope type, exactly the one of its scope type is
 *    set (and equals `scope_id`), and deleting the object deletes its assignments with it
 *    (ON DELETE CASCADE, in the deleting transaction). The columns of datasets, data sources and
 *    data structures join this check when their tables come.
 * 2. Groups form a tree (Keycloak's subgroups): members of a group hold the assignments of the
 *    group and of every ancestor. A group with subgroups cannot be deleted (RESTRICT): moving or
 *    deleting them first is the caller's explicit decision.
 * 3. Users: `active` (an inactive user holds no permission) and `external_id`, the identity
 *    provider's subject, unique when set.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `
    -- Assignments on objects that no longer exist administer nothing; they could only have been
    -- left by the race this migration closes.
    delete from assignments a
     where (a.scope_type = 'DATAPOOL' and not exists (select 1 from datapools d where d.id = a.scope_id))
        or (a.scope_type = 'TENANT' and not exists (select 1 from tenant t where t.id = a.scope_id))
        or a.scope_type in ('DATASET', 'DATASOURCE', 'DATASTRUCTURE');

    alter table assignments
      add column tenant_id uuid references tenant (id) on delete cascade,
      add column datapool_id uuid references datapools (id) on delete cascade;
    update assignments set tenant_id = scope_id where scope_type = 'TENANT';
    update assignments set datapool_id = scope_id where scope_type = 'DATAPOOL';
    alter table assignments add constraint assignments_scope_object check (
      num_nonnulls(tenant_id, datapool_id) = 1
      and scope_id = coalesce(tenant_id, datapool_id)
      and case scope_type
            when 'TENANT' then tenant_id is not null
            when 'DATAPOOL' then datapool_id is not null
            else false
          end
    );
    create index assignments_datapool_idx on assignments (datapool_id) where datapool_id is not null;

    alter table groups add column parent_group_id uuid references groups (id) on delete restrict;
    alter table groups add constraint groups_not_own_parent check (parent_group_id <> id);
    create index groups_parent_idx on groups (parent_group_id) where parent_group_id is not null;

    alter table users
      add column active boolean not null default true,
      add column external_id text;
    create unique index users_external_id_key on users (external_id) where external_id is not null;
  `);
}
