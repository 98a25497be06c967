import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectFieldError, expectProblem } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { datastream, location, thing } from './fixtures.js';

/**
 * Time over HTTP: intervals written as start/end, start/duration and duration/end, interval
 * literals in `$filter`, the comparisons of intervals with instants and intervals as FROST-Server
 * reads them (half-open intervals), `mindatetime()`/`maxdatetime()`, and 204 for a property
 * without a value.
 */

type Json = Record<string, any>;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`SensorThings time intervals (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    let streamId: number;
    const query = (values: Record<string, string>) => Object.entries(values).map(([key, value]) => `${key}=${encodeURIComponent(value)}`).join('&');
    const get = async (path: string, values: Record<string, string> = {}): Promise<Json> => {
      const response = await sta.request('GET', `${path}?${query(values)}`);
      assert.equal(response.statusCode, 200, `${path}: ${response.body}`);
      return response.json();
    };
    /** The results (each Observation's label) whose phenomenonTime matches. */
    const matching = async (filter: string) =>
      (await get('/Observations', { $filter: filter, $select: 'result', $orderby: 'result' })).value.map((o: Json) => o.result);
    const timeOf = async (result: string, property = 'phenomenonTime') =>
      (await get('/Observations', { $filter: `result eq '${result}'`, $select: property })).value[0][property];

    before(async () => {
      t = await buildTestApp(kind);
      sta = await publishStaDataset(t);
      const created = await sta.request('POST', '/Things', thing('Clock', {
        Locations: [location()],
        Datastreams: [datastream('Ticks', {
          Observations: [
            // a: 2016-01-01 00:00 to 02:00, written start/duration.
            { result: 'a', phenomenonTime: '2016-01-01T00:00:00Z/PT2H' },
            // b: the whole of 2016-01-02, written duration/end.
            { result: 'b', phenomenonTime: 'P1D/2016-01-03T00:00:00Z' },
            // c: an instant.
            { result: 'c', phenomenonTime: '2016-01-05T00:00:00Z' },
            // d: 2016-01-01 to 2016-01-03, start/end, with a validTime of one calendar month from 31 January.
            { result: 'd', phenomenonTime: '2016-01-01T00:00:00Z/2016-01-03T00:00:00Z', validTime: '2016-01-31T00:00:00Z/P1M' },
          ],
        })],
      }));
      assert.equal(created.statusCode, 201, created.body);
      streamId = (await get('/Datastreams', { $select: 'id' })).value[0]['@iot.id'];
    });
    after(() => t.close());

    test('an interval written with a duration is stored by its two ends', async () => {
      assert.equal(await timeOf('a'), '2016-01-01T00:00:00.000Z/2016-01-01T02:00:00.000Z');
      assert.equal(await timeOf('b'), '2016-01-02T00:00:00.000Z/2016-01-03T00:00:00.000Z');
      assert.equal(await timeOf('c'), '2016-01-05T00:00:00.000Z');
      assert.equal(await timeOf('d', 'validTime'), '2016-01-31T00:00:00.000Z/2016-02-29T00:00:00.000Z', 'one month from 31 January 2016 ends on the 29th of February');
      const created = await sta.request('POST', `/Datastreams(${streamId})/Observations`, { result: 'e', phenomenonTime: '2016-03-01T00:00:00Z/P1Y2M3DT4H5M6.5S' });
      assert.equal(created.statusCode, 201, created.body);
      assert.equal(await timeOf('e'), '2016-03-01T00:00:00.000Z/2017-05-04T04:05:06.500Z');
      const id = (await get('/Observations', { $filter: "result eq 'e'", $select: 'id' })).value[0]['@iot.id'];
      const patched = await sta.request('PATCH', `/Observations(${id})`, { phenomenonTime: 'PT30M/2016-03-01T00:00:00Z' });
      assert.equal(patched.statusCode, 200, patched.body);
      assert.equal(await timeOf('e'), '2016-02-29T23:30:00.000Z/2016-03-01T00:00:00.000Z');
      assert.equal((await sta.request('DELETE', `/Observations(${id})`)).statusCode, 204);
    });

    test('a malformed interval on input: 400 naming the field', async () => {
      for (const phenomenonTime of [
        '2016-01-01T00:00:00Z/P', '2016-01-01T00:00:00Z/PT', 'PT1H/PT2H', '2016-01-01T00:00:00Z/1D', '2016-01-01T00:00:00Z/-P1D',
        '2016-01-02T00:00:00Z/2016-01-01T00:00:00Z', '2016-01-01T00:00:00Z/P1D/P1D', `2016-01-01T00:00:00Z/P${'1'.repeat(200)}D`,
        'P1D/PT1H', '9999-12-31T00:00:00Z/P1Y', 'P2000Y/1999-01-01T00:00:00Z', '2016-01-01T00:00:00Z/P9999999999Y',
      ]) {
        const response = await sta.request('POST', `/Datastreams(${streamId})/Observations`, { result: 'x', phenomenonTime });
        expectFieldError(response, 'phenomenonTime');
      }
      assert.deepEqual(await matching("result eq 'x'"), [], 'nothing was written');
    });

    test('interval literals in $filter: start/end, start/duration and duration/end', async () => {
      assert.deepEqual(await matching('phenomenonTime eq 2016-01-01T00:00:00Z/2016-01-01T02:00:00Z'), ['a']);
      assert.deepEqual(await matching('phenomenonTime eq 2016-01-01T00:00:00Z/PT2H'), ['a']);
      assert.deepEqual(await matching('phenomenonTime eq P1D/2016-01-03T00:00:00Z'), ['b']);
      assert.deepEqual(await matching('phenomenonTime eq 2016-01-01/2016-01-03'), ['d'], 'dates alone are midnight UTC');
      assert.deepEqual(await matching('phenomenonTime eq 2016-01-01T00:00:00+01:00/2016-01-01T02:00:00+01:00'), [], 'offsets are applied');
      assert.deepEqual(await matching('phenomenonTime eq 2016-01-01T01:00:00+01:00/2016-01-01T04:00:00+02:00'), ['a']);
      // An interval literal keeps its form in the next link of an expanded collection.
      const things = await get('/Things', { $expand: 'Datastreams($expand=Observations($filter=phenomenonTime ge 2016-01-01T00:00:00Z/PT1H;$top=1;$orderby=result))' });
      const next = new URL(things.value[0].Datastreams[0]['Observations@iot.nextLink']);
      assert.equal(next.searchParams.get('$filter'), '(phenomenonTime ge 2016-01-01T00:00:00Z/PT1H)');
      const followed = await sta.request('GET', next.pathname.slice(next.pathname.indexOf('/Datastreams(')) + next.search);
      assert.equal(followed.statusCode, 200, followed.body);
      assert.deepEqual(followed.json().value.map((o: Json) => o.result), ['b']);
    });

    test('long durations within the bound are computed by the database', async () => {
      assert.deepEqual(await matching('phenomenonTime gt 9999-01-01T00:00:00Z/P4000Y or phenomenonTime lt P3999Y/0002-01-01T00:00:00Z'), []);
      assert.deepEqual(await matching("phenomenonTime gt now() sub duration'P3999Y'"), ['a', 'b', 'c', 'd']);
    });

    test('an interval against an instant: gt/ge on the start, lt/le on the end (which is not in the interval), eq/ne on both', async () => {
      assert.deepEqual(await matching('phenomenonTime lt 2016-01-01T02:00:00Z'), ['a']);
      assert.deepEqual(await matching('phenomenonTime lt 2016-01-01T01:59:59Z'), []);
      assert.deepEqual(await matching('phenomenonTime le 2016-01-03T00:00:00Z'), ['a', 'b', 'd']);
      assert.deepEqual(await matching('phenomenonTime gt 2016-01-02T00:00:00Z'), ['c']);
      assert.deepEqual(await matching('phenomenonTime ge 2016-01-02T00:00:00Z'), ['b', 'c']);
      assert.deepEqual(await matching('phenomenonTime eq 2016-01-05T00:00:00Z'), ['c']);
      assert.deepEqual(await matching('phenomenonTime ne 2016-01-01T00:00:00Z'), ['b', 'c'], 'a and d start at that instant');
      // The instant on the left.
      assert.deepEqual(await matching('2016-01-03T00:00:00Z ge phenomenonTime'), ['a', 'b', 'd']);
      assert.deepEqual(await matching('2016-01-03T00:00:00Z gt phenomenonTime'), ['a', 'b', 'd']);
      assert.deepEqual(await matching('2016-01-02T00:00:00Z gt phenomenonTime'), ['a']);
      assert.deepEqual(await matching('2016-01-02T00:00:00Z lt phenomenonTime'), ['c']);
      assert.deepEqual(await matching('2016-01-02T00:00:00Z le phenomenonTime'), ['b', 'c']);
    });

    test('an interval against an interval', async () => {
      const day2 = '2016-01-02T00:00:00Z/2016-01-03T00:00:00Z';
      assert.deepEqual(await matching(`phenomenonTime gt 2016-01-01T00:00:00Z/2016-01-02T00:00:00Z`), ['b', 'c'], 'starts at or after its end');
      assert.deepEqual(await matching(`phenomenonTime lt ${day2}`), ['a'], 'ends at or before its start');
      assert.deepEqual(await matching(`phenomenonTime ge ${day2}`), ['b', 'c'], 'neither end earlier');
      assert.deepEqual(await matching(`phenomenonTime le ${day2}`), ['a', 'b', 'd'], 'neither end later');
      assert.deepEqual(await matching(`phenomenonTime eq ${day2}`), ['b']);
      assert.deepEqual(await matching(`phenomenonTime ne ${day2}`), ['a', 'c'], 'both ends different: d ends as b does');
      assert.deepEqual(await matching('validTime gt phenomenonTime'), ['d']);
    });

    test('mindatetime() and maxdatetime(): the earliest and latest instants; with an argument, an interval\'s ends', async () => {
      assert.deepEqual(await matching('phenomenonTime gt mindatetime() and phenomenonTime lt maxdatetime()'), ['a', 'b', 'c', 'd']);
      assert.deepEqual(await matching('mindatetime() lt 0002-01-01T00:00:00Z and maxdatetime() gt 9999-12-31T23:59:59Z'), ['a', 'b', 'c', 'd']);
      assert.deepEqual(await matching('year(maxdatetime()) eq 9999 and year(mindatetime()) eq 1'), ['a', 'b', 'c', 'd']);
      assert.deepEqual(await matching('maxdatetime(phenomenonTime) eq 2016-01-03T00:00:00Z'), ['b', 'd']);
      assert.deepEqual(await matching('mindatetime(phenomenonTime) eq 2016-01-01T00:00:00Z'), ['a', 'd']);
      assert.deepEqual(await matching('validTime eq null or validTime lt maxdatetime()'), ['a', 'b', 'c', 'd']);
      const problem = expectProblem(await sta.request('GET', `/Observations?${query({ $filter: 'maxdatetime(phenomenonTime, resultTime) eq 1' })}`), 400, 'VALIDATION_FAILED');
      assert.match(problem.detail, /maxdatetime takes 0 or 1 arguments, not 2 at position 0/);
    });

    test('a malformed interval literal: 400 naming the position and the token', async () => {
      const cases: [string, RegExp][] = [
        ['phenomenonTime eq 2016-01-02T00:00:00Z/2016-01-01T00:00:00Z', /ends before it starts at position 18 \('2016-01-02T00:00:00Z\/2016-01-01T00:00:00Z'\)/],
        ['phenomenonTime eq 2016-01-01T00:00:00Z/P', /at position 39 \('P'\)/],
        ['phenomenonTime eq 2016-01-01T00:00:00Z/name', /start\/end, start\/duration or duration\/end at position 39 \('name'\)/],
        ['phenomenonTime eq 2016-01-01T00:00:00Z/2016-13-01T00:00:00Z', /invalid date-time at position 39/],
        ['phenomenonTime eq P1D/', /a date-time must follow the duration of an interval at position 22/],
        ['phenomenonTime eq P1D/2016-13-01T00:00:00Z', /invalid date-time at position 22/],
        ['phenomenonTime eq 2016-01-01T00:00:00Z/', /at position 39/],
        ['phenomenonTime eq 2016-01-01T00:00:00Z/PT1H/PT1H', /at position 39 \('PT1H\/PT1H'\)/],
        // Durations whose result no timestamp holds.
        ['phenomenonTime eq 2016-01-01T00:00:00Z/P4001Y', /a duration may span at most 4000 years at position 39 \('P4001Y'\)/],
        ['phenomenonTime eq P99999999999D/2016-01-01T00:00:00Z', /a duration may span at most 4000 years at position 18/],
        ["phenomenonTime lt now() sub duration'P3000Y400000D'", /a duration may span at most 4000 years at position 28/],
      ];
      for (const [filter, detail] of cases) {
        const problem = expectProblem(await sta.request('GET', `/Observations?${query({ $filter: filter })}`), 400, 'VALIDATION_FAILED');
        assert.match(problem.detail, detail, filter);
      }
    });

    test('a property without a value answers 204 No Content, with or without $value', async () => {
      const id = (await get('/Observations', { $filter: "result eq 'a'", $select: 'id' })).value[0]['@iot.id'];
      for (const path of [`/Observations(${id})/resultQuality`, `/Observations(${id})/resultQuality/$value`, `/Observations(${id})/validTime`, `/Observations(${id})/resultTime`]) {
        const response = await sta.request('GET', path);
        assert.equal(response.statusCode, 204, `${path}: ${response.body}`);
        assert.equal(response.body, '');
      }
      const created = await sta.request('POST', '/Things', { name: 'Bare', description: 'no properties' });
      assert.equal(created.statusCode, 201, created.body);
      const thingId = created.json()['@iot.id'];
      assert.equal((await sta.request('GET', `/Things(${thingId})/properties`)).statusCode, 204);
      assert.deepEqual((await sta.request('GET', `/Things(${thingId})/description`)).json(), { description: 'no properties' });
      assert.deepEqual((await sta.request('GET', `/Observations(${id})/phenomenonTime`)).json(), { phenomenonTime: '2016-01-01T00:00:00.000Z/2016-01-01T02:00:00.000Z' });
    });
  });
}
