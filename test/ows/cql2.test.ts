import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql, type RawBuilder } from 'kysely';
import { compileCql2Text, type Cql2Options, type Cql2Target } from '../../src/ows/cql2/index.js';
import { AppError } from '../../src/errors.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { publishDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { missing, requirePostgis } from '../helpers/requirements.js';

type Json = Record<string, any>;

// CQL2 text filters (OGC API – Features Part 3) compiled to SQL conditions: first the SQL text
// and parameters (no database), then every error as a 400 on the field `filter`, then the
// conditions run against real PostGIS tables made through the data API.

// Compiles without a database: only the SQL text and the parameters are looked at.
const compiler = new Kysely<unknown>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

const STOPS: Cql2Target = {
  properties: { label: 'string', rank: 'integer', height: 'number', covered: 'boolean', since: 'date-time', in: 'string' },
  srid: 4326,
};
const LIMITS: Cql2Options = { maxBytes: 8192, maxDepth: 16 };

function compiled(text: string, target: Cql2Target = STOPS, options: Partial<Cql2Options> = {}) {
  const { sql: text_, parameters } = compileCql2Text(text, target, { ...LIMITS, ...options }).compile(compiler);
  return { sql: text_, parameters: [...parameters] };
}

/** The 400 a filter answers, checked for its shape: VALIDATION_FAILED on `filter`, ending in the position. */
function refused(text: string, target: Cql2Target = STOPS, options: Partial<Cql2Options> = {}): { message: string; position: number } {
  try {
    compileCql2Text(text, target, { ...LIMITS, ...options });
  } catch (error) {
    assert.ok(error instanceof AppError, String(error));
    assert.equal(error.code, 'VALIDATION_FAILED');
    assert.equal(error.status, 400);
    const fieldErrors = error.options.fieldErrors ?? [];
    assert.equal(fieldErrors.length, 1);
    assert.equal(fieldErrors[0]!.field, 'filter');
    assert.equal(error.message, `filter: ${fieldErrors[0]!.message}`);
    const m = /^(.*) at position (\d+)$/s.exec(fieldErrors[0]!.message);
    assert.ok(m, fieldErrors[0]!.message);
    return { message: m[1]!, position: Number(m[2]) };
  }
  assert.fail(`no error for ${text.slice(0, 200)}`);
}

describe('CQL2 text: the SQL of each predicate', () => {
  test('comparisons bind each literal as a cast parameter, on either side, and compare properties and literals among themselves', () => {
    for (const op of ['=', '<>', '<', '>', '<=', '>=']) {
      assert.deepEqual(compiled(`rank ${op} 3`), { sql: `("rank" ${op} $1::bigint)`, parameters: [3] });
    }
    assert.deepEqual(compiled("label = 'Zoo'"), { sql: '("label" = $1::text)', parameters: ['Zoo'] });
    assert.deepEqual(compiled("'Zoo' = label"), { sql: '($1::text = "label")', parameters: ['Zoo'] });
    assert.deepEqual(compiled('height >= 2'), { sql: '("height" >= $1::double precision)', parameters: [2] });
    assert.deepEqual(compiled('rank < 2.5'), { sql: '("rank" < $1::double precision)', parameters: [2.5] });
    assert.deepEqual(compiled('covered = TRUE'), { sql: '("covered" = $1::boolean)', parameters: [true] });
    assert.deepEqual(compiled('false <> covered'), { sql: '($1::boolean <> "covered")', parameters: [false] });
    assert.deepEqual(compiled('rank < height'), { sql: '("rank" < "height")', parameters: [] });
    assert.deepEqual(compiled('1 = 1'), { sql: '($1::bigint = $2::bigint)', parameters: [1, 1] });
    assert.deepEqual(compiled("'a' < 'b'"), { sql: '($1::text < $2::text)', parameters: ['a', 'b'] });
  });

  test('numbers: signs, fractions, exponents; integers stay bigint unless a fraction takes part', () => {
    assert.deepEqual(compiled('rank = -7').parameters, [-7]);
    assert.deepEqual(compiled('rank = +7').parameters, [7]);
    assert.deepEqual(compiled('height = .5').parameters, [0.5]);
    assert.deepEqual(compiled('height = 7.').parameters, [7]);
    assert.deepEqual(compiled('height = -1.5e3'), { sql: '("height" = $1::double precision)', parameters: [-1500] });
    assert.deepEqual(compiled('rank = 9007199254740991').parameters, [9007199254740991]);
    assert.deepEqual(compiled('rank IN (1, 2.5)'), { sql: '("rank" in ($1::double precision, $2::double precision))', parameters: [1, 2.5] });
  });

  test('AND, OR and NOT: NOT binds tighter than AND, AND tighter than OR; parentheses group; keywords in any case', () => {
    assert.equal(
      compiled("label = 'a' OR rank = 1 AND NOT covered = TRUE").sql,
      '(("label" = $1::text) or (("rank" = $2::bigint) and (not ("covered" = $3::boolean))))',
    );
    assert.equal(
      compiled("(label = 'a' or rank = 1) and not (covered = true or height > 1)").sql,
      '((("label" = $1::text) or ("rank" = $2::bigint)) and (not (("covered" = $3::boolean) or ("height" > $4::double precision))))',
    );
    assert.equal(compiled("NoT label = 'a' aNd rank = 1").sql, '((not ("label" = $1::text)) and ("rank" = $2::bigint))');
    // A chain is one flat list, however long.
    assert.equal(compiled('rank = 1 AND rank = 2 AND rank = 3').sql, '(("rank" = $1::bigint) and ("rank" = $2::bigint) and ("rank" = $3::bigint))');
    assert.equal(compiled('TRUE').sql, 'true');
    assert.equal(compiled('FALSE OR rank = 1').sql, '(false or ("rank" = $1::bigint))');
  });

  test('LIKE and NOT LIKE pass the pattern through as a parameter: % _ and the escape \\ are PostgreSQL\'s own', () => {
    assert.deepEqual(compiled("label LIKE '100\\% %'"), { sql: '("label" like $1::text)', parameters: ['100\\% %'] });
    assert.deepEqual(compiled("label NOT LIKE '_oo'"), { sql: '("label" not like $1::text)', parameters: ['_oo'] });
    assert.deepEqual(compiled("label like 'O''%'").parameters, ["O'%"]);
    assert.deepEqual(compiled("label LIKE 'a\\\\'").parameters, ['a\\\\']);
    // A long run of backslashes is counted, not matched by a backtracking expression.
    const started = performance.now();
    assert.equal(refused(`label LIKE '${'\\'.repeat(200_001)}'`, STOPS, { maxBytes: 1 << 20 }).message, 'a LIKE pattern cannot end with the escape character \\ (write \\\\ for a backslash)');
    assert.doesNotThrow(() => compiled(`label LIKE '${'\\'.repeat(200_000)}'`, STOPS, { maxBytes: 1 << 20 }));
    assert.ok(performance.now() - started < 200);
  });

  test('BETWEEN on numbers and instants; IN lists; IS [NOT] NULL, the geometry included', () => {
    assert.deepEqual(compiled('rank BETWEEN 1 AND 3'), { sql: '("rank" between $1::bigint and $2::bigint)', parameters: [1, 3] });
    assert.deepEqual(compiled('height NOT BETWEEN -1 AND 2.5').sql, '("height" not between $1::double precision and $2::double precision)');
    assert.deepEqual(
      compiled("since BETWEEN TIMESTAMP('2024-05-01T00:00:00Z') AND '2024-05-02T00:00:00+02:00'"),
      { sql: '("since" between $1::timestamptz and $2::timestamptz)', parameters: ['2024-05-01T00:00:00Z', '2024-05-02T00:00:00+02:00'] },
    );
    assert.deepEqual(compiled("label IN ('a', 'b''c')"), { sql: '("label" in ($1::text, $2::text))', parameters: ['a', "b'c"] });
    assert.deepEqual(compiled('rank NOT IN (1)'), { sql: '("rank" not in ($1::bigint))', parameters: [1] });
    assert.deepEqual(compiled('covered IN (TRUE)').sql, '("covered" in ($1::boolean))');
    assert.equal(compiled('label IS NULL').sql, '("label" is null)');
    assert.equal(compiled('since is not null').sql, '("since" is not null)');
    assert.equal(compiled('geometry IS NOT NULL').sql, '("geom" is not null)');
  });

  test('instants: TIMESTAMP with its zone; DATE compares by the calendar day in UTC; a plain string stands for either', () => {
    assert.deepEqual(compiled("since > TIMESTAMP('2024-05-01T10:00:00.123+02:00')"), { sql: '("since" > $1::timestamptz)', parameters: ['2024-05-01T10:00:00.123+02:00'] });
    assert.deepEqual(compiled("since = DATE('2024-05-01')"), { sql: `(("since" at time zone 'UTC')::date = $1::date)`, parameters: ['2024-05-01'] });
    assert.deepEqual(compiled("since < '2024-05-01'").sql, `(("since" at time zone 'UTC')::date < $1::date)`);
    assert.deepEqual(compiled("since >= '2024-05-01t10:00:00z'").parameters, ['2024-05-01T10:00:00Z']);
    assert.equal(
      compiled("since BETWEEN DATE('2024-05-01') AND TIMESTAMP('2024-05-03T00:00:00Z')").sql,
      `(("since" at time zone 'UTC')::date between $1::date and ($2::timestamptz at time zone 'UTC')::date)`,
    );
    assert.equal(compiled("TIMESTAMP('2024-02-29T23:59:59Z') < DATE('2024-03-01')").sql, `(($1::timestamptz at time zone 'UTC')::date < $2::date)`);
  });

  test('property names: plain, in double quotes ("" for a quote), and keywords only in double quotes', () => {
    assert.equal(compiled('"label" = \'a\'').sql, '("label" = $1::text)');
    assert.equal(compiled('"in" IN (\'a\')').sql, '("in" in ($1::text))');
    const target: Cql2Target = { properties: { 'my "prop"': 'integer', date: 'date-time', point: 'integer' }, srid: 4326 };
    assert.equal(compiled('"my ""prop""" = 1', target).sql, '("my ""prop""" = $1::bigint)');
    // `date` and `point` are names unless a parenthesis makes them a literal.
    assert.equal(compiled("date > DATE('2024-01-01') AND point = 1", target).sql, `((("date" at time zone 'UTC')::date > $1::date) and ("point" = $2::bigint))`);
  });

  test('an attribute called geometry is that attribute in comparisons, and the geometry in S_INTERSECTS', () => {
    const target: Cql2Target = { properties: { geometry: 'string' }, srid: 4326 };
    assert.equal(compiled("geometry = 'x'", target).sql, '("geometry" = $1::text)');
    assert.match(compiled('S_INTERSECTS(geometry, POINT(1 2))', target).sql, /^st_intersects\("geom", /);
  });
});

describe('CQL2 text: S_INTERSECTS', () => {
  test('a WKT literal is one GeoJSON parameter with its SRID; in the collection\'s own SRID it is not transformed', () => {
    assert.deepEqual(compiled('S_INTERSECTS(geometry, POINT(8.68 50.11))'), {
      sql: 'st_intersects("geom", st_setsrid(st_force2d(st_geomfromgeojson($1::text)), $2::integer))',
      parameters: ['{"type":"Point","coordinates":[8.68,50.11]}', 4326],
    });
    // Either order, keywords in any case, Z positions and multi-line text.
    const polygon = compiled('s_intersects(polygon z ((0 0 1, 1 0 1,\n 1 1 1, 0 0 1)), "geometry")');
    assert.deepEqual(polygon.parameters, ['{"type":"Polygon","coordinates":[[[0,0,1],[1,0,1],[1,1,1],[0,0,1]]]}', 4326]);
  });

  test('every geometry type, MULTIPOINT in both spellings, and GEOMETRYCOLLECTION', () => {
    const json = (wkt: string) => JSON.parse(compiled(`S_INTERSECTS(geometry, ${wkt})`).parameters[0] as string);
    assert.deepEqual(json('LINESTRING(0 0, 1 1)'), { type: 'LineString', coordinates: [[0, 0], [1, 1]] });
    assert.deepEqual(json('MULTIPOINT((0 0), (1 1))'), { type: 'MultiPoint', coordinates: [[0, 0], [1, 1]] });
    assert.deepEqual(json('MULTIPOINT(0 0, 1 1)'), { type: 'MultiPoint', coordinates: [[0, 0], [1, 1]] });
    assert.deepEqual(json('MULTILINESTRING((0 0, 1 1), (2 2, 3 3))').coordinates.length, 2);
    assert.deepEqual(json('MULTIPOLYGON(((0 0, 1 0, 1 1, 0 0)), ((5 5, 6 5, 6 6, 5 5)))').coordinates.length, 2);
    assert.deepEqual(json('GEOMETRYCOLLECTION(POINT(1 2), LINESTRING(0 0, 1 1))'), {
      type: 'GeometryCollection', geometries: [{ type: 'Point', coordinates: [1, 2] }, { type: 'LineString', coordinates: [[0, 0], [1, 1]] }],
    });
  });

  test('into another SRID: segmentized in the literal\'s CRS, then transformed, the column left alone for its index', () => {
    const utm: Cql2Target = { properties: {}, srid: 25832 };
    assert.deepEqual(compiled('S_INTERSECTS(geometry, POLYGON((8 50, 9 50, 9 51, 8 51, 8 50)))', utm), {
      sql: 'st_intersects("geom", st_transform(st_segmentize(st_setsrid(st_force2d(st_geomfromgeojson($1::text)), $2::integer), $3::double precision), $4::integer))',
      parameters: ['{"type":"Polygon","coordinates":[[[8,50],[9,50],[9,51],[8,51],[8,50]]]}', 4326, 1 / 32, 25832],
    });
    // A point has no edges to cut.
    assert.equal(compiled('S_INTERSECTS(geometry, POINT(8 50))', utm).sql, 'st_intersects("geom", st_transform(st_setsrid(st_force2d(st_geomfromgeojson($1::text)), $2::integer), $3::integer))');
    // Literals in the collection's own SRID (filter-crs) are metres, not degrees, and unchecked for range.
    assert.deepEqual(compiled('S_INTERSECTS(geometry, POINT(477000 5550000))', utm, { literalSrid: 25832 }).parameters, ['{"type":"Point","coordinates":[477000,5550000]}', 25832]);
  });

  test('BBOX: an envelope of four parameters; west above east crosses the antimeridian in CRS84', () => {
    assert.deepEqual(compiled('S_INTERSECTS(geometry, BBOX(8, 50, 9, 51))'), {
      sql: 'st_intersects("geom", st_makeenvelope($1::double precision, $2::double precision, $3::double precision, $4::double precision, $5::integer))',
      parameters: [8, 50, 9, 51, 4326],
    });
    const crossing = compiled('S_INTERSECTS(BBOX(170, -10, -170, 10), geometry)');
    assert.match(crossing.sql, /^st_intersects\("geom", st_collect\(st_makeenvelope\(/);
    assert.deepEqual(crossing.parameters, [170, -10, 180, 10, 4326, -180, -10, -170, 10, 4326]);
    assert.equal(refused('S_INTERSECTS(geometry, BBOX(10, 0, 5, 1))', STOPS, { literalSrid: 25832 }).message, 'a BBOX must have minx ≤ maxx');
  });

  test('literals written latitude first (EPSG:4326 as EPSG orders it) are swapped to x/y', () => {
    const latFirst = { literalLatitudeFirst: true };
    assert.deepEqual(compiled('S_INTERSECTS(geometry, POINT(50.11 8.68))', STOPS, latFirst).parameters, ['{"type":"Point","coordinates":[8.68,50.11]}', 4326]);
    assert.deepEqual(compiled('S_INTERSECTS(geometry, BBOX(50, 8, 51, 9))', STOPS, latFirst).parameters, [8, 50, 9, 51, 4326]);
    assert.match(refused('S_INTERSECTS(geometry, POINT(150 8.68))', STOPS, latFirst).message, /outside longitude -180..180 or latitude -90..90 \(written latitude first\)/);
  });
});

describe('CQL2 text: every error is a 400 on the field filter naming the position', () => {
  test('type checks against the queryables, naming the operand at fault', () => {
    assert.deepEqual(refused("rank = 'x'"), { message: 'type mismatch: a character string cannot be compared with the integer property rank', position: 7 });
    assert.deepEqual(refused('covered = 1'), { message: 'type mismatch: a number cannot be compared with the boolean property covered', position: 10 });
    assert.match(refused('since > 5').message, /^type mismatch: a number cannot be compared with the date-time property since; write an instant as TIMESTAMP/);
    assert.match(refused("label = DATE('2024-01-01')").message, /^type mismatch: a DATE cannot be compared with the string property label/);
    assert.deepEqual(refused('covered < TRUE'), { message: 'booleans are compared with = and <> only, not <', position: 8 });
    assert.deepEqual(refused('rank LIKE \'1%\''), { message: 'LIKE applies to character strings, not the integer property rank', position: 0 });
    assert.deepEqual(refused("label BETWEEN 'a' AND 'b'"), { message: 'BETWEEN applies to numbers and date-times, not the string property label', position: 6 });
    assert.deepEqual(refused("rank IN (1, 'two')"), { message: 'type mismatch: a character string cannot be compared with the integer property rank', position: 12 });
    assert.deepEqual(refused('rank = label'), { message: 'type mismatch: the string property label cannot be compared with the integer property rank', position: 7 });
    assert.deepEqual(refused('geometry = 1'), { message: 'geometry is the geometry queryable: it can be used in S_INTERSECTS and IS NULL only', position: 0 });
    assert.deepEqual(refused("since = 'yesterday'"), { message: "'yesterday' is not a date-time: write TIMESTAMP('2024-05-01T10:00:00Z') or DATE('2024-05-01')", position: 8 });
  });

  test('unknown queryables name the queryables; inherited object keys are none', () => {
    assert.deepEqual(refused('colour = 1'), { message: 'unknown queryable colour; queryables: label, rank, height, covered, since, in, geometry', position: 0 });
    assert.equal(refused('rank = 1 AND "Rank" = 1').position, 13);
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      assert.match(refused(`${name} IS NULL`).message, new RegExp(`^unknown queryable ${name};`));
    }
    assert.match(refused('S_INTERSECTS(geom, POINT(1 2))').message, /^unknown queryable geom;/);
  });

  test('instants are checked strictly: real days and times, seconds and a zone required', () => {
    for (const [text, message] of [
      ["since = TIMESTAMP('2024-05-01T10:00:00')", "the timestamp '2024-05-01T10:00:00' needs a time zone (Z or ±hh:mm)"],
      ["since = TIMESTAMP('2024-05-01T10:00Z')", "'2024-05-01T10:00Z' is not a timestamp (YYYY-MM-DDThh:mm:ssZ or with an offset ±hh:mm)"],
      ["since = TIMESTAMP('2023-02-29T10:00:00Z')", "'2023-02-29T10:00:00Z' is not a timestamp (YYYY-MM-DDThh:mm:ssZ or with an offset ±hh:mm)"],
      ["since = TIMESTAMP('2024-05-01T24:00:00Z')", "'2024-05-01T24:00:00Z' is not a timestamp (YYYY-MM-DDThh:mm:ssZ or with an offset ±hh:mm)"],
      ["since = TIMESTAMP('2024-05-01T10:00:00+15:00')", "'2024-05-01T10:00:00+15:00' is not a timestamp (YYYY-MM-DDThh:mm:ssZ or with an offset ±hh:mm)"],
      ["since = DATE('2024-04-31')", "'2024-04-31' is not a date (YYYY-MM-DD)"],
      ["since = DATE('0000-01-01')", "'0000-01-01' is not a date (YYYY-MM-DD)"],
      ["since = DATE('2024-05-01T00:00:00Z')", "'2024-05-01T00:00:00Z' is not a date (YYYY-MM-DD)"],
      ["since = '2024-05-01 10:00:00Z'", "'2024-05-01 10:00:00Z' is not a date-time: write TIMESTAMP('2024-05-01T10:00:00Z') or DATE('2024-05-01')"],
      ["since = '2024-05-01T10:00:00'", "the timestamp '2024-05-01T10:00:00' needs a time zone (Z or ±hh:mm)"],
      ['since = DATE(20240501)', "DATE takes its value in single quotes, as in DATE('2024-05-01')"],
    ]) {
      assert.equal(refused(text!).message, message, text);
    }
    assert.equal(refused("since = DATE('2024-04-31')").position, 13);
    assert.doesNotThrow(() => compiled("since = DATE('2024-02-29') OR since = TIMESTAMP('2000-02-29T23:59:59.999999-14:00')"));
  });

  test('syntax errors point at the token at fault', () => {
    for (const [text, message, position] of [
      ['label =', "a property or a literal expected, found the end of the filter", 7],
      ["label == 'a'", "a property or a literal expected, found '='", 7],
      ['rank = 1 = 1', 'comparisons cannot be chained; combine them with AND', 9],
      ["label = 'a' AND", 'a property or a literal expected, found the end of the filter', 15],
      ["label != 'a'", "unexpected character '!'", 6],
      ["(label = 'a'", "')' expected to close the parenthesis, found the end of the filter", 12],
      ["label = 'a')", "unexpected ')': AND, OR or the end of the filter expected", 11],
      ['label', 'the property label alone is no condition: compare it (=, <>, <, >, <=, >=) or use LIKE, BETWEEN, IN or IS NULL', 5],
      ["label = 'abc", 'unterminated character string', 8],
      ['"label = 1', 'unterminated property name in double quotes', 0],
      ['"" = 1', 'a property name in double quotes cannot be empty', 0],
      ['rank = NULL', 'NULL can only be tested with IS NULL or IS NOT NULL', 7],
      ['rank IS 1', 'NULL expected after IS, found \'1\'', 8],
      ['rank NOT 1', "LIKE, BETWEEN or IN expected after NOT, found '1'", 9],
      ['rank BETWEEN 1 OR 2', "AND expected between the bounds of BETWEEN, found 'OR'", 15],
      ['rank IN ()', "a property or a literal expected, found ')'", 9],
      ['rank IN 1', "'(' expected after IN, found '1'", 8],
      ['label LIKE label', "LIKE takes a pattern in single quotes, found 'label'", 11],
      ['in = 1', 'a property or a literal expected, found the keyword in (a property of that name is written in double quotes: "in")', 0],
      ['rank = 1abc', "unexpected character 'a'", 8],
      ['rank = 1.2.3', "unexpected character '.'", 10],
      ['rank = 99999999999999999999', 'the integer 99999999999999999999 is out of range (at most 9007199254740991 in magnitude)', 7],
      ['height = 1e999', 'the number 1e999 is out of range', 9],
      ['NOT', 'a property or a literal expected, found the end of the filter', 3],
      ['', 'a property or a literal expected, found the end of the filter', 0],
      ['rank = 1 ☃', "unexpected character '☃'", 9],
      ["label LIKE 'abc\\'", 'a LIKE pattern cannot end with the escape character \\ (write \\\\ for a backslash)', 11],
      ['upper(label) = 1', 'unknown function upper', 0],
      ["CASEI(label) = 'a'", 'CASEI is not supported; the spatial function offered is S_INTERSECTS', 0],
      ['S_CONTAINS(geometry, POINT(1 2))', 'S_CONTAINS is not supported; the spatial function offered is S_INTERSECTS', 0],
      ['BBOX(1, 2, 3, 4) = 1', 'a BBOX can only be an argument of S_INTERSECTS', 0],
      ['POINT(1 2) = 1', 'a geometry can only be an argument of S_INTERSECTS', 0],
    ] as const) {
      assert.deepEqual(refused(text), { message, position }, text);
    }
  });

  test('S_INTERSECTS: one argument the geometry queryable, the other a valid literal', () => {
    for (const [text, message, position] of [
      ['S_INTERSECTS(POINT(1 2), POINT(1 2))', 'S_INTERSECTS needs the geometry queryable as one of its arguments', 0],
      ['S_INTERSECTS(geometry, geometry)', 'S_INTERSECTS compares the geometry queryable with a geometry literal (WKT or BBOX), not two properties', 0],
      ['S_INTERSECTS(label, POINT(1 2))', 'S_INTERSECTS applies to the geometry queryable, not the string property label', 13],
      ['S_INTERSECTS(geometry, POINT(1 2)', "')' expected to close S_INTERSECTS (it takes two arguments), found the end of the filter", 33],
      ['S_INTERSECTS(geometry, POINT(1 2), POINT(3 4))', "')' expected to close S_INTERSECTS (it takes two arguments), found ','", 33],
      ['S_INTERSECTS(geometry, 5)', "S_INTERSECTS takes the geometry queryable and a geometry (WKT or BBOX), found '5'", 23],
      ['S_INTERSECTS(geometry, POINT(1 2)) = TRUE', "unexpected '=': AND, OR or the end of the filter expected", 35],
      ['S_INTERSECTS(geometry, POINT(200 0))', 'a position lies outside longitude -180..180 or latitude -90..90 (CRS84 is longitude first)', 23],
      ['S_INTERSECTS(geometry, POINT(1 1e999))', 'a coordinate of the geometry is out of range', 23],
      ['S_INTERSECTS(geometry, POINT(1 2 3 4))', "invalid geometry: a position needs two or three numbers near '1 2 3 4)'", 29],
      ['S_INTERSECTS(geometry, POLYGON((0 0, 1 0, 1 1, 0 1)))', "invalid geometry: a polygon ring must be closed near '(0 0, 1 0, 1 1, 0 1)'", 31],
      ['S_INTERSECTS(geometry, LINESTRING(0 0))', "invalid geometry: at least 2 positions expected near ')'", 37],
      ['S_INTERSECTS(geometry, POINT((1 2)', 'the geometry POINT is not closed: a \')\' is missing', 23],
      ['S_INTERSECTS(geometry, GEOMETRYCOLLECTION(POINT(1 2), GEOMETRYCOLLECTION(POINT(1 2))))', 'a GEOMETRYCOLLECTION cannot hold another one', 54],
      ['S_INTERSECTS(geometry, GEOMETRYCOLLECTION())', 'a GEOMETRYCOLLECTION member is missing', 42],
      ['S_INTERSECTS(geometry, GEOMETRYCOLLECTION(CIRCLE(1 2)))', "invalid geometry: unknown WKT geometry type near 'CIRCLE'", 42],
      ['S_INTERSECTS(geometry, BBOX(1, 2, 3))', 'BBOX takes 4 numbers, minx, miny, maxx, maxy, not 3', 23],
      ['S_INTERSECTS(geometry, BBOX(1, 2, 0, 3, 4, 10))', 'BBOX takes 4 numbers, minx, miny, maxx, maxy, not 6 (a box with elevations is not supported)', 23],
      ["S_INTERSECTS(geometry, BBOX(1, 'a', 3, 4))", "BBOX takes numbers, found ''a''", 31],
      ['S_INTERSECTS(geometry, BBOX(0, 5, 1, 4))', 'a BBOX must have miny ≤ maxy', 23],
      ['S_INTERSECTS(geometry, BBOX(0, -91, 1, 4))', 'a position lies outside longitude -180..180 or latitude -90..90 (CRS84 is longitude first)', 23],
    ] as const) {
      assert.deepEqual(refused(text), { message, position }, text);
    }
  });

  test('text beyond maxBytes is refused before it is read, a megabyte as fast as a kilobyte, bytes counted in UTF-8', () => {
    const megabyte = 'label = \'' + 'x'.repeat(1024 * 1024) + "'";
    const started = performance.now();
    assert.deepEqual(refused(megabyte), { message: 'the filter is longer than 8192 bytes', position: 8192 });
    assert.ok(performance.now() - started < 100);
    // Nothing of it is read: neither the unterminated string nor the unknown queryable is reported.
    assert.deepEqual(refused(`colour = '${'x'.repeat(9000)}`), { message: 'the filter is longer than 8192 bytes', position: 8192 });
    const umlauts = `label = '${'ü'.repeat(4091)}'`; // 10 + 2 × 4091 = 8192 bytes.
    assert.doesNotThrow(() => compiled(umlauts));
    assert.deepEqual(refused(`label = '${'ü'.repeat(4092)}'`), { message: 'the filter is longer than 8192 bytes', position: 4100 });
  });

  test('nesting beyond maxDepth is refused without a deep stack: parentheses, NOT and chains each count one level', () => {
    const options = { maxDepth: 4 };
    assert.doesNotThrow(() => compiled('((((rank = 1))))', STOPS, options));
    assert.deepEqual(refused('(((((rank = 1)))))', STOPS, options), { message: 'the filter nests deeper than 4 levels', position: 4 });
    assert.doesNotThrow(() => compiled('NOT NOT NOT NOT rank = 1', STOPS, options));
    assert.deepEqual(refused('NOT NOT NOT NOT NOT rank = 1', STOPS, options), { message: 'the filter nests deeper than 4 levels', position: 16 });
    // (a AND (b OR (c AND d))): three chains and two parentheses.
    assert.doesNotThrow(() => compiled('rank = 1 AND (rank = 2 OR (rank = 3 AND rank = 4))', STOPS, { maxDepth: 5 }));
    assert.deepEqual(refused('rank = 1 AND (rank = 2 OR (rank = 3 AND rank = 4))', STOPS, options), { message: 'the filter nests deeper than 4 levels', position: 9 });
    // A chain as long as the text allows is one level, compiled as one flat list.
    const chain = Array.from({ length: 5000 }, (_, i) => `rank = ${i}`).join(' AND ');
    assert.equal(compiled(chain, STOPS, { maxBytes: 1 << 20, maxDepth: 1 }).parameters.length, 5000);
    // A megabyte of openings or NOTs under a generous byte limit: refused at the level past the limit.
    // The tokens are read as the parser asks for them, so the rest of the megabyte is never read.
    for (const [hostile, position] of [['('.repeat(1 << 20), 64], ['NOT '.repeat(1 << 18), 256], [`${'NOT ('.repeat(1 << 17)}rank = 1`, 160]] as const) {
      assert.deepEqual(refused(hostile, STOPS, { maxBytes: 4 << 20, maxDepth: 64 }), { message: 'the filter nests deeper than 64 levels', position });
    }
  });

  test('more values than PostgreSQL could bind are a 400, not a driver error', () => {
    const list = `rank IN (${Array.from({ length: 10_001 }, (_, i) => i).join(',')})`;
    assert.deepEqual(refused(list, STOPS, { maxBytes: 1 << 20 }), { message: 'the filter holds more than 10000 values', position: list.lastIndexOf(',') + 1 });
  });

  test('SQL in a string or a quoted name stays a value or an unknown name', () => {
    const hostile = compiled("label = 'x''; drop table y; --'");
    assert.deepEqual(hostile, { sql: '("label" = $1::text)', parameters: ["x'; drop table y; --"] });
    assert.match(refused('"label""; drop table y; --" = 1').message, /^unknown queryable label"; drop table y; --;/);
    assert.match(refused("label = 'x'; drop table y; --").message, /^unexpected character ';'/);
    assert.match(refused("label = 'x' -- '").message, /^unexpected character '-'/);
  });
});

// ------------------------------------------------------------------------------ on PostGIS

const point = (x: number, y: number, properties: Json = {}) => ({ type: 'Feature', geometry: { type: 'Point', coordinates: [x, y] }, properties });
const line = (coordinates: number[][], properties: Json = {}) => ({ type: 'Feature', geometry: { type: 'LineString', coordinates }, properties });

// The conditions run for real on collections made through the data API, so that the casts,
// PostGIS's functions and the SRIDs meet a real database.
const postgis = await requirePostgis();
describe('CQL2 text on PostGIS', { skip: missing(postgis) }, () => {
  let t: TestApp;
  let ows: PublishedDataset;
  let schema: string;
  /** Label → fid, per collection. */
  const fids: Record<string, Record<string, number>> = {};

  async function collection(def: Json, features: Json[]): Promise<void> {
    const created = await ows.request('POST', '/collections', def);
    assert.equal(created.statusCode, 201, created.body);
    const added = await ows.request('POST', `/collections/${def.name}/items`, { type: 'FeatureCollection', features }, { 'content-type': 'application/geo+json' });
    assert.equal(added.statusCode, 201, added.body);
    const ids: number[] = added.json().ids;
    fids[def.name] = Object.fromEntries(features.map((feature, i) => [feature.properties.label ?? `#${i}`, ids[i]!]));
  }

  before(async () => {
    t = await buildTestApp('postgres');
    ows = await publishDataset(t, { standard: 'OWS', slug: 'maps' });
    schema = `ds_${ows.datasetId.replaceAll('-', '')}`;
    await collection({ name: 'stops', geometryType: 'Point', properties: STOPS.properties }, [
      point(8.68, 50.11, { label: 'Römer', rank: 1, height: 2.5, covered: true, since: '2024-05-01T10:00:00Z', in: 'x' }),
      point(8.70, 50.115, { label: 'Zoo', rank: 2, height: 4, covered: false, since: '2024-05-02T00:30:00+02:00' }),
      point(8.5, 50.0, { label: '100% natural_', rank: 3 }),
      point(9.0, 51.0, { label: "O'Hare", rank: 10, height: 10.5, covered: true, since: '2023-12-31T23:59:59Z', in: 'y' }),
      point(179.5, 1, { label: 'east' }),
      point(-179.5, 1, { label: 'west' }),
      point(8.6, 50.05, {}),
    ]);
    // ETRS89 / UTM 32N, in metres: Frankfurt, and north-east of it near 52.34°N 10.47°E.
    await collection({ name: 'roads', geometryType: 'LineString', srid: 25832, properties: { label: 'string' } }, [
      line([[476000, 5550000], [478000, 5552000]], { label: 'main' }),
      line([[600000, 5800000], [601000, 5801000]], { label: 'north' }),
    ]);
    // On the central meridian of the zone (9°E), just north and just south of 50°N.
    await collection({ name: 'posts', geometryType: 'Point', srid: 25832, properties: { label: 'string' } }, [
      point(500000, 5544190, { label: 'north of 50°' }),
      point(500000, 5533000, { label: 'south of 50°' }),
    ]);
  });
  after(() => t?.close());

  async function labels(name: string, filter: string, options: Partial<Cql2Options> = {}): Promise<string[]> {
    const def = name === 'stops' ? STOPS : { properties: { label: 'string' as const }, srid: 25832 };
    const condition: RawBuilder<unknown> = compileCql2Text(filter, def, { ...LIMITS, ...options });
    const { rows } = await sql<{ fid: string }>`select fid from ${sql.id(schema, name)} where ${condition} order by fid`.execute(t.ctx.db);
    const byFid = new Map(Object.entries(fids[name]!).map(([label, fid]) => [String(fid), label]));
    return rows.map((row) => byFid.get(String(row.fid))!);
  }

  test('comparisons of each type, literals on either side, two properties', async () => {
    assert.deepEqual(await labels('stops', "label = 'Zoo'"), ['Zoo']);
    assert.deepEqual(await labels('stops', "'Zoo' <> label"), ['Römer', '100% natural_', "O'Hare", 'east', 'west']);
    assert.deepEqual(await labels('stops', 'rank < 3'), ['Römer', 'Zoo']);
    assert.deepEqual(await labels('stops', 'rank <= 3'), ['Römer', 'Zoo', '100% natural_']);
    assert.deepEqual(await labels('stops', 'rank > 2.5'), ['100% natural_', "O'Hare"]);
    assert.deepEqual(await labels('stops', '10 <= rank'), ["O'Hare"]);
    assert.deepEqual(await labels('stops', 'height = 4'), ['Zoo']);
    assert.deepEqual(await labels('stops', 'height >= 2.5e0'), ['Römer', 'Zoo', "O'Hare"]);
    assert.deepEqual(await labels('stops', 'rank < height'), ['Römer', 'Zoo', "O'Hare"]);
    assert.deepEqual(await labels('stops', 'covered = TRUE'), ['Römer', "O'Hare"]);
    assert.deepEqual(await labels('stops', 'covered <> true'), ['Zoo']);
    // Between N and P in the C collation and in the linguistic ones alike.
    assert.deepEqual(await labels('stops', "label > 'N' AND label < 'P'"), ["O'Hare"]);
    assert.deepEqual(await labels('stops', '1 = 1 AND rank = 1'), ['Römer']);
    assert.deepEqual(await labels('stops', "'a' = 'b' OR rank = 2"), ['Zoo']);
  });

  test('AND, OR, NOT and parentheses; NULL attributes match neither a comparison nor its NOT', async () => {
    assert.deepEqual(await labels('stops', 'rank = 1 OR rank = 2 AND covered = TRUE'), ['Römer']);
    assert.deepEqual(await labels('stops', '(rank = 1 OR rank = 2) AND covered = FALSE'), ['Zoo']);
    assert.deepEqual(await labels('stops', 'NOT rank = 1 AND rank < 10'), ['Zoo', '100% natural_']);
    assert.deepEqual(await labels('stops', 'NOT (rank = 1 OR rank < 10)'), ["O'Hare"]);
    assert.deepEqual(await labels('stops', 'NOT covered = TRUE'), ['Zoo']);
    assert.deepEqual(await labels('stops', 'covered IS NULL'), ['100% natural_', 'east', 'west', '#6']);
    assert.deepEqual(await labels('stops', 'label IS NULL'), ['#6']);
    assert.deepEqual(await labels('stops', 'height IS NOT NULL AND since IS NOT NULL'), ['Römer', 'Zoo', "O'Hare"]);
    assert.deepEqual(await labels('stops', 'geometry IS NULL'), []);
    assert.deepEqual(await labels('stops', 'TRUE AND rank = 2'), ['Zoo']);
    assert.deepEqual(await labels('stops', 'FALSE'), []);
  });

  test('LIKE with wildcards and escapes, case-sensitive; NOT LIKE', async () => {
    assert.deepEqual(await labels('stops', "label LIKE '_oo'"), ['Zoo']);
    assert.deepEqual(await labels('stops', "label LIKE 'zoo'"), []);
    assert.deepEqual(await labels('stops', "label LIKE '100\\% %'"), ['100% natural_']);
    assert.deepEqual(await labels('stops', "label LIKE '1_0\\%%'"), ['100% natural_']);
    assert.deepEqual(await labels('stops', "label LIKE '%\\_'"), ['100% natural_']);
    assert.deepEqual(await labels('stops', "label LIKE '%l_'"), ['100% natural_']);
    assert.deepEqual(await labels('stops', "label LIKE 'O''%'"), ["O'Hare"]);
    assert.deepEqual(await labels('stops', "label NOT LIKE '%e%'"), ['Zoo', '100% natural_']);
  });

  test('BETWEEN on numbers and instants, by timestamp and by UTC day; IN and NOT IN', async () => {
    assert.deepEqual(await labels('stops', 'rank BETWEEN 2 AND 3'), ['Zoo', '100% natural_']);
    assert.deepEqual(await labels('stops', 'height NOT BETWEEN 2.5 AND 4'), ["O'Hare"]);
    assert.deepEqual(await labels('stops', "since BETWEEN TIMESTAMP('2024-05-01T10:00:00Z') AND TIMESTAMP('2024-05-01T22:30:00Z')"), ['Römer', 'Zoo']);
    assert.deepEqual(await labels('stops', "since BETWEEN '2024-05-01T10:00:01Z' AND '2024-05-02T00:30:00+02:00'"), ['Zoo']);
    // Zoo's 00:30 at +02:00 is 22:30 on 1 May in UTC.
    assert.deepEqual(await labels('stops', "since = DATE('2024-05-01')"), ['Römer', 'Zoo']);
    assert.deepEqual(await labels('stops', "since < DATE('2024-05-01')"), ["O'Hare"]);
    assert.deepEqual(await labels('stops', "since > '2023-12-31'"), ['Römer', 'Zoo']);
    assert.deepEqual(await labels('stops', "since BETWEEN DATE('2023-12-31') AND DATE('2024-04-30')"), ["O'Hare"]);
    assert.deepEqual(await labels('stops', "since > TIMESTAMP('2024-05-01T12:00:00+02:00')"), ['Zoo']);
    assert.deepEqual(await labels('stops', 'rank IN (1, 3, 42)'), ['Römer', '100% natural_']);
    assert.deepEqual(await labels('stops', 'rank NOT IN (1, 3)'), ['Zoo', "O'Hare"]);
    assert.deepEqual(await labels('stops', "label IN ('Zoo', 'O''Hare')"), ['Zoo', "O'Hare"]);
    assert.deepEqual(await labels('stops', "since IN ('2024-05-01T22:30:00Z')"), ['Zoo']);
  });

  test('a property named as a keyword, in double quotes', async () => {
    assert.deepEqual(await labels('stops', '"in" = \'x\' OR "in" IN (\'y\')'), ['Römer', "O'Hare"]);
  });

  test('S_INTERSECTS with POINT, POLYGON, BBOX (the antimeridian crossed) and GEOMETRYCOLLECTION on a CRS84 collection', async () => {
    assert.deepEqual(await labels('stops', 'S_INTERSECTS(geometry, POINT(8.7 50.115))'), ['Zoo']);
    assert.deepEqual(await labels('stops', 'S_INTERSECTS(POLYGON((8.6 50.1, 8.75 50.1, 8.75 50.2, 8.6 50.2, 8.6 50.1)), geometry)'), ['Römer', 'Zoo']);
    assert.deepEqual(await labels('stops', 'S_INTERSECTS(geometry, BBOX(8.4, 49.9, 8.65, 50.06))'), ['100% natural_', '#6']);
    assert.deepEqual(await labels('stops', 'S_INTERSECTS(geometry, BBOX(179, 0, -179, 2))'), ['east', 'west']);
    assert.deepEqual(await labels('stops', 'S_INTERSECTS(geometry, GEOMETRYCOLLECTION(POINT(9 51), LINESTRING(8.4 50, 8.6 50)))'), ['100% natural_', "O'Hare"]);
    assert.deepEqual(await labels('stops', 'S_INTERSECTS(geometry, MULTIPOLYGON(((8.6 50.1, 8.69 50.1, 8.69 50.2, 8.6 50.1)), ((8.9 50.9, 9.1 50.9, 9.1 51.1, 8.9 50.9))))'), ['Römer', "O'Hare"]);
    assert.deepEqual(await labels('stops', 'S_INTERSECTS(geometry, BBOX(50.1, 8.6, 50.2, 8.75))', { literalLatitudeFirst: true }), ['Römer', 'Zoo']);
    assert.deepEqual(await labels('stops', 'S_INTERSECTS(geometry, BBOX(8, 49, 10, 52)) AND NOT rank < 3'), ['100% natural_', "O'Hare"]);
  });

  test('a collection in ETRS89 / UTM 32N queried with longitude/latitude literals, and with its own metres', async () => {
    assert.deepEqual(await labels('roads', 'S_INTERSECTS(geometry, POLYGON((8.6 50.05, 8.8 50.05, 8.8 50.17, 8.6 50.17, 8.6 50.05)))'), ['main']);
    assert.deepEqual(await labels('roads', 'S_INTERSECTS(geometry, BBOX(10, 52, 11, 53))'), ['north']);
    assert.deepEqual(await labels('roads', 'S_INTERSECTS(geometry, LINESTRING(8.6 50.17, 8.8 50.05))'), ['main']);
    assert.deepEqual(await labels('roads', 'S_INTERSECTS(geometry, POINT(477000 5551000))', { literalSrid: 25832 }), ['main']);
    assert.deepEqual(await labels('roads', 'S_INTERSECTS(geometry, BBOX(599000, 5799000, 600500, 5800500))', { literalSrid: 25832 }), ['north']);
    // The box's northern edge is the parallel of 50°N, which bows south of the straight line
    // between its corners in UTM: cut into pieces before the transformation, it keeps the post
    // north of 50° out.
    assert.deepEqual(await labels('posts', 'S_INTERSECTS(geometry, BBOX(3, 40, 15, 50))'), ['south of 50°']);
  });

  test('SQL in the filter stays a value: nothing is found and nothing is dropped', async () => {
    assert.deepEqual(await labels('stops', "label = 'x''; drop table stops; --'"), []);
    assert.deepEqual(await labels('stops', "label LIKE '%''; delete from stops; --'"), []);
    assert.deepEqual(await labels('stops', "label = 'x'' OR ''1''=''1'"), []);
    const { rows } = await sql<{ n: string }>`select count(*) as n from ${sql.id(schema, 'stops')}`.execute(t.ctx.db);
    assert.equal(Number(rows[0]!.n), 7);
  });
});
