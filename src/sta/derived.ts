import { sql, type RawBuilder } from 'kysely';
import type { Database } from '../db/client.js';
import type { ResolvedProperty } from './query/ast.js';
import { ENTITIES, type EntityDef } from './model.js';
import { AliasNames, column, freshAlias, tableOf, type SqlContext } from './sql-context.js';

/**
 * A stream's derived properties (phenomenonTime, resultTime, observedArea of a Datastream or a
 * MultiDatastream) are aggregates over its Observations. Computing them at read time cost a
 * `/Datastreams` page four index probes and a skip scan plus a convex hull per stream, nearly all of
 * its database time; so they are stored in the stream's row and kept by statement-level triggers on
 * the Observations (and on the FeaturesOfInterest, whose geometry makes the area), whatever writes
 * them: every STA write, CreateObservations, pipelines, a bulk COPY, a cascading delete.
 *
 * The stored values are exactly what `computedStreamProperty` gives: the backfill of an upgraded
 * schema and every recompute of the triggers run that very expression, and the tests compare the two.
 */

/** The two kinds of stream and the Observations' key to each. Locks are taken in this order. */
const STREAMS: readonly { entity: EntityDef; key: 'datastream_id' | 'multi_datastream_id' }[] = [
  { entity: ENTITIES.Datastreams, key: 'datastream_id' },
  { entity: ENTITIES.MultiDatastreams, key: 'multi_datastream_id' },
];

export const DERIVED_COLUMNS = ['phenomenon_time_start', 'phenomenon_time_end', 'result_time_start', 'result_time_end', 'observed_area'] as const;

/** The stored value of a derived property of the stream row under `alias`. */
export function storedStreamProperty(ctx: SqlContext, name: string, alias: string): ResolvedProperty {
  if (name === 'observedArea') {
    // Without PostGIS there is no hull to compute: null, as it always was.
    return { type: 'geometry', sql: ctx.postgis ? column(alias, 'observed_area') : sql`null::jsonb` };
  }
  const prefix = name === 'phenomenonTime' ? 'phenomenon_time' : 'result_time';
  return { type: 'interval', start: column(alias, `${prefix}_start`), end: column(alias, `${prefix}_end`) };
}

/**
 * A derived property of the stream row under `alias` computed from scratch over its Observations
 * (`streamColumn`: their key to the stream). The observedArea needs PostGIS; the caller decides
 * whether it is there.
 */
export function computedStreamProperty(ctx: SqlContext, name: string, alias: string, streamColumn: string): ResolvedProperty {
  const o = freshAlias(ctx);
  const observationsTable = tableOf(ctx, ENTITIES.Observations);
  const observations = sql`${observationsTable} as ${sql.id(o)} where ${column(o, streamColumn)} = ${column(alias, 'id')}`;
  // Each bound is one probe of an index on (stream, time), not a scan of the stream.
  if (name === 'phenomenonTime') {
    return {
      type: 'interval',
      start: sql`(select min(${column(o, 'phenomenon_time_start')}) from ${observations})`,
      end: sql`(select max(${column(o, 'phenomenon_time_end')}) from ${observations})`,
    };
  }
  if (name === 'resultTime') {
    return {
      type: 'interval',
      start: sql`(select min(${column(o, 'result_time')}) from ${observations})`,
      end: sql`(select max(${column(o, 'result_time')}) from ${observations})`,
    };
  }
  // observedArea: the convex hull of the features observed (those PostGIS can read: see
  // GEOMETRY_TEXT). The distinct features are found by a
  // skip scan of (stream, feature_of_interest_id): one index probe per feature, not a pass over
  // every Observation of the stream (a million of them observe a handful of features).
  const f = freshAlias(ctx);
  const seen = freshAlias(ctx);
  const next = freshAlias(ctx);
  const streamId = column(alias, 'id');
  return {
    type: 'geometry',
    sql: sql`(with recursive ${sql.id(seen)}(id) as (
        (select ${column(o, 'feature_of_interest_id')} from ${observationsTable} as ${sql.id(o)}
          where ${column(o, streamColumn)} = ${streamId} order by 1 limit 1)
        union all
        select (select ${column(next, 'feature_of_interest_id')} from ${observationsTable} as ${sql.id(next)}
                 where ${column(next, streamColumn)} = ${streamId} and ${column(next, 'feature_of_interest_id')} > ${column(seen, 'id')}
                 order by 1 limit 1)
          from ${sql.id(seen)} where ${column(seen, 'id')} is not null)
      select st_asgeojson(st_convexhull(st_collect(st_geomfromgeojson(${sql.id(ctx.schema, GEOMETRY_TEXT)}(${column(f, 'feature')})))))::jsonb
        from ${tableOf(ctx, ENTITIES.FeaturesOfInterest)} as ${sql.id(f)}
       where ${column(f, 'id')} in (select ${column(seen, 'id')} from ${sql.id(seen)}))`,
  };
}

const assignBounds = (ctx: SqlContext, alias: string, key: string) => {
  const phenomenon = computedStreamProperty(ctx, 'phenomenonTime', alias, key);
  const result = computedStreamProperty(ctx, 'resultTime', alias, key);
  if (phenomenon.type !== 'interval' || result.type !== 'interval') throw new Error('derived times are intervals');
  return sql`phenomenon_time_start = ${phenomenon.start}, phenomenon_time_end = ${phenomenon.end},
    result_time_start = ${result.start}, result_time_end = ${result.end}`;
};

const assignArea = (ctx: SqlContext, alias: string, key: string) => {
  const area = computedStreamProperty(ctx, 'observedArea', alias, key);
  if (area.type !== 'geometry') throw new Error('observedArea is a geometry');
  return sql`observed_area = ${area.sql}`;
};

/**
 * The function (one per schema) that gives a feature's GeoJSON geometry as text for PostGIS to read,
 * the geometry of a GeoJSON Feature, or null for what PostGIS cannot read. A FeatureOfInterest's
 * `feature` is any object with a `type`, and one made from a Location holding a Feature is a
 * Feature: computed at read time such a stream's area failed the read (500); computed at write time
 * it would fail the write, so the hull is made of the features PostGIS reads. Not typed `geometry`
 * (the function exists without PostGIS, never called there).
 */
const GEOMETRY_TEXT = 'feature_geometry_text';

async function createGeometryText(trx: Database, schema: string): Promise<void> {
  await sql.raw(`create or replace function ${textOf(trx, sql.id(schema, GEOMETRY_TEXT))}(feature jsonb) returns text
    language plpgsql immutable parallel safe as $geometry$
    declare
      geometry jsonb := case when feature->>'type' = 'Feature' then feature->'geometry' else feature end;
    begin
      perform st_geomfromgeojson(geometry::text);
      return geometry::text;
    exception when others then
      return null;
    end $geometry$`).execute(trx);
}

/**
 * Locks the rows of the streams a write is about to add Observations to, in the triggers' order
 * (Datastreams, then MultiDatastreams, each by id), before its first statement. The triggers lock
 * the streams of each statement in that order, but a write of several statements (CreateObservations
 * in chunks of 10,000 rows or row by row after a refused chunk, a pipeline batch with a retry) would
 * otherwise lock them statement by statement, in the order of its rows, and two such writes could
 * each hold a stream the other waits for.
 */
export async function lockStreams(trx: Database, ctx: SqlContext, datastreamIds: readonly unknown[], multiDatastreamIds: readonly unknown[]): Promise<void> {
  for (const [{ entity }, ids] of [[STREAMS[0]!, datastreamIds], [STREAMS[1]!, multiDatastreamIds]] as const) {
    const distinct = [...new Set(ids.filter((id) => id != null).map(Number))];
    if (distinct.length === 0) continue;
    await sql`select 1 from ${tableOf(ctx, entity)} where id = any(${distinct}::bigint[]) order by id for no key update`.execute(trx);
  }
}

/** Whether PostGIS is installed in the database now (the triggers ask at run time: it may come later than the schema). */
const POSTGIS_INSTALLED = sql`exists (select 1 from pg_extension where extname = 'postgis')`;

/** Per schema: the bounds an insert adds to its streams, until its transaction commits (createTriggers). */
const STREAM_BOUNDS_PENDING = 'stream_bounds_pending';

/**
 * Adds the stored columns to a schema provisioned before them and fills them, once (a schema that
 * has them is left as it is), then (re)creates the triggers that keep them. Idempotent.
 */
export async function provisionDerived(trx: Database, schema: string): Promise<void> {
  const ctx: SqlContext = { schema, postgis: false, aliases: new AliasNames() };
  const { rows: [postgis] } = await sql<{ installed: boolean }>`select ${POSTGIS_INSTALLED} as installed`.execute(trx);
  await createGeometryText(trx, schema);
  for (const { entity, key } of STREAMS) {
    const { rows } = await sql`select 1 from information_schema.columns
      where table_schema = ${schema} and table_name = ${entity.table} and column_name = 'observed_area'`.execute(trx);
    if (rows.length > 0) continue;
    for (const name of DERIVED_COLUMNS) {
      const type = name === 'observed_area' ? sql`jsonb` : sql`timestamptz`;
      await sql`alter table ${tableOf(ctx, entity)} add column if not exists ${sql.id(name)} ${type}`.execute(trx);
    }
    const area = postgis?.installed ? sql`, ${assignArea(ctx, 's', key)}` : sql``;
    await sql`update ${tableOf(ctx, entity)} as s set ${assignBounds(ctx, 's', key)}${area}`.execute(trx);
  }
  await createTriggers(trx, ctx);
}

/** SQL text with no parameters (a function body is one literal). */
function textOf(trx: Database, raw: RawBuilder<unknown>): string {
  const compiled = raw.compile(trx);
  if (compiled.parameters.length > 0) throw new Error('a trigger body must not take parameters');
  return compiled.sql;
}

/**
 * The triggers. Each runs once per statement over its transition tables, and for every stream the
 * statement touched:
 * 1. locks the stream rows, Datastreams then MultiDatastreams, each in id order, so that two
 *    writers of the same streams queue rather than deadlock. `for no key update`, not `for update`:
 *    the foreign key checks of an insert take `for key share` on its streams row by row, in the
 *    order of its rows, and `for update` conflicts with those (two CreateObservations over the same
 *    streams deadlocked in the race test); `no key update` does not, and still excludes its like;
 * 2. then, in statements of their own (in READ COMMITTED each gets a fresh snapshot, which sees
 *    whatever a writer that held the lock before committed), adjusts or recomputes the values:
 *    - insert: as the transaction commits. The statement only notes, per stream and feature of its
 *      rows, their bounds and id range in STREAM_BOUNDS_PENDING; a deferred trigger there then
 *      locks the streams (in the order above), widens their bounds by the new rows' (least/greatest:
 *      no scan), and recomputes a stream's area only when a new row brings a feature it did not
 *      observe before: no row of that stream and feature outside the id range of the new ones (a
 *      row inside it that is not new only costs a needless recompute; a test against the set of new
 *      ids was quadratic on a bulk load, its hash did not fit work_mem). Not an incremental hull (of
 *      the stored hull and the new features): it need not read the same, the stored GeoJSON being
 *      rounded to 9 decimals and GEOS not promising the order of the vertices. Why at commit: an
 *      insert that locked its streams at its statement held them until its commit, so every writer
 *      of a stream waited for the round trips of the one before (its client's next statement, then
 *      COMMIT), which capped single POSTs into one Datastream at about 250 a second on 2 cores;
 *      held at the commit alone they wait for that commit only. Inside the writing transaction the
 *      stored values do not include its own rows yet (nothing reads them there);
 *    - update: the streams of rows whose stream, feature or times changed are recomputed (bounds),
 *      and their area too when a row's stream or feature changed;
 *    - delete: the bounds of the streams are recomputed (one index probe each), the area when a
 *      stream no longer observes some feature it lost a row of.
 * A FeatureOfInterest whose geometry changes recomputes the area of the streams observing it; it
 * locks every stream first (rare, and it cannot know which streams a concurrent insert is adding it to
 * until that commits).
 */
async function createTriggers(trx: Database, ctx: SqlContext): Promise<void> {
  const q = (raw: RawBuilder<unknown>) => textOf(trx, raw);
  const observations = q(tableOf(ctx, ENTITIES.Observations));
  const fn = (name: string) => q(sql.id(ctx.schema, name));
  const perStream = (body: (stream: (typeof STREAMS)[number], table: string) => string) =>
    STREAMS.map((stream) => body(stream, q(tableOf(ctx, stream.entity)))).join('\n');
  const lock = (table: string, ids: string) => `perform 1 from ${table} where id in (${ids}) order by id for no key update;`;
  const tracked = ['datastream_id', 'multi_datastream_id', 'feature_of_interest_id', 'phenomenon_time_start', 'phenomenon_time_end', 'result_time'];
  const pair = ['datastream_id', 'multi_datastream_id', 'feature_of_interest_id'];
  const differ = (columns: string[]) => `(${columns.map((c) => `o.${c}`).join(', ')}) is distinct from (${columns.map((c) => `n.${c}`).join(', ')})`;
  const changedRows = (columns: string[]) => `old_rows o join new_rows n on n.id = o.id where ${differ(columns)}`;
  // Whether no row matches: a scalar subquery with a limit, one index probe per outer row. As
  // `not exists` the planner made it an anti join that read the whole (stream, feature) index,
  // 200 ms per CreateObservations of 1,000 rows on a stream of a million.
  const absent = (rows: string) => `(select 1 from ${rows} limit 1) is null`;
  const streamsOfChanged = (key: string, columns: string[]) =>
    `select o.${key} from ${changedRows(columns)} union select n.${key} from ${changedRows(columns)}`;

  const pending = q(sql.id(ctx.schema, STREAM_BOUNDS_PENDING));
  const onInsert = perStream(({ key }) => `
    insert into ${pending} (multi, stream_id, feature_id, first_id, last_id, pt_start, pt_end, rt_start, rt_end)
      select ${key === 'multi_datastream_id'}, ${key}, feature_of_interest_id, min(id), max(id),
             min(phenomenon_time_start), max(phenomenon_time_end), min(result_time), max(result_time)
        from new_rows where ${key} is not null group by ${key}, feature_of_interest_id;`);

  // At commit, once per transaction (the first of its noted rows does them all; the others find
  // none left): its streams in lock order, each locked, widened, and its area recomputed when one
  // of the transaction's features is new to it: no row of that stream and feature outside the ids
  // the whole transaction added with that feature (per statement, two statements adding one new
  // feature each saw the other's rows), which only under the lock sees a concurrent delete's outcome.
  // A loop of statements with the stream's id, not set-based ones over the noted rows: measured
  // interleaved, the set-based form created 5-8 % fewer single POSTs a second into one Datastream.
  const atCommit = (key: string, table: string) => `
        perform 1 from ${table} where id = r.stream_id for no key update;
        update ${table} as s set
            phenomenon_time_start = least(s.phenomenon_time_start, r.pt_start), phenomenon_time_end = greatest(s.phenomenon_time_end, r.pt_end),
            result_time_start = least(s.result_time_start, r.rt_start), result_time_end = greatest(s.result_time_end, r.rt_end)
         where s.id = r.stream_id
           and (s.phenomenon_time_start, s.phenomenon_time_end, s.result_time_start, s.result_time_end) is distinct from
               (least(s.phenomenon_time_start, r.pt_start), greatest(s.phenomenon_time_end, r.pt_end),
                least(s.result_time_start, r.rt_start), greatest(s.result_time_end, r.rt_end));
        if with_postgis is null then with_postgis := ${q(POSTGIS_INSTALLED)}; end if;
        if with_postgis and exists (
             select 1 from (select feature_id, min(first_id) as first_id, max(last_id) as last_id from ${pending}
                             where txid = txid_current() and multi = r.multi and stream_id = r.stream_id group by 1) as p
              where ${absent(`${observations} as seen where seen.${key} = r.stream_id and seen.feature_of_interest_id = p.feature_id
                                and (seen.id < p.first_id or seen.id > p.last_id)`)}) then
          update ${table} as s set ${q(assignArea(ctx, 's', key))} where s.id = r.stream_id;
        end if;`;
  const [datastreams, multiDatastreams] = STREAMS.map((stream) => ({ key: stream.key, table: q(tableOf(ctx, stream.entity)) }));
  // The transaction's later firings find nothing: one empty read each (a bulk insert notes a row per stream and feature).
  const onCommit = `
    for r in select multi, stream_id, min(pt_start) as pt_start, max(pt_end) as pt_end, min(rt_start) as rt_start, max(rt_end) as rt_end
               from ${pending} where txid = txid_current() group by 1, 2 order by 1, 2
    loop
      if r.multi then ${atCommit(multiDatastreams!.key, multiDatastreams!.table)}
      else ${atCommit(datastreams!.key, datastreams!.table)}
      end if;
    end loop;
    if found then delete from ${pending} where txid = txid_current(); end if;`;

  const onUpdate = `
    ${perStream(({ key }, table) => lock(table, streamsOfChanged(key, tracked)))}
    ${perStream(({ key }, table) => `
    update ${table} as s set ${q(assignBounds(ctx, 's', key))} where s.id in (${streamsOfChanged(key, tracked)});`)}
    if ${q(POSTGIS_INSTALLED)} then
      ${perStream(({ key }, table) => `
      update ${table} as s set ${q(assignArea(ctx, 's', key))} where s.id in (${streamsOfChanged(key, pair)});`)}
    end if;`;

  const onDelete = `
    ${perStream(({ key }, table) => lock(table, `select ${key} from old_rows`))}
    ${perStream(({ key }, table) => `
    update ${table} as s set ${q(assignBounds(ctx, 's', key))} where s.id in (select ${key} from old_rows);`)}
    if ${q(POSTGIS_INSTALLED)} then
      ${perStream(({ key }, table) => `
      update ${table} as s set ${q(assignArea(ctx, 's', key))}
       where s.id in (select p.id from (select distinct ${key} as id, feature_of_interest_id as feature from old_rows where ${key} is not null) as p
                       where ${absent(`${observations} as still where still.${key} = p.id and still.feature_of_interest_id = p.feature`)});`)}
    end if;`;

  const changedFeatures = `select n.id from old_rows o join new_rows n on n.id = o.id where o.feature is distinct from n.feature`;
  const onFeatureUpdate = `
    if not ${q(POSTGIS_INSTALLED)} or not exists (${changedFeatures}) then return null; end if;
    ${perStream((_, table) => `perform 1 from ${table} order by id for no key update;`)}
    ${perStream(({ key }, table) => `
    update ${table} as s set ${q(assignArea(ctx, 's', key))}
     where not ${absent(`${observations} as o where o.${key} = s.id and o.feature_of_interest_id in (${changedFeatures})`)};`)}`;

  const triggers: { name: string; table: string; event: string; referencing: string; body: string }[] = [
    { name: 'observations_derived_insert', table: observations, event: 'insert', referencing: 'new table as new_rows', body: onInsert },
    { name: 'observations_derived_update', table: observations, event: 'update', referencing: 'old table as old_rows new table as new_rows', body: onUpdate },
    { name: 'observations_derived_delete', table: observations, event: 'delete', referencing: 'old table as old_rows', body: onDelete },
    { name: 'features_derived_update', table: q(tableOf(ctx, ENTITIES.FeaturesOfInterest)), event: 'update', referencing: 'old table as old_rows new table as new_rows', body: onFeatureUpdate },
  ];
  for (const trigger of triggers) {
    await sql.raw(`create or replace function ${fn(trigger.name)}() returns trigger language plpgsql as $derived$
      begin
        ${trigger.body}
        return null;
      end $derived$`).execute(trx);
    await sql.raw(`create or replace trigger ${q(sql.id(trigger.name))} after ${trigger.event} on ${trigger.table}
      referencing ${trigger.referencing} for each statement execute function ${fn(trigger.name)}()`).execute(trx);
  }
  // Rows noted by the insert trigger, each the bounds and ids of one statement's rows of one stream and feature; none outlives its transaction.
  await sql.raw(`create unlogged table if not exists ${pending} (
      txid bigint not null default txid_current(),
      multi boolean not null,
      stream_id bigint not null,
      feature_id bigint,
      first_id bigint not null,
      last_id bigint not null,
      pt_start timestamptz, pt_end timestamptz, rt_start timestamptz, rt_end timestamptz)`).execute(trx);
  await sql.raw(`create index if not exists stream_bounds_pending_txid on ${pending} (txid)`).execute(trx);
  await sql.raw(`create or replace function ${fn('stream_bounds_at_commit')}() returns trigger language plpgsql as $derived$
      declare r record; with_postgis boolean;
      begin
        ${onCommit}
        return null;
      end $derived$`).execute(trx);
  // A constraint trigger cannot be replaced in place.
  await sql.raw(`drop trigger if exists stream_bounds_at_commit on ${pending}`).execute(trx);
  await sql.raw(`create constraint trigger stream_bounds_at_commit after insert on ${pending}
      deferrable initially deferred for each row execute function ${fn('stream_bounds_at_commit')}()`).execute(trx);
}
