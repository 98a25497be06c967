import { sql } from 'kysely';
import type { Database } from '../../src/db/client.js';
import { ENTITIES } from '../../src/sta/model.js';
import { computedStreamProperty } from '../../src/sta/derived.js';
import { AliasNames, tableOf, type SqlContext } from '../../src/sta/sql-context.js';

/**
 * Every stream's stored derived properties beside the same properties computed from scratch over
 * its Observations (the expression the reads ran before they were stored), as text: a timestamp to
 * the microsecond, the area as its jsonb text.
 */

export interface DerivedComparison {
  /** Streams whose stored values differ from the computed ones, both shown. */
  mismatches: Array<{ set: string; id: number; stored: string[]; computed: string[] }>;
  /** How many streams were compared, and how many of them have observations (a check over empty streams proves little). */
  streams: number;
  observed: number;
  /** How many streams have a stored, non-null observedArea. */
  withArea: number;
}

const STREAMS = [
  { entity: ENTITIES.Datastreams, key: 'datastream_id' },
  { entity: ENTITIES.MultiDatastreams, key: 'multi_datastream_id' },
] as const;

export async function compareDerived(db: Database, schema: string, postgis: boolean): Promise<DerivedComparison> {
  const ctx: SqlContext = { schema, postgis, aliases: new AliasNames() };
  const result: DerivedComparison = { mismatches: [], streams: 0, observed: 0, withArea: 0 };
  for (const { entity, key } of STREAMS) {
    const phenomenon = computedStreamProperty(ctx, 'phenomenonTime', 's', key);
    const resultTime = computedStreamProperty(ctx, 'resultTime', 's', key);
    const area = computedStreamProperty(ctx, 'observedArea', 's', key);
    if (phenomenon.type !== 'interval' || resultTime.type !== 'interval' || area.type !== 'geometry') throw new Error('unexpected property types');
    const text = (expr: unknown) => sql`(${expr})::text`;
    const { rows } = await sql<{ id: string; stored: string[]; computed: string[] }>`
      select s.id,
             array[${text(sql.ref('s.phenomenon_time_start'))}, ${text(sql.ref('s.phenomenon_time_end'))},
                   ${text(sql.ref('s.result_time_start'))}, ${text(sql.ref('s.result_time_end'))}, ${text(sql.ref('s.observed_area'))}] as stored,
             array[${text(phenomenon.start)}, ${text(phenomenon.end)}, ${text(resultTime.start)}, ${text(resultTime.end)},
                   ${postgis ? text(area.sql) : sql`null::text`}] as computed
        from ${tableOf(ctx, entity)} as s order by s.id`.execute(db);
    for (const row of rows) {
      result.streams++;
      if (row.computed[0] !== null) result.observed++;
      if (row.stored[4] !== null) result.withArea++;
      if (JSON.stringify(row.stored) !== JSON.stringify(row.computed)) {
        result.mismatches.push({ set: entity.set, id: Number(row.id), stored: row.stored, computed: row.computed });
      }
    }
  }
  return result;
}
