import type { Kysely } from 'kysely';
import { runStatements } from '../run-statements.js';

/**
 * Identity & access: tenant, permission catalogue, roles, users, groups, datapools, assignments,
 * and the idempotency record of POST requests.
 *
 * Names are unique case-insensitively (unique indexes on lower(name)) because users read
 * "Admins" and "admins" as the same group.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `
    create table tenant (
      id uuid primary key,
      name text not null,
      created_at timestamptz not null default now()
    );

    create table permissions (
      id uuid primary key,
      name text not null unique,
      description text not null,
      permission_type text not null check (permission_type in ('SYSTEM', 'DATA')),
      category text not null check (category in ('TENANT_ADMINISTRATION', 'DATA')),
      source text not null check (source in ('INTERNAL', 'DATASET_DASHBOARD')),
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );

    create table roles (
      id uuid primary key,
      name text not null,
      description text not null default '',
      role_type text not null check (role_type in ('SYSTEM', 'DATA')),
      readonly boolean not null default false,
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create unique index roles_name_key on roles (lower(name));
    create index roles_created_at_idx on roles (created_at, id);

    create table role_permissions (
      role_id uuid not null references roles (id) on delete cascade,
      permission_id uuid not null references permissions (id),
      primary key (role_id, permission_id)
    );

    create table users (
      id uuid primary key,
      email text not null,
      first_name text not null,
      last_name text not null,
      phone text,
      title text not null default 'OTHER' check (title in ('MR', 'MS', 'OTHER')),
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create unique index users_email_key on users (lower(email));
    create index users_created_at_idx on users (created_at, id);

    create table groups (
      id uuid primary key,
      name text not null,
      description text not null default '',
      contact_user_id uuid references users (id) on delete set null,
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create unique index groups_name_key on groups (lower(name));
    create index groups_created_at_idx on groups (created_at, id);
    create index groups_contact_user_idx on groups (contact_user_id);

    create table group_members (
      group_id uuid not null references groups (id) on delete cascade,
      user_id uuid not null references users (id) on delete cascade,
      primary key (group_id, user_id)
    );
    create index group_members_user_idx on group_members (user_id, group_id);

    create table datapools (
      id uuid primary key,
      name text not null,
      description text not null,
      contact_person_id uuid references users (id) on delete set null,
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now()
    );
    create unique index datapools_name_key on datapools (lower(name));
    create index datapools_created_at_idx on datapools (created_at, id);

    -- scope_id is polymorphic (tenant, datapool, dataset, data source or data structure), so it
    -- has no foreign key; the services check it exists and delete assignments with their scope.
    create table assignments (
      id uuid primary key,
      group_id uuid not null references groups (id) on delete cascade,
      role_id uuid not null references roles (id),
      scope_type text not null check (scope_type in ('TENANT', 'DATASTRUCTURE', 'DATASOURCE', 'DATASET', 'DATAPOOL')),
      scope_id uuid not null,
      created_at timestamptz not null default now(),
      modified_at timestamptz not null default now(),
      unique (group_id, role_id, scope_type, scope_id)
    );
    create index assignments_role_idx on assignments (role_id);
    create index assignments_scope_idx on assignments (scope_id, scope_type);
    create index assignments_created_at_idx on assignments (created_at, id);

    create table idempotency_keys (
      caller text not null,
      key text not null,
      -- sha-256 of method, URL and body: the same key with another request answers 409
      request_hash text not null,
      status integer not null,
      headers jsonb not null,
      body text not null,
      created_at timestamptz not null default now(),
      primary key (caller, key)
    );
    create index idempotency_keys_created_at_idx on idempotency_keys (created_at);
  `);
}
