import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectProblem } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { stationWithObservations } from './fixtures.js';

/** SensorThings reads through the data API gateway: the query options as a client writes them. */

type Json = Record<string, any>;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`SensorThings queries over HTTP (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    let get: (path: string) => Promise<Json>;
    let streams: Json[];
    before(async () => {
      t = await buildTestApp(kind);
      sta = await publishStaDataset(t);
      get = async (path) => {
        const response = await sta.request('GET', path);
        assert.equal(response.statusCode, 200, `${path}: ${response.body}`);
        return response.json();
      };
      for (const [name, n] of [['North', 6], ['South', 3], ['East', 0]] as const) {
        const created = await sta.request('POST', '/Things', { ...stationWithObservations(n, name), properties: { owner: name === 'South' ? 'utility' : 'city', floor: n } });
        assert.equal(created.statusCode, 201, created.body);
      }
      streams = (await get('/Datastreams?$orderby=id')).value;
    });
    after(() => t.close());

    test('the service root lists the entity sets on the public route and the conformance classes; v1.1 is an alias', async () => {
      const root = await get('');
      assert.deepEqual(root.value.map((s: Json) => s.name), ['Things', 'Locations', 'HistoricalLocations', 'Datastreams', 'MultiDatastreams', 'Sensors', 'ObservedProperties', 'Observations', 'FeaturesOfInterest']);
      assert.equal(root.value[3].url, `${sta.publicBase}/Datastreams`);
      assert.ok(root.serverSettings.conformance.includes('http://www.opengis.net/spec/iot_sensing/1.1/req/create-update-delete'));
      assert.equal((await get('/v1.1/Things?$top=1')).value[0]['@iot.selfLink'], `${sta.publicBase}/Things(1)`);
    });

    test('$filter on properties, json members, times and through navigations; $orderby with id as the tie-breaker', async () => {
      assert.deepEqual((await get("/Things?$filter=properties/owner eq 'city'&$select=name")).value, [{ name: 'North' }, { name: 'East' }]);
      assert.deepEqual((await get('/Things?$filter=properties/floor gt 2&$orderby=name desc&$select=name')).value, [{ name: 'South' }, { name: 'North' }]);
      const late = await get(`/Observations?$filter=phenomenonTime ge 2020-01-01T04:00:00Z and Datastream/Thing/name eq 'North'&$select=result`);
      assert.deepEqual(late.value, [{ result: 24 }, { result: 25 }]);
      const byResult = await get(`/Datastreams(${streams[0]['@iot.id']})/Observations?$orderby=result desc&$top=2&$select=result`);
      assert.deepEqual(byResult.value, [{ result: 25 }, { result: 24 }]);
      const tied = await get('/Observations?$orderby=Datastream/id desc&$select=id&$top=3');
      assert.ok(tied.value[0]['@iot.id'] > tied.value[1]['@iot.id'], 'ties ordered by id, in the direction of the last key');
      const tiedAsc = await get('/Observations?$orderby=Datastream/id&$select=id&$top=3');
      assert.ok(tiedAsc.value[0]['@iot.id'] < tiedAsc.value[1]['@iot.id']);
      assert.equal((await get('/Datastreams?$filter=Thing/id eq 2&$count=true'))['@iot.count'], 1);
      expectProblem(await sta.request('GET', '/Things?$filter=colour eq 1'), 400, 'VALIDATION_FAILED');
      expectProblem(await sta.request('GET', '/Things?$orderby=colour'), 400, 'VALIDATION_FAILED');
      expectProblem(await sta.request('GET', '/Things?$select=colour'), 400, 'VALIDATION_FAILED');
      expectProblem(await sta.request('GET', "/Things?$filter=name eqq 'x'"), 400, 'VALIDATION_FAILED');
    });

    test('$top, $skip, $count and @iot.nextLink on the public route, keeping every option', async () => {
      const first = await get("/Observations?$top=4&$count=true&$filter=result ge 21&$orderby=result");
      assert.equal(first['@iot.count'], 7);
      assert.deepEqual(first.value.map((o: Json) => o.result), [21, 21, 22, 22]);
      assert.ok(first['@iot.nextLink'].startsWith(`${sta.publicBase}/Observations?`));
      const nextUrl = new URL(first['@iot.nextLink']);
      assert.equal(nextUrl.searchParams.get('$skip'), '4');
      assert.equal(nextUrl.searchParams.get('$filter'), 'result ge 21');
      const second = await get(`${first['@iot.nextLink'].slice(sta.publicBase.length)}`);
      assert.deepEqual(second.value.map((o: Json) => o.result), [23, 24, 25]);
      assert.equal(second['@iot.nextLink'], undefined);
      assert.deepEqual(await get('/Things?$skip=50&$count=true'), { '@iot.count': 3, value: [] });
      assert.deepEqual(await get('/Things?$top=0&$count=true'), { '@iot.count': 3, value: [] }, 'the count alone, no next link');
      const capped = await get('/Observations?$top=5000');
      assert.equal(capped.value.length, 9);
    });

    test('$expand with its own $filter, $orderby, $top, $count and a next link per parent', async () => {
      const things = await get('/Things?$select=name&$expand=Datastreams($select=name;$expand=Observations($filter=result ge 21;$orderby=result desc;$top=2;$count=true;$select=result))');
      const [north, south, east] = things.value;
      const northStream = north.Datastreams[0];
      assert.deepEqual(northStream.Observations, [{ result: 25 }, { result: 24 }]);
      assert.equal(northStream['Observations@iot.count'], 5);
      const next = new URL(northStream['Observations@iot.nextLink']);
      assert.equal(next.origin + next.pathname, `${sta.publicBase}/Datastreams(${streams[0]['@iot.id']})/Observations`);
      assert.equal(next.searchParams.get('$skip'), '2');
      const followed = await get(northStream['Observations@iot.nextLink'].slice(sta.publicBase.length));
      assert.deepEqual(followed.value, [{ result: 23 }, { result: 22 }]);
      assert.deepEqual(south.Datastreams[0].Observations, [{ result: 22 }, { result: 21 }]);
      assert.equal(south.Datastreams[0]['Observations@iot.nextLink'], undefined);
      assert.deepEqual(east.Datastreams[0].Observations, []);
      const toOne = await get(`/Observations?$top=1&$select=result&$expand=Datastream($select=name;$expand=Thing($select=name))`);
      assert.deepEqual(toOne.value[0], { result: 20, Datastream: { name: 'Roof temperature', Thing: { name: 'North' } } });
      expectProblem(await sta.request('GET', '/Things?$expand=Observations'), 400, 'VALIDATION_FAILED');
    });

    test('navigation, $ref, a property and its $value (text/plain), HEAD', async () => {
      const thingOfObservation = await get('/Observations(1)/Datastream/Thing?$select=name');
      assert.deepEqual(thingOfObservation, { name: 'North' });
      assert.deepEqual(await get('/Things(1)/Datastreams/$ref'), { value: [{ '@iot.selfLink': `${sta.publicBase}/Datastreams(1)` }] });
      assert.deepEqual(await get('/Things(2)/name'), { name: 'South' });
      const raw = await sta.request('GET', '/Things(2)/name/$value');
      assert.equal(raw.statusCode, 200);
      assert.equal(raw.body, 'South');
      assert.match(String(raw.headers['content-type']), /^text\/plain/);
      const head = await sta.request('HEAD', '/Things');
      assert.equal(head.statusCode, 200);
      assert.equal(head.body, '');
      const linked = await get('/Things(1)?$select=name,Locations');
      assert.deepEqual(linked, { name: 'North', 'Locations@iot.navigationLink': `${sta.publicBase}/Things(1)/Locations` });
    });

    test('$resultFormat=dataArray groups Observations per Datastream', async () => {
      const answer = await get('/Observations?$resultFormat=dataArray&$select=id,result&$filter=result le 20&$count=true');
      assert.equal(answer['@iot.count'], 2);
      assert.deepEqual(answer.value.map((g: Json) => g['Datastream@iot.navigationLink']), [`${sta.publicBase}/Datastreams(1)`, `${sta.publicBase}/Datastreams(2)`]);
      assert.deepEqual(answer.value[0].components, ['id', 'result']);
      assert.deepEqual(answer.value[0].dataArray, [[1, 20]]);
    });
  });
}
