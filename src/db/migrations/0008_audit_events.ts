import { sql, type Kysely } from 'kysely';

/**
 * The audit log: who changed datasets, assignments, memberships and role permissions, written by
 * the services in the transaction of the change itself. No foreign keys: an event outlives the
 * user who acted and the object it names.
 *
 * Append-only in the database too, not only by having no write route: a trigger refuses UPDATE,
 * DELETE and TRUNCATE, so that no code path (nor a hurried fix by hand) rewrites history.
 * `occurred_at` is `clock_timestamp()`, not the transaction's start, so that the events of one
 * transaction keep their order.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table audit_events (
      id uuid primary key,
      occurred_at timestamptz not null default clock_timestamp(),
      type text not null check (type in (
        'DATASET_CREATED', 'DATASET_UPDATED', 'DATASET_STAGED', 'DATASET_UNSTAGED', 'DATASET_RELEASED', 'DATASET_UNRELEASED',
        'DATASET_DELETED', 'ASSIGNMENT_CREATED', 'ASSIGNMENT_DELETED', 'GROUP_MEMBERS_CHANGED', 'ROLE_PERMISSIONS_CHANGED',
        'USER_GROUPS_CHANGED')),
      actor_id uuid,
      object_type text not null,
      object_id uuid not null,
      before jsonb,
      after jsonb,
      request_id text
    )`.execute(db);
  await sql`create index audit_events_occurred_at_idx on audit_events (occurred_at, id)`.execute(db);
  await sql`create index audit_events_object_idx on audit_events (object_id, occurred_at)`.execute(db);
  await sql`create index audit_events_actor_idx on audit_events (actor_id, occurred_at)`.execute(db);
  // One statement per call: the function body holds a semicolon that a script splitter would cut at.
  await sql`
    create function audit_events_append_only() returns trigger language plpgsql as $$
    begin
      raise exception 'audit_events is append-only: % refused', tg_op using errcode = 'insufficient_privilege';
    end
    $$`.execute(db);
  await sql`
    create trigger audit_events_no_rewrite before update or delete on audit_events
      for each row execute function audit_events_append_only()`.execute(db);
  await sql`
    create trigger audit_events_no_truncate before truncate on audit_events
      for each statement execute function audit_events_append_only()`.execute(db);
}
