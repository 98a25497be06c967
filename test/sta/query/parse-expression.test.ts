import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseFilter, parseOrderBy, FUNCTION_ARITY } from '../../../src/sta/query/parse-expression.js';
import { StaQueryError } from '../../../src/sta/query/errors.js';
import { render } from './render.js';

const filter = (text: string) => render(parseFilter(text));

/** The error a malformed filter gives, as [position, token, message]. */
function failure(text: string, parse: (text: string) => unknown = parseFilter): [number, string, string] {
  try {
    parse(text);
  } catch (error) {
    assert.ok(error instanceof StaQueryError, String(error));
    assert.equal(error.status, 400);
    assert.equal(error.code, 'VALIDATION_FAILED');
    return [error.position, error.token, error.message];
  }
  assert.fail(`no error for ${text}`);
}

describe('$filter operators and precedence', () => {
  it('parses every comparison operator', () => {
    for (const op of ['eq', 'ne', 'gt', 'ge', 'lt', 'le']) assert.equal(filter(`a ${op} 1`), `(${op} a 1)`);
  });

  it('binds and tighter than or, not tighter than and', () => {
    assert.equal(filter('a eq 1 or b eq 2 and c eq 3'), '(or (eq a 1) (and (eq b 2) (eq c 3)))');
    assert.equal(filter('not a eq 1 and b'), '(and (not (eq a 1)) b)');
    assert.equal(filter('not (a or b)'), '(not (or a b))');
    assert.equal(filter('a or b or c'), '(or (or a b) c)');
  });

  it('orders arithmetic: mul div mod over add sub over comparisons, left-associative', () => {
    assert.equal(filter('a add b mul c eq d'), '(eq (add a (mul b c)) d)');
    assert.equal(filter('a sub b sub c eq 0'), '(eq (sub (sub a b) c) 0)');
    assert.equal(filter('a div b mod c gt 1'), '(gt (mod (div a b) c) 1)');
    assert.equal(filter('(a add b) mul c eq 1'), '(eq (mul (add a b) c) 1)');
  });

  it('reads unary minus tighter than mul, and -5 as a literal', () => {
    assert.equal(filter('-a mul b eq -5'), '(eq (mul (- a) b) -5)');
    assert.equal(filter('a eq - 2.5e3'), '(eq a -2500)');
  });

  it('refuses chained comparisons but accepts them parenthesised', () => {
    const [pos, token, message] = failure('a eq b eq c');
    assert.deepEqual([pos, token], [7, 'eq']);
    assert.match(message, /cannot be chained/);
    assert.equal(filter('(a eq b) eq true'), '(eq (eq a b) true)');
  });
});

describe('$filter literals', () => {
  it('reads strings with doubled quotes, booleans, null and numbers', () => {
    assert.equal(filter("name eq 'O''Brien'"), "(eq name 'O'Brien')");
    assert.equal(filter("name eq ''''"), "(eq name ''')");
    assert.equal(filter('a eq true or b eq false or c eq null'), '(or (or (eq a true) (eq b false)) (eq c null))');
    assert.equal(filter('a eq 12 or a eq 1.5 or a eq 2E-2'), '(or (or (eq a 12) (eq a 1.5)) (eq a 0.02))');
  });

  it('reads date-times, dates and offsets, with a space standing for a decoded +', () => {
    assert.equal(filter('t gt 2020-01-01T00:00:00Z'), '(gt t @2020-01-01T00:00:00Z)');
    assert.equal(filter('t gt 2020-01-01T00:00:00.123+01:00'), '(gt t @2020-01-01T00:00:00.123+01:00)');
    assert.equal(filter('t gt 2020-01-01T00:00:00.123 01:00'), '(gt t @2020-01-01T00:00:00.123+01:00)');
    assert.equal(filter('t gt 2020-01-01T10:00-05:00'), '(gt t @2020-01-01T10:00-05:00)');
    assert.equal(filter('t lt 2020-02-29'), '(lt t @2020-02-29)');
  });

  it('reads intervals as start/end, start/duration and duration/end, and array indexes in paths', () => {
    assert.equal(filter('t eq 2020-01-01T00:00:00Z/2020-01-02T00:00:00 01:00'), '(eq t @2020-01-01T00:00:00Z/2020-01-02T00:00:00+01:00)');
    assert.equal(filter('t eq 2020-01-01/PT1.5S'), '(eq t @2020-01-01/PT1.5S)');
    assert.equal(filter('t eq P1W/2020-01-01T00:00:00Z'), '(eq t @P1W/2020-01-01T00:00:00Z)');
    assert.equal(filter('location/geometry/coordinates/0 gt 9'), '(gt location/geometry/coordinates/0 9)');
    assert.equal(filter('mindatetime() lt maxdatetime(t)'), '(lt mindatetime() maxdatetime(t))');
    assert.throws(() => filter('t eq 2020-01-01T00:00:00Z/'), /at position 26/);
    assert.throws(() => filter('t eq 2020-01-01T00:00:00Z/-P1D'), /start\/end, start\/duration or duration\/end at position 26/);
    assert.throws(() => filter('t eq 2020-01-02/2020-01-01'), /ends before it starts at position 5 \('2020-01-02\/2020-01-01'\)/);
    assert.throws(() => filter('a/0b eq 1'), /at position 1/);
  });

  it('rejects impossible dates', () => {
    assert.deepEqual(failure('t gt 2021-02-29').slice(0, 2), [5, '2021-02-29']);
    assert.deepEqual(failure('t gt 2021-04-31T00:00:00Z').slice(0, 2), [5, '2021-04-31T00:00:00Z']);
    assert.deepEqual(failure('t gt 2021-01-01T24:00:00Z').slice(0, 2), [5, '2021-01-01T24:00:00Z']);
  });

  it('reads durations and WKT geometries as GeoJSON', () => {
    assert.equal(filter("t gt now() sub duration'P1DT2H'"), '(gt t (sub now() duration:P1DT2H))');
    assert.equal(filter("st_equals(location, geography'POINT(1 2)')"), 'st_equals(location, Point[1,2])');
    assert.equal(filter("st_equals(location, geometry'SRID=4326;POINT (1.5 -2 3)')"), 'st_equals(location, Point[1.5,-2,3])');
    assert.equal(filter("st_within(l, geography'LINESTRING(0 0, 1 1)')"), 'st_within(l, LineString[[0,0],[1,1]])');
    assert.equal(filter("st_within(l, geography'POINT Z (1 2 3)')"), 'st_within(l, Point[1,2,3])');
    assert.equal(filter("st_within(l, geography'POLYGON((0 0, 1 0, 1 1, 0 0), (0.1 0.1, 0.2 0.1, 0.2 0.2, 0.1 0.1))')"),
      'st_within(l, Polygon[[[0,0],[1,0],[1,1],[0,0]],[[0.1,0.1],[0.2,0.1],[0.2,0.2],[0.1,0.1]]])');
    assert.equal(filter("st_within(l, geography'MULTIPOINT((0 0), (1 1))')"), 'st_within(l, MultiPoint[[0,0],[1,1]])');
    assert.equal(filter("st_within(l, geography'MULTIPOINT(0 0, 1 1)')"), 'st_within(l, MultiPoint[[0,0],[1,1]])');
    assert.equal(filter("st_within(l, geography'MULTILINESTRING((0 0, 1 1), (2 2, 3 3))')"), 'st_within(l, MultiLineString[[[0,0],[1,1]],[[2,2],[3,3]]])');
    assert.equal(filter("st_within(l, geography'MULTIPOLYGON(((0 0, 1 0, 1 1, 0 0)), ((5 5, 6 5, 6 6, 5 5)))')"),
      'st_within(l, MultiPolygon[[[[0,0],[1,0],[1,1],[0,0]]],[[[5,5],[6,5],[6,6],[5,5]]]])');
  });

  it('reports bad durations and bad WKT where they stand', () => {
    assert.deepEqual(failure("t eq duration'P'").slice(0, 2), [5, "duration'P'"]);
    assert.deepEqual(failure("st_within(l, geography'CIRCLE(1 2)')").slice(0, 2), [23, 'CIRCLE']);
    assert.deepEqual(failure("st_within(l, geography'POINT(1)')").slice(0, 2), [29, '1)']);
    assert.match(failure("st_within(l, geography'POLYGON((0 0, 1 0, 1 1, 0 1))')")[2], /closed/);
    assert.deepEqual(failure("st_within(l, geography'POINT(1 2, 3 4)')").slice(0, 2), [32, ',']);
  });
});

describe('$filter properties and functions', () => {
  it('reads property paths', () => {
    assert.equal(filter("Datastream/Thing/name eq 'x'"), "(eq Datastream/Thing/name 'x')");
    assert.equal(filter('properties/owner eq 1'), '(eq properties/owner 1)');
    assert.equal(filter('@iot.id eq 1'), '(eq @iot.id 1)');
  });

  it('knows every function of the standard, with its arity', () => {
    for (const [name, arities] of Object.entries(FUNCTION_ARITY)) {
      for (const arity of arities) {
        const args = Array.from({ length: arity }, (_, k) => `p${k}`);
        assert.equal(filter(`${name}(${args.join(',')}) eq 1`), `(eq ${name}(${args.join(', ')}) 1)`);
      }
    }
    assert.equal(Object.keys(FUNCTION_ARITY).length, 39);
  });

  it('lower-cases function names and nests calls', () => {
    assert.equal(filter("startsWith(toLower(name), 'a')"), "startswith(tolower(name), 'a')");
    assert.equal(filter("substring(name, 1, 2) eq 'bc'"), "(eq substring(name, 1, 2) 'bc')");
  });

  it('checks arity and names at parse time', () => {
    assert.deepEqual(failure('substring(a) eq 1').slice(0, 2), [0, 'substring']);
    assert.match(failure('substring(a) eq 1')[2], /substring takes 2 or 3 arguments, not 1/);
    assert.deepEqual(failure('now(1) eq 1').slice(0, 2), [0, 'now']);
    assert.deepEqual(failure('st_relate(a, b) eq true').slice(0, 2), [0, 'st_relate']);
    assert.deepEqual(failure('foo(a) eq 1').slice(0, 2), [0, 'foo']);
  });
});

describe('$filter errors carry position and token', () => {
  const cases: [string, number, string, RegExp][] = [
    ['a eq', 4, '', /unexpected end of expression/],
    ['', 0, '', /unexpected end of expression/],
    ['a eqq 1', 2, 'eqq', /unexpected 'eqq'/],
    ['(a eq 1', 7, '', /'\)' expected/],
    ['a eq 1)', 6, ')', /unexpected '\)'/],
    ["name eq 'abc", 8, "'abc", /unterminated string/],
    ['a eq 1 and', 10, '', /unexpected end/],
    ['a eq #', 5, '#', /unexpected character/],
    ['a eq 5x', 6, 'x', /unexpected character/],
    ['and eq 1', 0, 'and', /unexpected 'and'/],
    ['contains(a, ) eq 1', 12, ')', /unexpected '\)'/],
    ['a/ eq 1', 1, '/', /path segment/],
    ['a eq 1,', 6, ',', /unexpected ','/],
  ];
  for (const [text, pos, token, message] of cases) {
    it(`${JSON.stringify(text)} → ${pos} '${token}'`, () => {
      const [p, t, m] = failure(text);
      assert.deepEqual([p, t], [pos, token]);
      assert.match(m, message);
    });
  }

  it('offsets positions for an expression inside a larger value', () => {
    assert.deepEqual(failure('a eqq 1', (text) => parseFilter(text, '$expand', 20)).slice(0, 2), [22, 'eqq']);
  });
});

describe('$orderby', () => {
  it('reads several expressions with and without directions', () => {
    const items = parseOrderBy('phenomenonTime desc, name,length(name) asc , result add 1 desc');
    assert.deepEqual(items.map((i) => `${render(i.expr)} ${i.direction}`),
      ['phenomenonTime desc', 'name asc', 'length(name) asc', '(add result 1) desc']);
  });

  it('reports what follows a direction', () => {
    assert.deepEqual(failure('name desc x', parseOrderBy).slice(0, 2), [10, 'x']);
    assert.deepEqual(failure('name,', parseOrderBy).slice(0, 2), [5, '']);
  });
});
