import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { compileFilter } from '../../../src/sta/query/compile.js';
import { jsonAsInstant } from '../../../src/sta/query/typed.js';
import { parseFilter } from '../../../src/sta/query/parse-expression.js';
import { parseQueryOptions } from '../../../src/sta/query/parse-options.js';
import { StaQueryError } from '../../../src/sta/query/errors.js';
import { databaseKinds } from '../../helpers/test-app.js';
import { compileFailure, idsOrderedBy, idsWhere, openFixtureOn, resolver, type AnyDb } from './fixture.js';

/** Compiled filters run on an in-memory PGlite, and on PostgreSQL when TEST_DATABASE_URL is set; see fixture.ts for the rows. */

for (const kind of databaseKinds(import.meta.url)) describe(`on ${kind}`, () => {
  let db: AnyDb;
  let close: () => Promise<void>;
  before(async () => ({ db, close } = await openFixtureOn(kind)));
  after(() => close());

  const rows = (filter: string) => idsWhere(db, filter);

  describe('compiled comparisons on typed properties', () => {
    it('compares strings, numbers, booleans and date-times', async () => {
      assert.deepEqual(await rows("name eq 'Alpha'"), [1]);
      assert.deepEqual(await rows("name ne 'Alpha'"), [2, 3, 5, 6, 7]);
      assert.deepEqual(await rows("name gt 'b'"), [6, 7]);
      assert.deepEqual(await rows('value gt 3'), [2, 6]);
      assert.deepEqual(await rows('value ge 3'), [2, 6, 7]);
      assert.deepEqual(await rows('value lt 0'), [3]);
      assert.deepEqual(await rows('value le 0'), [3, 5]);
      assert.deepEqual(await rows('value eq 1.5'), [1]);
      assert.deepEqual(await rows('value eq -2'), [3]);
      assert.deepEqual(await rows('active eq true'), [1, 5, 7]);
      assert.deepEqual(await rows('active'), [1, 5, 7]);
      assert.deepEqual(await rows('active eq false'), [2, 6]);
      assert.deepEqual(await rows('resultTime gt 2021-01-01T00:00:00Z'), [2, 5]);
      assert.deepEqual(await rows('resultTime eq 2020-06-15T12:30:45.25+02:00'), [1]);
      assert.deepEqual(await rows("resultTime lt '2021-01-01T00:00:00Z'"), [1]);
    });

    it('compares ids as integers, quoted or not, and refuses other ids', async () => {
      assert.deepEqual(await rows('id eq 2'), [2]);
      assert.deepEqual(await rows("id eq '2'"), [2]);
      assert.deepEqual(await rows('@iot.id gt 5'), [6, 7]);
      assert.deepEqual(await rows('id lt 2.5'), [1, 2]);
      assert.deepEqual(compileFailure("id eq 'abc'").slice(0, 2), [6, 'abc']);
    });

    it('handles null on either side', async () => {
      assert.deepEqual(await rows('name eq null'), [4]);
      assert.deepEqual(await rows('null ne name'), [1, 2, 3, 5, 6, 7]);
      assert.deepEqual(await rows('active eq null'), [3, 4]);
      assert.deepEqual(await rows('phenomenonTime eq null'), [4, 6, 7]);
      assert.deepEqual(await rows('value gt 0 or value eq null'), [1, 2, 4, 6, 7]);
      assert.match(compileFailure('value gt null')[2], /only be compared with eq or ne/);
    });

    it('keeps quotes, % and _ in values literal', async () => {
      assert.deepEqual(await rows("name eq 'O''Brien'"), [2]);
      assert.deepEqual(await rows("name eq '100%_done'"), [3]);
      assert.deepEqual(await rows("name eq '100__done'"), []);
    });

    it('refuses comparisons across types the standard does not relate, at the operator', () => {
      const [pos, token, detail] = compileFailure('name gt 5');
      assert.deepEqual([pos, token], [5, 'gt']);
      assert.match(detail, /cannot compare string with number/);
      assert.match(compileFailure('value eq true')[2], /cannot compare number with boolean/);
      assert.match(compileFailure("value eq 'x'")[2], /cannot compare number with string/);
      assert.match(compileFailure("resultTime eq 'soon'")[2], /cannot compare date-time with string/);
      assert.deepEqual(compileFailure("nosuch eq 'x'").slice(0, 2), [0, 'nosuch']);
      assert.match(compileFailure('name')[2], /must be a boolean expression/);
      assert.match(compileFailure("name add 1 eq 2")[2], /a number is expected, not a string/);
    });
  });

  describe('compiled logic and arithmetic', () => {
    it('combines with and, or, not and parentheses', async () => {
      assert.deepEqual(await rows('value gt 0 and active eq true'), [1, 7]);
      assert.deepEqual(await rows('value lt 0 or value gt 9'), [2, 3]);
      assert.deepEqual(await rows('not (value gt 0)'), [3, 5]);
      assert.deepEqual(await rows("not name eq 'Alpha' and value gt 5"), [2, 6]);
      assert.deepEqual(await rows('value gt 5 or value lt 0 and active eq true'), [2, 6]);
      assert.deepEqual(await rows('(value gt 5 or value lt 0) and active eq false'), [2, 6]);
    });

    it('computes add, sub, mul, div, mod and negation', async () => {
      assert.deepEqual(await rows('value add 1 eq 11'), [2]);
      assert.deepEqual(await rows('value sub 1 eq 6'), [6]);
      assert.deepEqual(await rows('value mul 2 eq 3'), [1]);
      assert.deepEqual(await rows('value div 2 eq 5'), [2]);
      assert.deepEqual(await rows('value mod 4 eq 3'), [6, 7]);
      assert.deepEqual(await rows('-value eq 2'), [3]);
      assert.deepEqual(await rows('value add 2 mul 3 eq 9'), [7]);
      assert.deepEqual(await rows('id mul 2 eq 14'), [7]);
    });

    it('gives no row rather than an error on division by zero', async () => {
      assert.deepEqual(await rows('value div 0 eq 1'), []);
      assert.deepEqual(await rows('value mod 0 eq 1'), []);
    });

    it('moves date-times by durations', async () => {
      assert.deepEqual(await rows("resultTime add duration'P1D' lt 2020-06-17T00:00:00Z"), [1]);
      assert.deepEqual(await rows("resultTime gt now() sub duration'P36500D'"), [1, 2, 5]);
    });
  });

  describe('compiled comparisons on json values', () => {
    it('compares by the type of the other side, on rows of that JSON type only', async () => {
      assert.deepEqual(await rows('result eq 5'), [1]);
      assert.deepEqual(await rows('result gt 4'), [1]);
      assert.deepEqual(await rows('result ne 4'), [1]);
      assert.deepEqual(await rows("result eq 'high'"), [2]);
      assert.deepEqual(await rows("result gt 'a'"), [2]);
      assert.deepEqual(await rows('result eq true'), [3]);
      assert.deepEqual(await rows('5 eq result'), [1]);
      assert.deepEqual(await rows('result add 1 eq 6'), [1]);
      assert.deepEqual(await rows('result eq value add 3.5'), [1]);
    });

    it('treats SQL null and JSON null alike', async () => {
      assert.deepEqual(await rows('result eq null'), [4, 7]);
      assert.deepEqual(await rows('result ne null'), [1, 2, 3, 5, 6]);
      assert.deepEqual(await rows('properties/owner eq null'), [3, 4, 5, 6]);
    });

    it('compares date-time strings as instants, skipping strings that are not real dates', async () => {
      assert.deepEqual(await rows('result gt 2020-01-01T00:00:00Z'), [5]);
      assert.deepEqual(await rows('result lt 2030-01-01'), [5]);
      assert.deepEqual(await rows('phenomenonTime gt result'), [5]);
      assert.deepEqual(await rows('phenomenonTime lt result'), []);
    });

    it('casts a json string to an instant only where PostgreSQL can read it', async () => {
      const valid = ['2020-02-29', '2000-02-29T10:00Z', '2021-12-31T23:59:59.123456+14:00', '2021-06-01T10:00:00-05:30'];
      const invalid = ['2021-02-29', '1900-02-29', '0000-01-01', '0000-02-29', '2020-02-29T24:00Z', '2020-13-01', '2020-04-31', '2020-01-01T10:00+15:00', 'x', '2020-01-01T10:60Z'];
      for (const text of [...valid, ...invalid]) {
        const { rows: [row] } = await sql<{ t: Date | null }>`select ${jsonAsInstant(sql`cast(${JSON.stringify(text)} as jsonb)`)} as t`.execute(db);
        assert.equal(row!.t !== null, valid.includes(text), text);
      }
    });

    it('compares json with json only where both hold the same JSON type', async () => {
      assert.deepEqual(await rows('result lt properties/level'), []);
      assert.deepEqual(await rows('result gt properties/level'), [1]);
      assert.deepEqual(await rows('result eq result'), [1, 2, 3, 5, 6, 7]);
    });

    it('reaches into properties', async () => {
      assert.deepEqual(await rows("properties/owner eq 'ann'"), [1, 7]);
      assert.deepEqual(await rows('properties/level gt 5'), [5]);
      assert.deepEqual(await rows("properties/level eq 3 and properties/owner eq 'ann'"), [1]);
    });
  });

  describe('compiled comparisons on time intervals', () => {
    // Row 1 is the instant 2020-01-01, row 2 spans 2020, row 3 is an instant in 2021, row 5 spans 2022-01-01.
    // As FROST-Server reads them: an interval is half-open (its end is not in it), `ne` wants both ends different.
    it('reads gt as "starts after" and lt as "ends before"', async () => {
      assert.deepEqual(await rows('phenomenonTime gt 2020-06-01T00:00:00Z'), [3, 5]);
      assert.deepEqual(await rows('phenomenonTime ge 2020-01-01T00:00:00Z'), [1, 2, 3, 5]);
      assert.deepEqual(await rows('phenomenonTime gt 2020-01-01T00:00:00Z'), [3, 5]);
      assert.deepEqual(await rows('phenomenonTime lt 2020-06-01T00:00:00Z'), [1]);
      assert.deepEqual(await rows('phenomenonTime le 2020-12-31T00:00:00Z'), [1, 2]);
      assert.deepEqual(await rows('phenomenonTime lt 2020-12-31T00:00:00Z'), [1, 2], 'row 2 ends at that instant, which is not in it');
      assert.deepEqual(await rows('phenomenonTime lt 2020-12-30T00:00:00Z'), [1]);
    });

    it('reads eq as "both bounds equal" and ne as "both bounds different"', async () => {
      assert.deepEqual(await rows('phenomenonTime eq 2020-01-01T00:00:00Z'), [1]);
      assert.deepEqual(await rows('phenomenonTime eq 2021-06-01T14:00:00+02:00'), [3]);
      assert.deepEqual(await rows('phenomenonTime ne 2020-01-01T00:00:00Z'), [3, 5], 'row 2 starts at that instant');
      assert.deepEqual(await rows('phenomenonTime ne 2020-06-01T00:00:00Z'), [1, 2, 3, 5]);
    });

    it('works with the instant on the left and against another date-time', async () => {
      assert.deepEqual(await rows('2020-06-01T00:00:00Z lt phenomenonTime'), [3, 5]);
      assert.deepEqual(await rows('phenomenonTime lt resultTime'), [1, 2]);
      assert.deepEqual(await rows('phenomenonTime gt now()'), []);
    });
  });

  describe('compiled $orderby', () => {
    it('orders by several keys in either direction', async () => {
      assert.deepEqual(await idsOrderedBy(db, 'value desc'), [4, 2, 6, 7, 1, 5, 3]);
      // PostgreSQL's default: nulls sort as the largest value.
      assert.deepEqual(await idsOrderedBy(db, 'active desc, value'), [3, 4, 5, 1, 7, 6, 2]);
      assert.deepEqual(await idsOrderedBy(db, 'length(name) desc'), [4, 5, 3, 2, 1, 7, 6]);
    });

    it('orders intervals by their start and json by its jsonb value', async () => {
      assert.deepEqual(await idsOrderedBy(db, 'phenomenonTime desc'), [4, 6, 7, 5, 3, 1, 2]);
      // jsonb order: JSON null < strings < numbers < booleans; SQL null last.
      assert.deepEqual(await idsOrderedBy(db, 'result'), [7, 5, 6, 2, 1, 3, 4]);
    });
  });

  describe('values only as parameters', () => {
    it('keeps a hostile string out of the SQL text', async () => {
      const hostile = "x'); drop table t; --";
      const filter = parseQueryOptions(`$filter=${encodeURIComponent(`name eq 'x''); drop table t; --' or properties/owner eq 'ann'`)}`).filter!;
      const compiled = sql`select id from t where ${compileFilter(filter, resolver)}`.compile(db);
      assert.ok(!compiled.sql.includes('drop table'), compiled.sql);
      assert.ok(!compiled.sql.includes('ann'), compiled.sql);
      assert.ok(compiled.parameters.includes(hostile));
      assert.ok(compiled.parameters.includes('ann'));
      assert.deepEqual(await rows(`name eq 'x''); drop table t; --'`), []);
      assert.deepEqual(await rows('id eq 1'), [1]);
    });

    it('binds numbers, date-times and durations too', () => {
      const compiled = sql`${compileFilter(parseFilter("value gt 12345 and resultTime lt 2020-01-01T00:00:00Z and resultTime gt now() sub duration'P7D'"), resolver)}`.compile(db);
      for (const value of ['12345', '2020-01-01', 'P7D']) assert.ok(!compiled.sql.includes(value), compiled.sql);
      assert.deepEqual(compiled.parameters.slice(0, 3), ['12345', '2020-01-01T00:00:00Z', 'P7D']);
    });
  });
});

describe('compile errors inside $expand', () => {
  it('name $expand and the position within its value when told so', () => {
    const value = "Datastreams($filter=name gt 5)";
    const filter = parseQueryOptions(`$expand=${value}`).expand![0]!.options.filter!;
    assert.throws(() => compileFilter(filter, resolver, { where: '$expand' }), (error: unknown) => {
      assert.ok(error instanceof StaQueryError);
      assert.deepEqual([error.where, error.position, error.token], ['$expand', value.indexOf('gt'), 'gt']);
      return true;
    });
  });
});
