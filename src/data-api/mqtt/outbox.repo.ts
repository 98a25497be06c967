import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import type { RenderedChange } from './renderer.js';

/** The SQL of the MQTT outbox and of the routes wanted (see migration 0024, outbox.ts, interest.ts). */

export interface OutboxRow {
  id: string;
  dataset_id: string;
  slug: string;
  entity_set: string;
  entity_id: string;
  kind: 'create' | 'update';
  properties: string[] | null;
  body: string;
  link_ids: Record<string, number>;
  /** How long ago the row was written, by the database's clock. */
  age_ms: number;
}

/** Writes rendered changes, in their order, in one statement. */
export async function insertOutbox(db: Database, changes: readonly RenderedChange[]): Promise<void> {
  const rows = changes.map((change) => sql`(${change.datasetId}::uuid, ${change.slug}, ${change.entitySet}, ${change.id}, ${change.kind},
    ${change.properties ? JSON.stringify(change.properties) : null}::jsonb, ${change.text}, ${JSON.stringify(change.linkIds)}::jsonb)`);
  await sql`insert into mqtt_outbox (dataset_id, slug, entity_set, entity_id, kind, properties, body, link_ids)
    values ${sql.join(rows)}`.execute(db);
}

/** The last id written so far (a reader starts after it). */
export async function outboxEnd(db: Database): Promise<bigint> {
  const { rows } = await sql<{ last: string | null }>`select max(id)::text as last from mqtt_outbox`.execute(db);
  return BigInt(rows[0]?.last ?? '0');
}

/**
 * The rows after `after`, and those of `gaps` (ids skipped by an earlier read: written by a
 * transaction that had not committed yet), in id order, at most `limit`.
 */
export async function readOutbox(db: Database, after: bigint, gaps: readonly bigint[], limit: number): Promise<OutboxRow[]> {
  const { rows } = await sql<OutboxRow>`
    select id::text, dataset_id, slug, entity_set, entity_id::text, kind, properties, body, link_ids,
           (extract(epoch from clock_timestamp() - created_at) * 1000)::float8 as age_ms
      from mqtt_outbox
     where id > ${String(after)}::bigint ${gaps.length > 0 ? sql`or id = any(${gaps.map(String)}::bigint[])` : sql``}
     order by mqtt_outbox.id -- the number: \`id\` alone would be the text of the select list
     limit ${limit}`.execute(db);
  return rows;
}

/** Removes what every reader has had time to read. */
export async function pruneOutbox(db: Database, olderThanMs: number): Promise<number> {
  const result = await sql`delete from mqtt_outbox where created_at < now() - make_interval(secs => ${olderThanMs / 1000})`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

export interface InterestRow { route_prefix: string }

export async function noteInterest(db: Database, processId: string, routePrefix: string): Promise<void> {
  await sql`insert into mqtt_interest (process_id, route_prefix) values (${processId}::uuid, ${routePrefix})
    on conflict (process_id, route_prefix) do update set seen_at = now()`.execute(db);
}

/** Removes one prefix of the process, or all of them (`null`). */
export async function forgetInterest(db: Database, processId: string, routePrefix: string | null): Promise<void> {
  await sql`delete from mqtt_interest where process_id = ${processId}::uuid
    ${routePrefix === null ? sql`` : sql`and route_prefix = ${routePrefix}`}`.execute(db);
}

/** Notes the process's prefixes again (a row lost comes back) and drops any it no longer has. */
export async function refreshInterest(db: Database, processId: string, routePrefixes: readonly string[]): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await sql`delete from mqtt_interest where process_id = ${processId}::uuid and not (route_prefix = any(${routePrefixes}::text[]))`.execute(trx);
    await sql`insert into mqtt_interest (process_id, route_prefix) select ${processId}::uuid, unnest(${routePrefixes}::text[])
      on conflict (process_id, route_prefix) do update set seen_at = now()`.execute(trx);
  });
}

/** The prefixes some live process (one that refreshed within `staleMs`) has a subscriber under. */
export async function routesWanted(db: Database, staleMs: number): Promise<InterestRow[]> {
  const { rows } = await sql<InterestRow>`select distinct route_prefix from mqtt_interest
    where seen_at > now() - make_interval(secs => ${staleMs / 1000})`.execute(db);
  return rows;
}
