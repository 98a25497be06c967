import { sql, type RawBuilder } from 'kysely';
import pg from 'pg';
import type { Database } from '../db/client.js';
import type { CopyOut } from '../db/copy-out.js';
import { AppError } from '../errors.js';
import { CSV_LINE_END, csvField, CsvRecordEnds, type Download } from '../util/download.js';

/**
 * The bulk downloads of a SensorThings API: every Observation as CSV and every Thing at its latest
 * Location as GeoJSON. Both can be read in keyset batches, each a short statement of its own, so a
 * download of any size holds one batch in memory and no connection while the client reads. On
 * PostgreSQL the Observations are streamed by COPY instead while a slot is free (1.25 times as
 * fast, memory flat: no batches, no rows in this process), holding a connection of their own while
 * the client reads. Both ways write the same file.
 *
 * The Observations of MultiDatastreams are not in the CSV: its columns name one Datastream and one
 * result per row, which an Observation of several results does not fit.
 */

/** The paths below the API's base. */
export const STA_DOWNLOADS = { '/download/observations.csv': 'observations', '/download/things.geojson': 'things' } as const;

export const isStaDownloadPath = (path: string) => Object.hasOwn(STA_DOWNLOADS, path);

const OBSERVATION_BATCH = 5_000;
const DATASTREAM_BATCH = 1_000;
const THING_BATCH = 1_000;

const OBSERVATION_COLUMNS = ['datastream_id', 'datastream_name', 'phenomenon_time', 'result_time', 'result', 'feature_of_interest_id'];

/** `fileStem`: the start of the file's name (the dataset's and the API's). Throws NOT_FOUND for any other path. */
export function staDownload(db: Database, copyOut: CopyOut | null, schema: string, path: string, fileStem: string): Download {
  const kind = Object.hasOwn(STA_DOWNLOADS, path) ? STA_DOWNLOADS[path as keyof typeof STA_DOWNLOADS] : undefined;
  if (kind === 'observations') {
    return { fileName: `${fileStem}-observations.csv`, mediaType: 'text/csv; charset=utf-8', body: { kind: 'chunks', chunks: () => observationsCsv(db, copyOut, schema) } };
  }
  if (kind === 'things') {
    return { fileName: `${fileStem}-things.geojson`, mediaType: 'application/geo+json', body: { kind: 'chunks', chunks: () => thingsGeoJson(db, schema) } };
  }
  throw new AppError('NOT_FOUND', `Nothing at ${path.slice(0, 120)}: the downloads are ${Object.keys(STA_DOWNLOADS).join(' and ')}`);
}

/** An instant as the API writes it (ISO 8601 in UTC, milliseconds), whatever the session's time zone. */
const isoInstantText = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const isoInstant = (column: string) => sql.raw(isoInstantText(column));

/** An Observation's phenomenonTime: its instant, or its interval as `start/end`. */
const PHENOMENON_TIME = `${isoInstantText('o.phenomenon_time_start')}
  || case when o.phenomenon_time_end <> o.phenomenon_time_start then '/' || ${isoInstantText('o.phenomenon_time_end')} else '' end`;

/**
 * A CSV field built in SQL, as PostgreSQL's COPY writes one: quoted when it holds a comma, a quote
 * or a line break, and an empty text as `""` (an empty field, unquoted, is a null).
 */
const csvText = (text: RawBuilder<unknown>) =>
  sql`(case when ${text} = '' then '""' when ${text} ~ '[",\r\n]' then '"' || replace(${text}, '"', '""') || '"' else ${text} end)`;
/** The same in this process. */
const csvCell = (text: string | null) => (text === null ? '' : text === '' ? '""' : csvField(text));

/**
 * Every Observation of a Datastream, ordered by Datastream, then phenomenon time (then id): by COPY
 * when one may run, else in keyset batches. Either way the records end with CRLF (RFC 4180).
 */
async function* observationsCsv(db: Database, copyOut: CopyOut | null, schema: string): AsyncGenerator<Buffer | string> {
  const copied = copyOut ? await copyOut.open(observationsCopy(schema)) : null;
  if (!copied) return yield* observationsInBatches(db, schema);
  const ends = new CsvRecordEnds();
  for await (const chunk of copied) yield ends.convert(chunk as Buffer);
}

/**
 * The COPY statement: its CSV format quotes as RFC 4180 does (only where needed), writes a null as
 * an empty field and the header from the column names. A string result is written as its text, any
 * other JSON as its JSON text (a number as it is), a JSON null as an empty field.
 */
function observationsCopy(schema: string): string {
  const table = (name: string) => `${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(name)}`;
  return `copy (
    select o.datastream_id, d.name as datastream_name, ${PHENOMENON_TIME} as phenomenon_time,
      ${isoInstantText('o.result_time')} as result_time,
      case jsonb_typeof(o.result) when 'null' then null else o.result #>> '{}' end as result,
      o.feature_of_interest_id
    from ${table('observations')} o join ${table('datastreams')} d on d.id = o.datastream_id
    order by o.datastream_id, o.phenomenon_time_start, o.id
  ) to stdout with (format csv, header)`;
}

/**
 * The keyset way: each Datastream's Observations come from its (datastream, time) index read
 * backwards, one batch after the other from the last row sent.
 */
async function* observationsInBatches(db: Database, schema: string): AsyncGenerator<string> {
  // The header goes out with the first rows: a database that fails the first read still gets a problem answer.
  let head = OBSERVATION_COLUMNS.join(',') + CSV_LINE_END;
  const observations = sql.id(schema, 'observations');
  // Numbers and booleans never need quoting; `#>> '{}'`: a string's text without its quotes, any other JSON as its text.
  const result = sql`(case jsonb_typeof(o.result) when 'number' then o.result::text when 'boolean' then o.result::text
    when 'null' then '' else ${csvText(sql`(o.result #>> '{}')`)} end)`;
  const line = sql`${sql.raw(PHENOMENON_TIME)} || ',' || coalesce(${isoInstant('o.result_time')}, '') || ',' || ${result} || ',' || o.feature_of_interest_id`;
  for await (const datastream of datastreams(db, schema)) {
    const prefix = `${datastream.id},${csvCell(datastream.name)},`;
    let after: { time: string; id: number } | null = null;
    for (;;) {
      // A batch comes back as one text of its lines and the key of its last row: a row object per
      // Observation cost the process more than the database spent on the batch. The lines are
      // joined in the order the batch was read (its index order): sorting them again in the
      // aggregate cost a third of the statement. The key is the batch's greatest (time, id),
      // whatever the order: a batch is never read twice nor skipped.
      const keyset: RawBuilder<unknown> = after ? sql`and (o.phenomenon_time_start, o.id) > (${after.time}::timestamptz, ${after.id})` : sql``;
      const { rows }: { rows: Array<{ n: number; lines: string | null; time: string | null; id: number | null }> } = await sql<{ n: number; lines: string | null; time: string | null; id: number | null }>`
        with batch as (
          select o.id, o.phenomenon_time_start as time, ${line} as line
          from ${observations} o where o.datastream_id = ${datastream.id} ${keyset}
          order by o.phenomenon_time_start, o.id limit ${OBSERVATION_BATCH})
        select count(*)::int as n, string_agg(${prefix}::text || line || ${CSV_LINE_END}::text, '') as lines,
          (select max(time) from batch)::text as time, max(id) filter (where time = (select max(time) from batch)) as id
        from batch`.execute(db);
      const batch = rows[0]!;
      if (batch.n === 0) break;
      yield head + batch.lines;
      head = '';
      if (batch.n < OBSERVATION_BATCH) break;
      after = { time: batch.time!, id: Number(batch.id) };
    }
  }
  if (head) yield head;
}

async function* datastreams(db: Database, schema: string): AsyncGenerator<{ id: number; name: string | null }> {
  let after = 0;
  for (;;) {
    const { rows } = await sql<{ id: number; name: string | null }>`
      select id, name from ${sql.id(schema, 'datastreams')} where id > ${after} order by id limit ${DATASTREAM_BATCH}`.execute(db);
    for (const row of rows) yield { id: Number(row.id), name: row.name };
    if (rows.length < DATASTREAM_BATCH) return;
    after = Number(rows[rows.length - 1]!.id);
  }
}

/**
 * A FeatureCollection of the Things, each at its latest Location: of its current Locations the one
 * its latest HistoricalLocation names (the highest id among equals); a Thing without one has a null
 * geometry. A Location written as a GeoJSON Feature gives its geometry.
 */
async function* thingsGeoJson(db: Database, schema: string): AsyncGenerator<string> {
  const table = (name: string) => sql.id(schema, name);
  let head = '{"type":"FeatureCollection","features":[';
  let after = 0;
  let first = true;
  for (;;) {
    const { rows } = await sql<{ id: number; feature: string }>`
      select t.id, json_build_object(
        'type', 'Feature', 'id', t.id,
        'geometry', case when l.location ->> 'type' = 'Feature' then l.location -> 'geometry' else l.location end,
        'properties', json_build_object('name', t.name, 'description', t.description, 'properties', t.properties,
          'locationId', l.id, 'locationName', l.name, 'locationTime', ${isoInstant('l.time')}))::text as feature
      from ${table('things')} t
      left join lateral (
        select loc.id, loc.name, loc.location, seen.time
        from ${table('thing_locations')} tl
        join ${table('locations')} loc on loc.id = tl.location_id
        left join lateral (
          select max(h.time) as time from ${table('historical_location_locations')} hl
          join ${table('historical_locations')} h on h.id = hl.historical_location_id
          where hl.location_id = loc.id and h.thing_id = t.id
        ) seen on true
        where tl.thing_id = t.id
        order by seen.time desc nulls last, loc.id desc limit 1
      ) l on true
      where t.id > ${after} order by t.id limit ${THING_BATCH}`.execute(db);
    if (rows.length > 0) {
      yield head + (first ? '' : ',') + rows.map((row) => row.feature).join(',');
      head = '';
      first = false;
    }
    if (rows.length < THING_BATCH) break;
    after = Number(rows[rows.length - 1]!.id);
  }
  yield `${head}]}\n`;
}
