import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectFieldError, expectProblem, grant, uniqueEmail } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { datastream, feature, location, thing } from './fixtures.js';

/** `CreateObservations` (create observations via dataArray), through the data API gateway. */

type Json = Record<string, any>;

const hour = (i: number) => new Date(Date.UTC(2021, 0, 1, 0, 0, i)).toISOString();

for (const kind of databaseKinds()) {
  describe(`SensorThings CreateObservations (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    let located: number;
    let unlocated: number;
    const create = (body: unknown, headers?: Record<string, string | null>) => sta.request('POST', '/CreateObservations', body, headers);
    const group = (datastreamId: number, components: string[], dataArray: unknown[][]) =>
      ({ Datastream: { '@iot.id': datastreamId }, components, 'dataArray@iot.count': dataArray.length, dataArray });

    before(async () => {
      t = await buildTestApp(kind);
      sta = await publishStaDataset(t);
      const withLocation = await sta.request('POST', '/Things', thing('Bulk station', { Locations: [location('Bulk site')], Datastreams: [datastream('Bulk stream')] }));
      located = (await sta.request('GET', `/Things(${withLocation.json()['@iot.id']})/Datastreams`)).json().value[0]['@iot.id'];
      const without = await sta.request('POST', '/Things', thing('Nowhere', { Datastreams: [datastream('Unlocated stream')] }));
      unlocated = (await sta.request('GET', `/Things(${without.json()['@iot.id']})/Datastreams`)).json().value[0]['@iot.id'];
    });
    after(() => t.close());

    test('201 with the selfLinks in order; each GETs; the FeatureOfInterest derived from the Location or given', async () => {
      const explicit = (await sta.request('POST', '/FeaturesOfInterest', feature('Given feature'))).json()['@iot.id'];
      const response = await create([
        group(located, ['phenomenonTime', 'result', 'resultTime', 'parameters'], [
          ['2020-01-01T00:00:00Z', 20.5, '2020-01-01T00:01:00Z', { source: 'bulk' }],
          ['2020-01-01T01:00:00Z/2020-01-01T02:00:00Z', { nested: [1, 'a'] }, null, null],
          ['2020-01-01T03:00:00Z', null, null, null],
        ]),
        group(located, ['result', 'phenomenonTime', 'FeatureOfInterest/id', 'validTime', 'resultQuality'], [
          ['text', '2020-02-01T00:00:00Z', explicit, '2020-02-01T00:00:00Z/2020-02-02T00:00:00Z', ['good']],
        ]),
      ]);
      assert.equal(response.statusCode, 201, response.body);
      const links: string[] = response.json();
      assert.equal(links.length, 4);
      const read = await Promise.all(links.map(async (link) => {
        assert.ok(link.startsWith(`${sta.publicBase}/Observations(`), link);
        const got = await sta.request('GET', `${link.slice(sta.publicBase.length)}?$expand=FeatureOfInterest`);
        assert.equal(got.statusCode, 200, got.body);
        return got.json();
      }));
      assert.deepEqual(read.map((o: Json) => o.result), [20.5, { nested: [1, 'a'] }, null, 'text']);
      assert.equal(read[0].phenomenonTime, '2020-01-01T00:00:00.000Z');
      assert.equal(read[0].resultTime, '2020-01-01T00:01:00.000Z');
      assert.deepEqual(read[0].parameters, { source: 'bulk' });
      assert.equal(read[1].phenomenonTime, '2020-01-01T01:00:00.000Z/2020-01-01T02:00:00.000Z');
      assert.equal(read[0].FeatureOfInterest.name, 'Bulk site');
      assert.deepEqual(read[0].FeatureOfInterest.feature, location().location);
      assert.equal(read[2].FeatureOfInterest['@iot.id'], read[0].FeatureOfInterest['@iot.id']);
      assert.equal(read[3].FeatureOfInterest['@iot.id'], explicit);
      assert.equal(read[3].validTime, '2020-02-01T00:00:00.000Z/2020-02-02T00:00:00.000Z');
      assert.deepEqual(read[3].resultQuality, ['good']);
      // The same FeatureOfInterest as a single POST derives.
      const single = await sta.request('POST', `/Datastreams(${located})/Observations?$expand=FeatureOfInterest`, { result: 1 });
      assert.equal(single.statusCode, 201, single.body);
      const singleFeature = (await sta.request('GET', `/Observations(${single.json()['@iot.id']})/FeatureOfInterest`)).json();
      assert.equal(singleFeature['@iot.id'], read[0].FeatureOfInterest['@iot.id']);
    });

    test('all or nothing: the first bad value is a 400 naming its position, and nothing is stored', async () => {
      const before = (await sta.request('GET', `/Datastreams(${located})/Observations?$count=true&$top=0`)).json()['@iot.count'];
      const rows = Array.from({ length: 20 }, (_, i) => [hour(i), i]);
      rows[17] = [hour(17), 1, 'extra'];
      expectFieldError(await create([group(located, ['phenomenonTime', 'result'], rows)]), '[0].dataArray[17]');
      rows[17] = ['yesterday', 1];
      expectFieldError(await create([group(located, ['phenomenonTime', 'result'], rows)]), '[0].dataArray[17][0]');
      rows[17] = [hour(17), 1];
      const badParameters = [[hour(1), 1, 'not an object']];
      expectFieldError(await create([group(located, ['phenomenonTime', 'result'], rows), group(located, ['phenomenonTime', 'result', 'parameters'], badParameters)]), '[1].dataArray[0][2]');
      expectFieldError(await create([group(located, ['phenomenonTime', 'result', 'FeatureOfInterest/id'], [[hour(1), 1, 987654]])]), '[0].dataArray[0][2]');
      expectFieldError(await create([group(located, ['phenomenonTime', 'result', 'FeatureOfInterest/id'], [[hour(1), 1, 'x']])]), '[0].dataArray[0][2]');
      expectFieldError(await create([group(located, ['phenomenonTime'], [[hour(1)]])]), '[0].components');
      expectFieldError(await create([group(located, ['phenomenonTime', 'result', 'colour'], [[hour(1), 1, 'red']])]), '[0].components[2]');
      expectFieldError(await create([{ ...group(located, ['phenomenonTime', 'result'], rows), 'dataArray@iot.count': 3 }]), '[0].dataArray@iot.count');
      expectFieldError(await create({ Datastream: { '@iot.id': located } }), 'body');
      expectFieldError(await create([{ components: ['phenomenonTime', 'result'], dataArray: [] }]), '[0].Datastream');
      // A Thing without a Location gives no FeatureOfInterest to derive.
      expectFieldError(await create([group(unlocated, ['phenomenonTime', 'result'], [[hour(1), 1]])]), '[0].FeatureOfInterest/id');
      const after = (await sta.request('GET', `/Datastreams(${located})/Observations?$count=true&$top=0`)).json()['@iot.count'];
      assert.equal(after, before);
    });

    test('an unknown Datastream is a 400 naming it', async () => {
      const unknown = expectFieldError(await create([group(located, ['phenomenonTime', 'result'], [[hour(1), 1]]), group(987654, ['phenomenonTime', 'result'], [[hour(1), 1]])]), '[1].Datastream');
      assert.match(unknown.detail, /987654/);
    });

    test('a read-only caller is refused at the gateway; a writer is served', async () => {
      const reader = await grant(t, uniqueEmail('bulk-reader'), ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: sta.datasetId });
      const body = [group(located, ['phenomenonTime', 'result'], [[hour(1), 1]])];
      const refused = expectProblem(await create(body, { authorization: `Bearer ${reader}` }), 403, 'ACCESS_DENIED');
      assert.match(refused.detail, /DATASET_PAYLOAD_WRITE/);
      assert.equal((await create(body, { authorization: null })).statusCode, 401);
      const writer = await grant(t, uniqueEmail('bulk-writer'), ['DATASET_PAYLOAD_WRITE'], { scopeType: 'DATASET', scopeId: sta.datasetId });
      assert.equal((await create(body, { authorization: `Bearer ${writer}` })).statusCode, 201);
    });

    test('inside a $batch atomicity group, rolled back with the group', async () => {
      const before = (await sta.request('GET', `/Datastreams(${located})/Observations?$count=true&$top=0`)).json()['@iot.count'];
      const response = await sta.request('POST', '/$batch', { requests: [
        { id: 'bulk', atomicityGroup: 'g', method: 'post', url: 'CreateObservations', body: [group(located, ['phenomenonTime', 'result'], [[hour(1), 1], [hour(2), 2]])] },
        { id: 'bad', atomicityGroup: 'g', method: 'post', url: 'Things', body: { name: 'no description' } },
        { id: 'bulk2', method: 'post', url: 'CreateObservations', body: [group(located, ['phenomenonTime', 'result'], [[hour(3), 3]])] },
      ] });
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(response.json().responses.map((r: Json) => r.status), [424, 400, 201]);
      const after = (await sta.request('GET', `/Datastreams(${located})/Observations?$count=true&$top=0`)).json()['@iot.count'];
      assert.equal(after, before + 1);
    });

    test('5,000 Observations in one request, all readable', async () => {
      const stream = await sta.request('POST', '/Things', thing('Many', { Locations: [location('Many site')], Datastreams: [datastream('Many stream')] }));
      const datastreamId = (await sta.request('GET', `/Things(${stream.json()['@iot.id']})/Datastreams`)).json().value[0]['@iot.id'];
      const rows = Array.from({ length: 5000 }, (_, i) => [new Date(Date.UTC(2022, 0, 1) + i * 1000).toISOString(), i]);
      const response = await create([group(datastreamId, ['phenomenonTime', 'result'], rows)]);
      assert.equal(response.statusCode, 201, response.body.slice(0, 500));
      const links: string[] = response.json();
      assert.equal(links.length, 5000);
      assert.equal(new Set(links).size, 5000);
      const page = (await sta.request('GET', `/Datastreams(${datastreamId})/Observations?$count=true&$orderby=phenomenonTime asc&$top=3&$select=result`)).json();
      assert.equal(page['@iot.count'], 5000);
      assert.deepEqual(page.value.map((o: Json) => o.result), [0, 1, 2]);
      const last = (await sta.request('GET', `${links[4999]!.slice(sta.publicBase.length)}`)).json();
      assert.equal(last.result, 4999);
    });
  });
}
