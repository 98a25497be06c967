import type { Kysely } from 'kysely';
import { runStatements } from '../run-statements.js';

/**
 * MQTT across replicas on PostgreSQL alone (contract "MQTT across replicas"): the process that
 * commits a SensorThings change renders its message once and leaves it in `mqtt_outbox`; every
 * process with a broker reads the rows after the last it read (woken by a coalesced NOTIFY, polled
 * as a fallback) and delivers them to its own subscribers. `mqtt_interest` says which routes (by
 * their topic prefix) have a subscriber on some process, so that a writer renders only what someone may receive; a process
 * refreshes its rows while it runs, and rows not refreshed for a while are ignored (a process
 * that died). Both are UNLOGGED: MQTT notifications are best effort, and a crash of the database
 * losing a few seconds of them costs less than writing every message to the WAL.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await runStatements(db, `
    create unlogged table mqtt_outbox (
      id bigserial primary key,
      created_at timestamptz not null default now(),
      dataset_id uuid not null,
      slug text not null,
      entity_set text not null,
      entity_id bigint not null,
      kind text not null check (kind in ('create', 'update')),
      properties jsonb,
      body text not null,
      link_ids jsonb not null
    );
    create index mqtt_outbox_created_idx on mqtt_outbox (created_at);
    create unlogged table mqtt_interest (
      process_id uuid not null,
      route_prefix text not null,
      seen_at timestamptz not null default now(),
      primary key (process_id, route_prefix)
    );
  `);
}

export async function down(db: Kysely<any>): Promise<void> {
  await runStatements(db, 'drop table mqtt_interest; drop table mqtt_outbox;');
}
