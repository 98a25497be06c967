import { sql } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { Database } from '../db/client.js';
import type { MappedRecord, PayloadWriter, WriteOutcome, WriteResult } from '../ingest/types.js';
import { ENTITIES } from './model.js';
import { AliasNames, tableOf } from './sql-context.js';
import { lockStreams } from './derived.js';
import { announceChanges, type Change, type WriteContext } from './write-sql.js';
import { isFault, parseRecords, type ObservationRow } from './pipeline-records.js';
import { resolveDatastreams, resolveFeatures, storeAll, type Known, type PendingObservation, type Reject } from './pipeline-links.js';

/**
 * The SensorThings writer of pipelines: each mapped record becomes one Observation of the
 * dataset's STA API (see pipeline-records.ts for what a record may hold), inside the runtime's
 * transaction. A record that is not valid is rejected alone; one already stored (same Datastream,
 * same phenomenonTime start and end), or met earlier in the batch, is a duplicate and is not
 * written again: a redelivered record is stored once.
 *
 * A batch costs a few statements whatever its size: one look-up per kind (Datastreams by id, by
 * name, FeaturesOfInterest, duplicates), one insert of all its Observations. What a look-up
 * found is kept per schema (Datastream ids by name, known ids, inline features) for the next
 * batches, but only once the transaction that learned it committed: a Datastream created in a
 * transaction that was rolled back is not remembered.
 */

export interface ObservationWriterDeps {
  postgis: boolean;
  /** Told of every entity created, once the transaction committed (the MQTT change feed). */
  onChange?: (change: Change) => void;
}

const SCHEMAS_CACHED = 64;
const ENTRIES_PER_SCHEMA = 10_000;
// A Datastream renamed through the API is looked up again by name within this time (a deleted one
// is noticed at once: see `storeRecords`).
const CACHE_TTL_MS = 5 * 60_000;
const FOREIGN_KEY_VIOLATION = '23503';

const rejected = (field: string | null, reason: string): WriteOutcome => ({ outcome: 'rejected', field, reason });

export function createObservationWriter(deps: ObservationWriterDeps): PayloadWriter {
  const caches = new LRUCache<string, LRUCache<string, number>>({ max: SCHEMAS_CACHED });
  const cacheOf = (schema: string) => {
    let cache = caches.get(schema);
    if (!cache) {
      cache = new LRUCache<string, number>({ max: ENTRIES_PER_SCHEMA, ttl: CACHE_TTL_MS });
      caches.set(schema, cache);
    }
    return cache;
  };

  return {
    prepare: (records) => parseRecords(records),
    async write(trx: Database, schema: string, records: readonly MappedRecord[], prepared?: unknown): Promise<WriteResult> {
      const outcomes: (WriteOutcome | undefined)[] = records.map(() => undefined);
      const rows: { index: number; row: ObservationRow }[] = [];
      const parsedRecords = (prepared as ReturnType<typeof parseRecords> | undefined) ?? parseRecords(records);
      records.forEach((_record, index) => {
        const parsed = parsedRecords[index]!;
        if (isFault(parsed)) outcomes[index] = rejected(parsed.field, parsed.reason);
        else rows.push({ index, row: parsed });
      });
      const w: WriteContext = { trx, ctx: { schema, postgis: deps.postgis, aliases: new AliasNames() }, changes: [] };
      const learned = new Map<string, number>();
      if (rows.length > 0) {
        await storeRecords(w, rows, outcomes, learned, cacheOf(schema), () => caches.delete(schema));
      }
      return {
        outcomes: outcomes.map((outcome) => outcome ?? rejected(null, 'the record was not handled')),
        committed() {
          const cache = cacheOf(schema);
          for (const [key, id] of learned) cache.set(key, id);
          announceChanges(deps.onChange, w.changes);
        },
        rolledBack() {
          learned.clear();
        },
      };
    },
  };
}

/**
 * Resolves and inserts. The cache may name a Datastream or FeatureOfInterest deleted through the
 * API since: the insert then fails on its foreign key (undone by its savepoint), and the batch is
 * resolved once more from the database alone.
 */
async function storeRecords(
  w: WriteContext, rows: { index: number; row: ObservationRow }[], outcomes: (WriteOutcome | undefined)[],
  learned: Map<string, number>, cache: LRUCache<string, number>, forgetSchema: () => void,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const trustCache = attempt === 1;
    const known: Known = {
      get: (key) => learned.get(key) ?? (trustCache ? cache.get(key) : undefined),
      learn: (key, id) => void learned.set(key, id),
    };
    const attemptOutcomes = new Map<number, WriteOutcome>();
    try {
      await storeOnce(w, known, rows.map(({ index, row }) => ({ index, row })), attemptOutcomes);
    } catch (error) {
      if (attempt > 1 || (error as { code?: unknown } | null)?.code !== FOREIGN_KEY_VIOLATION) throw error;
      forgetSchema();
      continue;
    }
    for (const [index, outcome] of attemptOutcomes) outcomes[index] = outcome;
    return;
  }
}

async function storeOnce(w: WriteContext, known: Known, items: PendingObservation[], outcomes: Map<number, WriteOutcome>) {
  const reject: Reject = (item, field, reason) => outcomes.set(item.index, rejected(field, reason));
  const pending = () => items.filter((item) => !outcomes.has(item.index));
  const created = await resolveDatastreams(w, known, items, reject);
  // Before features: a redelivered record must not create anything either.
  await markStoredDuplicates(w, pending().filter((item) => !created.has(item.datastreamId!)), outcomes);
  await resolveFeatures(w, known, pending(), reject);
  await insertObservations(w, pending(), outcomes);
}

const keyOf = (item: PendingObservation) => `${item.datastreamId}/${item.row.phenomenonStart}/${item.row.phenomenonEnd}`;

/** One statement for the batch, answered from the index on (datastream_id, phenomenon_time_start). */
async function markStoredDuplicates(w: WriteContext, items: PendingObservation[], outcomes: Map<number, WriteOutcome>) {
  const keys = new Map<string, PendingObservation>();
  for (const item of items) if (!keys.has(keyOf(item))) keys.set(keyOf(item), item);
  if (keys.size === 0) return;
  const candidates = [...keys.values()];
  const { rows } = await sql<{ i: number | string }>`select k.i
    from unnest(${candidates.map((item) => item.datastreamId!)}::bigint[], ${candidates.map((item) => item.row.phenomenonStart)}::timestamptz[],
      ${candidates.map((item) => item.row.phenomenonEnd)}::timestamptz[]) with ordinality as k(datastream_id, start_time, end_time, i)
    cross join lateral (select 1 from ${tableOf(w.ctx, ENTITIES.Observations)} as o
      where o.datastream_id = k.datastream_id and o.phenomenon_time_start = k.start_time and o.phenomenon_time_end = k.end_time
      limit 1) as stored`.execute(w.trx);
  // A lateral look-up with a limit, not an EXISTS: the planner may turn an EXISTS over the
  // parameter arrays into a hash join that scans the whole table, which measured 83 ms per
  // batch of 1,000 at 200,000 Observations and grew with the table; this stays one index probe per key.
  const stored = new Set(rows.map((row) => keyOf(candidates[Number(row.i) - 1]!)));
  for (const item of items) if (stored.has(keyOf(item))) outcomes.set(item.index, { outcome: 'duplicate' });
}

async function insertRows(w: WriteContext, items: readonly PendingObservation[]): Promise<number[]> {
  const column = <T>(value: (row: ObservationRow) => T) => items.map((item) => value(item.row));
  const { rows } = await sql<{ id: number | string }>`insert into ${tableOf(w.ctx, ENTITIES.Observations)}
    (datastream_id, feature_of_interest_id, phenomenon_time_start, phenomenon_time_end, result_time,
     result, result_quality, valid_time_start, valid_time_end, parameters)
    select * from unnest(${items.map((item) => item.datastreamId!)}::bigint[], ${items.map((item) => item.featureId!)}::bigint[],
      ${column((r) => r.phenomenonStart)}::timestamptz[], ${column((r) => r.phenomenonEnd)}::timestamptz[],
      ${column((r) => r.resultTime)}::timestamptz[], ${column((r) => r.result)}::jsonb[], ${column((r) => r.resultQuality)}::jsonb[],
      ${column((r) => r.validStart)}::timestamptz[], ${column((r) => r.validEnd)}::timestamptz[], ${column((r) => r.parameters)}::jsonb[])
    returning id`.execute(w.trx);
  // RETURNING gives the rows in the order the select produced them, the order of the arrays.
  return rows.map((row) => Number(row.id));
}

/**
 * The first record of each key is inserted, the later ones are duplicates of it. Normally one
 * statement; when a value is refused by the database (a date PostgreSQL cannot hold), row by row,
 * and a later record of a refused one's key gets its own chance.
 */
async function insertObservations(w: WriteContext, items: PendingObservation[], outcomes: Map<number, WriteOutcome>) {
  // Their streams locked at once, in one order, before the statements (see lockStreams).
  if (items.length > 0) await lockStreams(w.trx, w.ctx, items.map((item) => item.datastreamId), []);
  const written = new Set<string>();
  let queue = items;
  while (queue.length > 0) {
    const first = new Map<string, PendingObservation>();
    const later: PendingObservation[] = [];
    for (const item of queue) {
      const key = keyOf(item);
      if (written.has(key)) outcomes.set(item.index, { outcome: 'duplicate' });
      else if (first.has(key)) later.push(item);
      else first.set(key, item);
    }
    const batch = [...first.values()];
    const results = await storeAll(w.trx, batch, (all) => insertRows(w, all), async (one) => (await insertRows(w, [one]))[0]!);
    results.forEach((result, i) => {
      const item = batch[i]!;
      if (result instanceof Error) {
        outcomes.set(item.index, rejected(null, `the Observation could not be stored: ${result.message}`));
        return;
      }
      written.add(keyOf(item));
      outcomes.set(item.index, { outcome: 'written' });
      w.changes.push({ schema: w.ctx.schema, entitySet: 'Observations', id: result, kind: 'create' });
    });
    queue = later;
  }
}
