import type { Kysely } from 'kysely';
import { runStatements } from '../run-statements.js';

/**
 * Personal access tokens: long-lived secrets for the data API's clients that cannot obtain an
 * OpenID Connect token (desktop GIS over HTTP Basic, sensors over MQTT, scripts). Only the SHA-256
 * digest of a secret is kept (hex); the secret itself is shown once, when the token is created.
 *
 * `dataset_ids` narrows a token to these datasets (null: not narrowed). An array rather than a
 * join table with foreign keys: deleting a dataset must never turn a narrowed token into an
 * unnarrowed one (an emptied join table would read as "no narrowing").
 *
 * Deleting a token, or changing what it stands for, moves the access version (0014) at commit, so
 * that every process's caller cache drops what it knew about it on its next request. Writes of
 * `last_used_at` (at most one a minute per token) do not: they change nobody's rights.
 *
 * The audit log learns TOKEN_CREATED and TOKEN_DELETED.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `
    create table personal_access_tokens (
      id uuid primary key,
      user_id uuid not null references users (id) on delete cascade,
      name text not null check (char_length(name) between 1 and 100),
      token_hash text not null unique check (token_hash ~ '^[0-9a-f]{64}$'),
      dataset_ids uuid[],
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      last_used_at timestamptz
    );
    create index personal_access_tokens_user_idx on personal_access_tokens (user_id, created_at, id);
    create constraint trigger personal_access_tokens_access_version
      after delete or update of user_id, token_hash, dataset_ids, expires_at on personal_access_tokens
      deferrable initially deferred for each row execute function bump_access_version_at_commit();
    alter table audit_events drop constraint audit_events_type_check;
    alter table audit_events add constraint audit_events_type_check check (type in (
      'DATASET_CREATED', 'DATASET_UPDATED', 'DATASET_STAGED', 'DATASET_UNSTAGED', 'DATASET_RELEASED', 'DATASET_UNRELEASED',
      'DATASET_DELETED', 'ASSIGNMENT_CREATED', 'ASSIGNMENT_DELETED', 'GROUP_MEMBERS_CHANGED', 'ROLE_PERMISSIONS_CHANGED',
      'USER_GROUPS_CHANGED', 'TOKEN_CREATED', 'TOKEN_DELETED'));
  `);
}
