import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectProblem } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { location, stationWithObservations, thing } from './fixtures.js';

// OData edge cases as clients send them, through the gateway: quotes inside strings, null, nested
// $expand with its own $filter, $orderby on several keys, $skip past the end, functions, and the
// position and token a bad query is refused at.
type Json = Record<string, any>;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`SensorThings OData edge cases (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    const get = async (path: string): Promise<Json> => {
      const response = await sta.request('GET', path);
      assert.equal(response.statusCode, 200, `${path}: ${response.body}`);
      return response.json();
    };
    const names = async (query: string) => (await get(`/Things?$select=name&${query}`)).value.map((entity: Json) => entity.name);
    before(async () => {
      t = await buildTestApp(kind);
      sta = await publishStaDataset(t);
      for (const body of [
        { ...stationWithObservations(4, "O'Brien's yard"), properties: { owner: 'city', rank: 2 } },
        { ...stationWithObservations(2, 'Main 100%_sure'), properties: { owner: 'utility', rank: 1 } },
        thing('Bare', { Locations: [location()], properties: { owner: null, rank: 2 } }),
        thing('No properties', { Locations: [location()], properties: null }),
      ]) {
        const created = await sta.request('POST', '/Things', body);
        assert.equal(created.statusCode, 201, created.body);
      }
    });
    after(() => t.close());

    test("escaped quotes ('') and LIKE wildcards in string literals are plain characters", async () => {
      assert.deepEqual(await names(encodeURI("$filter=name eq 'O''Brien''s yard'")), ["O'Brien's yard"]);
      assert.deepEqual(await names(encodeURI("$filter=substringof('''', name)")), ["O'Brien's yard"]);
      assert.deepEqual(await names(encodeURIComponent("$filter=contains(name, '%_')").replace('%24filter%3D', '$filter=')), ['Main 100%_sure']);
      assert.deepEqual(await names(encodeURI("$filter=startswith(name, 'Main') and endswith(name, 'sure')")), ['Main 100%_sure']);
    });

    test('null: a JSON null and an absent value both equal null; ne null keeps the rest', async () => {
      assert.deepEqual(await names(encodeURI('$filter=properties/owner eq null&$orderby=name')), ['Bare', 'No properties']);
      assert.deepEqual(await names(encodeURI('$filter=properties/owner ne null&$orderby=name')), ['Main 100%_sure', "O'Brien's yard"]);
      assert.deepEqual(await names(encodeURI('$filter=properties eq null')), ['No properties']);
    });

    test('$orderby on several keys, each with its direction', async () => {
      assert.deepEqual(await names(encodeURI('$filter=properties/rank ne null&$orderby=properties/rank desc,name asc')), ['Bare', "O'Brien's yard", 'Main 100%_sure']);
      assert.deepEqual(await names(encodeURI('$filter=properties/rank ne null&$orderby=properties/rank,name desc')), ['Main 100%_sure', "O'Brien's yard", 'Bare']);
    });

    test('nested $expand with its own $filter, $orderby, $top and $select at each level', async () => {
      const things = await get(`/Things?$filter=${encodeURIComponent("name eq 'O''Brien''s yard'")}&$expand=${encodeURIComponent('Datastreams($select=name;$expand=Observations($filter=result ge 21;$orderby=phenomenonTime desc;$top=2;$select=result))')}`);
      assert.equal(things.value.length, 1);
      const [stream] = things.value[0].Datastreams;
      assert.deepEqual(stream.Observations, [{ result: 23 }, { result: 22 }]);
      assert.equal(typeof stream['Observations@iot.nextLink'], 'string');
      assert.ok(stream['Observations@iot.nextLink'].startsWith(sta.publicBase));
    });

    test('$skip past the end is an empty page without a next link; $count still counts', async () => {
      const page = await get('/Things?$skip=50&$count=true');
      assert.deepEqual([page.value, page['@iot.count'], page['@iot.nextLink']], [[], 4, undefined]);
      const stream = (await get('/Datastreams?$top=1')).value[0]['@iot.id'];
      const pastTheEnd = await get(`/Datastreams(${stream})/Observations?$skip=1000&$count=true`);
      assert.deepEqual([pastTheEnd.value, pastTheEnd['@iot.count']], [[], 4]);
    });

    test("a navigation collection of an entity that does not exist is 404, whether or not the page would be empty", async () => {
      for (const path of ['/Datastreams(999999)/Observations', '/Datastreams(999999)/Observations?$top=0', '/Things(999999)/Datastreams?$count=true', '/Datastreams(999999)/Observations?$resultFormat=dataArray']) {
        expectProblem(await sta.request('GET', path), 404, 'NOT_FOUND');
      }
    });

    test('functions and arithmetic: year(), hour(), add, mod, round, tolower, length, indexof', async () => {
      const results = async (filter: string) => (await get(`/Observations?$orderby=id&$select=result&$filter=${encodeURIComponent(filter)}`)).value.map((o: Json) => o.result);
      assert.deepEqual(await results('year(phenomenonTime) eq 2020 and hour(phenomenonTime) ge 3'), [23]);
      assert.deepEqual(await results('result add 1 eq 22'), [21, 21]);
      assert.deepEqual(await results('result mod 2 eq 1 and Datastream/Thing/name eq \'Main 100%_sure\''), [21]);
      assert.deepEqual(await results('round(result div 2) eq 11 and phenomenonTime lt 2020-01-01T03:00:00Z'), [21, 22, 21]);
      assert.deepEqual(await names(encodeURIComponent("tolower(name) eq 'bare' or length(name) eq 13").replace(/^/, '$filter=')), ['Bare', 'No properties']);
      assert.deepEqual(await names(encodeURIComponent("indexof(name, 'Brien') eq 2").replace(/^/, '$filter=')), ["O'Brien's yard"]);
    });

    test('a query the grammar refuses answers 400 naming the option, position and token', async () => {
      const cases: Array<[string, RegExp]> = [
        ["$filter=name eq 'open", /\$filter: .*position 8/],
        ['$filter=name eq', /\$filter: .*position \d+ \(''\)/],
        ['$filter=(name eq 1', /\$filter/],
        ['$top=-1', /\$top/],
        ['$top=abc', /\$top/],
        ['$orderby=name sideways', /\$orderby: .*sideways/],
        ['$expand=Datastreams($top=x)', /\$expand/],
        ['$frobnicate=1', /frobnicate/],
        ["$filter=name gt 5", /\$filter: .*compare string with number/],
      ];
      for (const [query, detail] of cases) {
        const problem = expectProblem(await sta.request('GET', `/Things?${encodeURI(query)}`), 400, 'VALIDATION_FAILED');
        assert.match(problem.detail, detail, query);
      }
    });
  });
}
