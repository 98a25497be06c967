import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectFieldError, expectProblem, grant, uniqueEmail } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { datastream, feature, location, multiDatastream, thing } from './fixtures.js';

/** `CreateObservations` (create observations via dataArray), through the data API gateway. */

type Json = Record<string, any>;

const hour = (i: number) => new Date(Date.UTC(2021, 0, 1, 0, 0, i)).toISOString();

for (const kind of databaseKinds(import.meta.url)) {
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

    test('a row that fails answers its own "error" entry (naming the value at fault); the other rows are stored', async () => {
      const count = async (id: number) => (await sta.request('GET', `/Datastreams(${id})/Observations?$count=true&$top=0`)).json()['@iot.count'] as number;
      const before = await count(located);
      const rows: unknown[][] = Array.from({ length: 20 }, (_, i) => [hour(i), i]);
      rows[17] = [hour(17), 1, 'extra'];
      rows[3] = ['yesterday', 3];
      // JSON takes a NUL character, PostgreSQL's jsonb does not: the database refuses this row alone.
      rows[9] = [hour(9), 'nul \u0000 inside'];
      const response = await create([
        group(located, ['phenomenonTime', 'result'], rows),
        group(located, ['phenomenonTime', 'result', 'parameters'], [[hour(30), 30, 'not an object'], [hour(31), 31, { ok: true }]]),
        group(located, ['phenomenonTime', 'result', 'FeatureOfInterest/id'], [[hour(40), 40, 987654], [hour(41), 41, 'x'], [hour(42), 42, null]]),
        group(unlocated, ['phenomenonTime', 'result'], [[hour(50), 50]]),
        group(987654, ['phenomenonTime', 'result'], [[hour(60), 60], [hour(61), 61]]),
      ]);
      assert.equal(response.statusCode, 201, response.body);
      const entries: string[] = response.json();
      assert.equal(entries.length, 20 + 2 + 3 + 1 + 2);
      const expected: Record<number, RegExp> = {
        3: /^error \[0\]\.dataArray\[3\]\[0\]: must be an ISO 8601 date-time$/,
        9: /^error \[0\]\.dataArray\[9\]: the database refused this row$/,
        17: /^error \[0\]\.dataArray\[17\]: must be an array of 2 values/,
        20: /^error \[1\]\.dataArray\[0\]\[2\]: must be a JSON object$/,
        22: /^error \[2\]\.dataArray\[0\]\[2\]: FeatureOfInterest with @iot\.id 987654 does not exist$/,
        23: /^error \[2\]\.dataArray\[1\]\[2\]: must be a FeatureOfInterest id/,
        25: /^error \[3\]\.FeatureOfInterest\/id: is required: the Thing of this Datastream has no Location/,
        26: /^error \[4\]\.Datastream: Datastream with @iot\.id 987654 does not exist$/,
        27: /^error \[4\]\.Datastream: /,
      };
      const stored: number[] = [];
      entries.forEach((entry, i) => {
        if (expected[i]) assert.match(entry, expected[i]!, `entry ${i}`);
        else {
          assert.ok(entry.startsWith(`${sta.publicBase}/Observations(`), `entry ${i}: ${entry}`);
          stored.push(i);
        }
      });
      assert.equal(stored.length, 28 - 9);
      assert.equal(await count(located), before + stored.length);
      // The stored ones are the rows they stand for.
      const results = await Promise.all(stored.map(async (i) => (await sta.request('GET', `${entries[i]!.slice(sta.publicBase.length)}/result`)).json().result));
      assert.deepEqual(results, [0, 1, 2, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 18, 19, 31, 42]);
      assert.equal(await count(unlocated), 0);
    });

    test('a MultiDatastream group: a row whose result is not an array of the declared length answers "error"; the others are stored, their FeatureOfInterest derived', async () => {
      const thingId = (await sta.request('GET', `/Datastreams(${located})/Thing`)).json()['@iot.id'];
      const multi = await sta.request('POST', `/Things(${thingId})/MultiDatastreams`, multiDatastream('Bulk wind'));
      assert.equal(multi.statusCode, 201, multi.body);
      const multiId = multi.json()['@iot.id'];
      const response = await create([
        { MultiDatastream: { '@iot.id': multiId }, components: ['phenomenonTime', 'result'], dataArray: [[hour(70), [1, 10]], [hour(71), [2]], [hour(72), 'calm'], [hour(73), [3, 30]]] },
        group(located, ['phenomenonTime', 'result'], [[hour(74), 74]]),
      ]);
      assert.equal(response.statusCode, 201, response.body);
      const entries: string[] = response.json();
      assert.equal(entries.length, 5);
      assert.match(entries[1]!, /^error \[0\]\.dataArray\[1\]\[1\]: must be an array of 2 values, one per ObservedProperty/);
      assert.match(entries[2]!, /^error \[0\]\.dataArray\[2\]\[1\]: must be an array of 2 values/);
      for (const i of [0, 3, 4]) assert.ok(entries[i]!.startsWith(`${sta.publicBase}/Observations(`), `entry ${i}: ${entries[i]}`);
      const stored = (await sta.request('GET', `/MultiDatastreams(${multiId})/Observations?$orderby=phenomenonTime&$select=result&$expand=FeatureOfInterest($select=name)`)).json().value;
      assert.deepEqual(stored.map((o: Json) => o.result), [[1, 10], [3, 30]]);
      assert.deepEqual(stored.map((o: Json) => o.FeatureOfInterest.name), ['Bulk site', 'Bulk site']);
      const single = (await sta.request('GET', `${entries[4]!.slice(sta.publicBase.length)}?$expand=Datastream($select=id)`)).json();
      assert.equal(single.result, 74);
      assert.equal(single.Datastream['@iot.id'], located);
    });

    test('a request whose shape is wrong is a 400 naming where, and stores nothing', async () => {
      const before = (await sta.request('GET', `/Datastreams(${located})/Observations?$count=true&$top=0`)).json()['@iot.count'];
      const rows = [[hour(1), 1], [hour(2), 2]];
      const good = group(located, ['phenomenonTime', 'result'], rows);
      expectFieldError(await create([good, group(located, ['phenomenonTime'], [[hour(1)]])]), '[1].components');
      expectFieldError(await create([good, group(located, ['phenomenonTime', 'result', 'colour'], [[hour(1), 1, 'red']])]), '[1].components[2]');
      expectFieldError(await create([good, { ...good, 'dataArray@iot.count': 3 }]), '[1].dataArray@iot.count');
      expectFieldError(await create([good, { ...good, dataArray: 'rows' }]), '[1].dataArray');
      expectFieldError(await create([good, { ...good, colour: 'red' }]), '[1].colour');
      expectFieldError(await create({ Datastream: { '@iot.id': located } }), 'body');
      expectFieldError(await create([]), 'body');
      expectFieldError(await create([good, { components: ['phenomenonTime', 'result'], dataArray: [] }]), '[1].Datastream');
      const after = (await sta.request('GET', `/Datastreams(${located})/Observations?$count=true&$top=0`)).json()['@iot.count'];
      assert.equal(after, before);
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
