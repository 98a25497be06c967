import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../../src/db/client.js';
import { databaseKinds, freshPostgresDatabase } from '../../helpers/test-app.js';
import { compileFailure, idsWhere, openFixture, openFixtureOn, type AnyDb } from './fixture.js';

/**
 * Every function of the standard, compiled and run on an in-memory PGlite and, when
 * TEST_DATABASE_URL is set, on PostgreSQL (see fixture.ts for the rows). The geospatial ones run
 * where PostGIS can be installed on a fresh database there; without PostGIS they answer 400.
 */

for (const kind of databaseKinds(import.meta.url)) describe(`on ${kind}`, () => {
  let db: AnyDb;
  let close: () => Promise<void>;
  before(async () => ({ db, close } = await openFixtureOn(kind)));
  after(() => close());

  const rows = (filter: string) => idsWhere(db, filter);
  const NAMED = [1, 2, 3, 5, 6, 7];

  describe('string functions', () => {
    it('tests substrings without LIKE wildcards', async () => {
      assert.deepEqual(await rows("substringof('ph', name)"), [1]);
      assert.deepEqual(await rows("substringof('a', name)"), [1, 5, 6, 7]);
      assert.deepEqual(await rows("contains(name, 'a')"), [1, 5, 6, 7]);
      assert.deepEqual(await rows("contains(name, '%')"), [3]);
      assert.deepEqual(await rows("contains(name, '_')"), [3]);
      assert.deepEqual(await rows("contains(name, 'O''B')"), [2]);
      assert.deepEqual(await rows("not contains(name, 'a')"), [2, 3]);
    });

    it('tests prefixes and suffixes literally', async () => {
      assert.deepEqual(await rows("startswith(name, 'Al')"), [1]);
      assert.deepEqual(await rows("startswith(name, '100%')"), [3]);
      assert.deepEqual(await rows("startswith(name, '1_0')"), []);
      assert.deepEqual(await rows("startswith(name, '')"), NAMED);
      assert.deepEqual(await rows("endswith(name, 'a')"), [1, 6, 7]);
      assert.deepEqual(await rows("endswith(name, '%_done')"), [3]);
      assert.deepEqual(await rows("endswith(name, '%')"), []);
    });

    it('measures and cuts strings with 0-based positions', async () => {
      assert.deepEqual(await rows('length(name) eq 5'), [1, 7]);
      assert.deepEqual(await rows("indexof(name, 'a') eq 1"), [7]);
      assert.deepEqual(await rows("indexof(name, 'z') eq -1"), NAMED);
      assert.deepEqual(await rows("substring(name, 1) eq 'lpha'"), [1]);
      assert.deepEqual(await rows("substring(name, 1, 2) eq 'am'"), [7]);
      assert.deepEqual(await rows("substring(name, 0, 0) eq ''"), NAMED);
      assert.deepEqual(await rows("substring(name, 2, -1) eq ''"), NAMED);
    });

    it('changes case, trims and concatenates', async () => {
      assert.deepEqual(await rows("tolower(name) eq 'alpha'"), [1]);
      assert.deepEqual(await rows("toupper(name) eq 'BETA'"), [6]);
      assert.deepEqual(await rows("trim(name) eq 'Padded'"), [5]);
      assert.deepEqual(await rows("concat(name, '!') eq 'beta!'"), [6]);
      assert.deepEqual(await rows("concat(concat(name, ' '), 'x') eq 'gamma x'"), [7]);
    });

    it('works on json strings only where they are strings', async () => {
      assert.deepEqual(await rows("contains(result, 'ig')"), [2]);
      assert.deepEqual(await rows("startswith(properties/owner, 'a')"), [1, 7]);
      assert.deepEqual(await rows('length(result) eq 4'), [2]);
    });

    it('refuses string functions on other types', () => {
      const [pos, token, detail] = compileFailure('length(value) eq 1');
      assert.deepEqual([pos, token], [7, 'number']);
      assert.match(detail, /a string is expected, not a number/);
    });
  });

  describe('date and time functions', () => {
    it('reads the parts of an instant in UTC', async () => {
      assert.deepEqual(await rows('year(resultTime) eq 2021'), [2]);
      assert.deepEqual(await rows('month(resultTime) eq 6'), [1]);
      assert.deepEqual(await rows('day(resultTime) eq 1'), [2, 5]);
      assert.deepEqual(await rows('hour(resultTime) eq 23'), [5]);
      assert.deepEqual(await rows('minute(resultTime) eq 30'), [1]);
      assert.deepEqual(await rows('second(resultTime) eq 45'), [1]);
      assert.deepEqual(await rows('fractionalseconds(resultTime) eq 0.25'), [1]);
      assert.deepEqual(await rows('fractionalseconds(resultTime) eq 0'), [2, 5]);
      assert.deepEqual(await rows('totaloffsetminutes(resultTime) eq 0'), [1, 2, 5]);
    });

    it('takes the date and the time of day', async () => {
      assert.deepEqual(await rows('date(resultTime) eq 2022-01-01'), [5]);
      assert.deepEqual(await rows('date(resultTime) lt 2021-03-01'), [1]);
      assert.deepEqual(await rows("time(resultTime) eq '23:59:59'"), [5]);
      assert.deepEqual(await rows("time(resultTime) lt '01:00'"), [2]);
      assert.deepEqual(await rows('time(resultTime) gt time(resultTime)'), []);
    });

    it('knows now and the bounds of an interval', async () => {
      assert.deepEqual(await rows('now() gt resultTime'), [1, 2, 5]);
      assert.deepEqual(await rows('year(phenomenonTime) eq 2021'), [3]);
      assert.deepEqual(await rows('mindatetime(phenomenonTime) eq 2020-01-01T00:00:00Z'), [1, 2]);
      assert.deepEqual(await rows('maxdatetime(phenomenonTime) eq 2020-12-31T00:00:00Z'), [2]);
      assert.deepEqual(await rows('maxdatetime(phenomenonTime) gt 2022-01-01'), [5]);
      assert.deepEqual(await rows('maxdatetime(resultTime) eq resultTime'), [1, 2, 5]);
    });

    it('reads date-time strings in json, and nothing else there', async () => {
      assert.deepEqual(await rows('year(result) eq 2020'), [5]);
    });

    it('refuses date functions on other types', () => {
      assert.match(compileFailure('year(name) eq 2020')[2], /a date-time is expected, not a string/);
    });
  });

  describe('math functions', () => {
    it('rounds halves away from zero, floors and ceils', async () => {
      assert.deepEqual(await rows('round(value) eq 2'), [1]);
      assert.deepEqual(await rows('round(value div 4) eq 3'), [2]);
      assert.deepEqual(await rows('round(value div 4) eq -1'), [3]);
      assert.deepEqual(await rows('floor(value) eq 1'), [1]);
      assert.deepEqual(await rows('ceiling(value) eq 2'), [1]);
      assert.deepEqual(await rows('floor(value div 4) eq -1'), [3]);
      assert.deepEqual(await rows('round(result) eq 5'), [1]);
    });

    it('refuses math on strings', () => {
      assert.match(compileFailure('round(name) eq 1')[2], /a number is expected, not a string/);
    });
  });
});

const GEO_FILTERS: [string, number[]][] = [
  ["st_within(location, geography'POLYGON((0 0, 2 0, 2 2, 0 2, 0 0))')", [1]],
  ["geo.intersects(location, geography'POLYGON((0 0, 10 0, 10 10, 0 10, 0 0))')", [1, 2]],
  ["st_intersects(location, geography'MULTIPOINT((5 5), (7 7))')", [2]],
  ["geo.distance(location, geography'POINT(1 1)') lt 1", [1]],
  ["st_equals(location, geography'POINT(5 5)')", [2]],
  ["st_disjoint(location, geography'POINT(1 1)')", [2]],
  ["st_contains(geography'POLYGON((0 0, 2 0, 2 2, 0 2, 0 0))', location)", [1]],
  ["st_touches(location, geography'LINESTRING(1 1, 3 3)')", [1]],
  ["st_crosses(location, geography'LINESTRING(0 0, 9 9)')", []],
  ["st_overlaps(location, geography'MULTIPOLYGON(((0 0, 2 0, 2 2, 0 2, 0 0)))')", []],
  ["st_relate(location, geography'POINT(1 1)', '0FFFFFFF2')", [1]],
  ["geo.length(geography'LINESTRING(0 0, 3 4)') eq 5 and id lt 3", [1, 2]],
  ["st_within(location, geometry'MULTILINESTRING((0 0, 9 9), (1 2, 3 4))')", [1, 2]],
];

describe('geospatial functions', () => {
  it('answer 400 without PostGIS, naming what they need', () => {
    for (const [filter] of GEO_FILTERS) {
      const [, , detail] = compileFailure(filter);
      assert.match(detail, /geospatial functions need a PostgreSQL database with PostGIS/);
    }
    const [pos, token] = compileFailure("name eq 'x' or st_within(location, geography'POINT(1 2)')");
    assert.deepEqual([pos, token], [15, 'st_within']);
  });

  it('compile to PostGIS and select the right rows on PostgreSQL with PostGIS', async (t) => {
    const postgis = await openPostgis();
    if (!postgis) return t.skip('TEST_DATABASE_URL unset, or PostGIS not installable there');
    try {
      await openFixture(postgis.db);
      for (const [filter, expected] of GEO_FILTERS) assert.deepEqual(await idsWhere(postgis.db, filter, true), expected, filter);
      // The rest of the compiled SQL runs unchanged on PostgreSQL too.
      assert.deepEqual(await idsWhere(postgis.db, "properties/owner eq 'ann' and result ne null"), [1]);
    } finally {
      await postgis.close();
    }
  });
});

/** A fresh PostgreSQL database with PostGIS, or null where there is none to be had. */
async function openPostgis(): Promise<{ db: AnyDb; close: () => Promise<void> } | null> {
  if (!process.env['TEST_DATABASE_URL']) return null;
  const database = await freshPostgresDatabase();
  const pgDb = openDatabase({ url: database.url, dataDir: null, poolSize: 2 });
  const close = async () => { await pgDb.destroy(); await database.drop(); };
  try {
    await sql`create extension if not exists postgis`.execute(pgDb);
    return { db: pgDb, close };
  } catch {
    await close();
    return null;
  }
}
