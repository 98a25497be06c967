import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import { openDatabase } from '../../../src/db/client.js';
import { freshPostgresDatabase, type DatabaseKind } from '../../helpers/test-app.js';
import type { PropertyResolver, ResolvedProperty } from '../../../src/sta/query/ast.js';
import { StaQueryError } from '../../../src/sta/query/errors.js';
import { compileFilter, compileOrderBy } from '../../../src/sta/query/compile.js';
import { parseFilter, parseOrderBy } from '../../../src/sta/query/parse-expression.js';

/**
 * A small table with one column of each kind the compiler meets, and a resolver for it, so that
 * compiled filters run on a real database and the tests assert which rows they select.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyDb = Kysely<any>;

export const ROWS = [
  { id: 1, name: 'Alpha', value: 1.5, active: true, result: 5, properties: { owner: 'ann', level: 3 }, start: '2020-01-01T00:00:00Z', end: '2020-01-01T00:00:00Z', created: '2020-06-15T10:30:45.25Z', location: { type: 'Point', coordinates: [1, 1] } },
  { id: 2, name: "O'Brien", value: 10, active: false, result: 'high', properties: { owner: 'bob' }, start: '2020-01-01T00:00:00Z', end: '2020-12-31T00:00:00Z', created: '2021-03-01T00:00:00Z', location: { type: 'Feature', properties: {}, geometry: { type: 'Point', coordinates: [5, 5] } } },
  { id: 3, name: '100%_done', value: -2, active: null, result: true, properties: { owner: null }, start: '2021-06-01T12:00:00Z', end: '2021-06-01T12:00:00Z', created: null, location: null },
  { id: 4, name: null, value: null, active: null, result: undefined, properties: null, start: null, end: null, created: null, location: null },
  { id: 5, name: '  Padded  ', value: 0, active: true, result: '2020-05-01T00:00:00Z', properties: { level: 10 }, start: '2022-01-01T00:00:00Z', end: '2022-01-02T00:00:00Z', created: '2022-01-01T23:59:59Z', location: null },
  { id: 6, name: 'beta', value: 7, active: false, result: '2021-02-30T00:00:00Z', properties: {}, start: null, end: null, created: null, location: null },
  { id: 7, name: 'gamma', value: 3, active: true, result: null, properties: { owner: 'ann' }, start: null, end: null, created: null, location: null },
];

export async function openFixture(db: AnyDb = openDatabase({ url: null, dataDir: null })): Promise<AnyDb> {
  await sql`create table t (
    id bigint primary key, name text, value double precision, active boolean, result jsonb,
    properties jsonb, start_time timestamptz, end_time timestamptz, created timestamptz, location jsonb
  )`.execute(db);
  for (const r of ROWS) {
    // `undefined` stands for SQL null, `null` for JSON's null.
    const result = r.result === undefined ? null : JSON.stringify(r.result);
    await sql`insert into t values (${r.id}, ${r.name}, ${r.value}, ${r.active}, cast(${result} as jsonb),
      cast(${r.properties === null ? null : JSON.stringify(r.properties)} as jsonb), cast(${r.start} as timestamptz),
      cast(${r.end} as timestamptz), cast(${r.created} as timestamptz), cast(${r.location === null ? null : JSON.stringify(r.location)} as jsonb))`.execute(db);
  }
  return db;
}

/** The fixture on a fresh database of that kind, and how to be rid of it. */
export async function openFixtureOn(kind: DatabaseKind): Promise<{ db: AnyDb; close: () => Promise<void> }> {
  if (kind === 'pglite') {
    const db = await openFixture();
    return { db, close: () => db.destroy() };
  }
  const database = await freshPostgresDatabase();
  const db = await openFixture(openDatabase({ url: database.url, dataDir: null, poolSize: 2 }));
  return { db, close: async () => { await db.destroy(); await database.drop(); } };
}

export const resolver: PropertyResolver = {
  property(path, pos): ResolvedProperty {
    const [first, ...rest] = path;
    if (rest.length === 0) {
      switch (first) {
        case 'id': case '@iot.id': return { type: 'id', sql: sql`t.id` };
        case 'name': return { type: 'string', sql: sql`t.name` };
        case 'value': return { type: 'number', sql: sql`t.value` };
        case 'active': return { type: 'boolean', sql: sql`t.active` };
        case 'result': return { type: 'json', sql: sql`t.result` };
        case 'resultTime': return { type: 'datetime', sql: sql`t.created` };
        case 'phenomenonTime': return { type: 'interval', start: sql`t.start_time`, end: sql`t.end_time` };
        case 'location': return { type: 'geometry', sql: sql`t.location` };
      }
    }
    if (first === 'properties' && rest.length > 0) return { type: 'json', sql: sql`(t.properties #> cast(${rest} as text[]))` };
    throw new StaQueryError('$filter', pos, path.join('/'), 'unknown property');
  },
};

/** The ids of the rows a `$filter` selects, in id order. */
export async function idsWhere(db: AnyDb, filter: string, postgis = false): Promise<number[]> {
  const where = compileFilter(parseFilter(filter), resolver, { postgis });
  const { rows } = await sql<{ id: number }>`select id from t where ${where} order by id`.execute(db);
  return rows.map((r) => Number(r.id));
}

/** The ids in the order an `$orderby` gives (id as the last key, for a stable answer). */
export async function idsOrderedBy(db: AnyDb, orderBy: string): Promise<number[]> {
  const keys = compileOrderBy(parseOrderBy(orderBy), resolver);
  const { rows } = await sql<{ id: number }>`select id from t order by ${sql.join(keys)}, id`.execute(db);
  return rows.map((r) => Number(r.id));
}

/** The StaQueryError a filter gives at compile time, as [position, token, detail]. */
export function compileFailure(filter: string, postgis = false): [number, string, string] {
  try {
    compileFilter(parseFilter(filter), resolver, { postgis });
  } catch (error) {
    assert.ok(error instanceof StaQueryError, String(error));
    return [error.position, error.token, error.message];
  }
  assert.fail(`no error for ${filter}`);
}
