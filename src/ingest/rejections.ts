import { randomUUID } from 'node:crypto';
import { Buffer } from 'node:buffer';
import { sql } from 'kysely';
import type { Database } from '../db/client.js';

/**
 * Records a pipeline could not write, kept for its operators: 7 days or the newest 10,000 per
 * pipeline, whichever is fewer. A rejection never stops the pipeline; it is stored in the same
 * transaction as the batch it came with, so a redelivered batch does not reject twice.
 */

export const MAX_RECORD_BYTES = 64 * 1024;
export const KEEP_DAYS = 7;
export const KEEP_PER_PIPELINE = 10_000;

export interface Rejection {
  dataSourceId: string | null;
  receivedAt: Date;
  reason: string;
  field: string | null;
  /** The record as received (a JSON value), or the payload's text when it was not JSON. */
  record: unknown;
}

/** The record as stored: its JSON when that fits in 64 KiB, else the start of that JSON as a string. */
export function storedRecord(record: unknown): string {
  const json = JSON.stringify(record === undefined ? null : record);
  if (Buffer.byteLength(json, 'utf8') <= MAX_RECORD_BYTES) return json;
  // Cut by bytes, then drop a partial character at the end; the cut text is a JSON string.
  const cut = Buffer.from(json, 'utf8').subarray(0, MAX_RECORD_BYTES - 64).toString('utf8').replace(/\uFFFD$/, '');
  return JSON.stringify(cut);
}

export async function insertRejections(trx: Database, pipelineId: string, rejections: readonly Rejection[]): Promise<void> {
  if (rejections.length === 0) return;
  await trx.insertInto('pipeline_rejections').values(rejections.map((r) => ({
    id: randomUUID(),
    pipeline_id: pipelineId,
    data_source_id: r.dataSourceId,
    received_at: r.receivedAt,
    reason: r.reason.slice(0, 2000),
    field: r.field,
    record: storedRecord(r.record),
  }))).execute();
}

/** Removes what is older than 7 days and beyond the newest 10,000 of the pipeline. */
export async function pruneRejections(db: Database, pipelineId: string): Promise<void> {
  await sql`delete from pipeline_rejections where pipeline_id = ${pipelineId}
    and (received_at < now() - make_interval(days => ${KEEP_DAYS})
      or (received_at, id) < (
        select received_at, id from pipeline_rejections where pipeline_id = ${pipelineId}
        order by received_at desc, id desc offset ${KEEP_PER_PIPELINE - 1} limit 1))`.execute(db);
}

export interface RejectionView {
  id: string;
  receivedAt: string;
  dataSourceId: string | null;
  reason: string;
  field: string | null;
  record: unknown;
}

/** One page of a pipeline's rejections, newest first, with the total (for the Page envelope). */
export async function rejectionPage(db: Database, pipelineId: string, page: { offset: number; limit: number }): Promise<{ items: RejectionView[]; total: number }> {
  const [rows, count] = await Promise.all([
    db.selectFrom('pipeline_rejections').select(['id', 'received_at', 'data_source_id', 'reason', 'field', 'record'])
      .where('pipeline_id', '=', pipelineId)
      .where('received_at', '>=', sql<Date>`now() - make_interval(days => ${KEEP_DAYS})`)
      .orderBy('received_at', 'desc').orderBy('id', 'desc')
      .offset(page.offset).limit(page.limit).execute(),
    db.selectFrom('pipeline_rejections').select((eb) => eb.fn.countAll<string>().as('n'))
      .where('pipeline_id', '=', pipelineId)
      .where('received_at', '>=', sql<Date>`now() - make_interval(days => ${KEEP_DAYS})`)
      .executeTakeFirstOrThrow(),
  ]);
  return {
    total: Math.min(Number(count.n), KEEP_PER_PIPELINE),
    items: rows.map((row) => ({
      id: row.id, receivedAt: new Date(row.received_at).toISOString(), dataSourceId: row.data_source_id,
      reason: row.reason, field: row.field, record: row.record,
    })),
  };
}
