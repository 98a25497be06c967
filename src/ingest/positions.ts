import type { Database } from '../db/client.js';

/** Where a pipeline stands in a data source (an SQL cursor), saved with the writes it led to. */

export async function loadPosition(db: Database, pipelineId: string, dataSourceId: string): Promise<unknown> {
  const row = await db.selectFrom('pipeline_positions').select('position')
    .where('pipeline_id', '=', pipelineId).where('data_source_id', '=', dataSourceId).executeTakeFirst();
  return row?.position;
}

export async function savePosition(trx: Database, pipelineId: string, dataSourceId: string, position: unknown): Promise<void> {
  const json = JSON.stringify(position);
  await trx.insertInto('pipeline_positions')
    .values({ pipeline_id: pipelineId, data_source_id: dataSourceId, position: json })
    .onConflict((oc) => oc.columns(['pipeline_id', 'data_source_id']).doUpdateSet({ position: json, updated_at: new Date() }))
    .execute();
}
