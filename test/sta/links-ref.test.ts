import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectFieldError, expectProblem, grant, uniqueEmail } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { datastream, location, point, sensor, thing } from './fixtures.js';

/** Links written with `$ref` (OData style, as FROST-Server serves them), through the data API gateway. */

type Json = Record<string, any>;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`SensorThings $ref writes (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    const post = async (path: string, body: unknown) => {
      const created = await sta.request('POST', path, body);
      assert.equal(created.statusCode, 201, created.body);
      return created.json()['@iot.id'] as number;
    };
    const ids = async (path: string) => ((await sta.request('GET', `${path}?$orderby=id`)).json().value as Json[]).map((e) => e['@iot.id']);
    const noContent = (response: { statusCode: number; body: string }) => {
      assert.equal(response.statusCode, 204, response.body);
      assert.equal(response.body, '');
    };

    before(async () => {
      t = await buildTestApp(kind);
      sta = await publishStaDataset(t);
    });
    after(() => t.close());

    test('POST …/Locations/$ref adds a link by @iot.id or @odata.id; GET …/$ref lists the links', async () => {
      const thingId = await post('/Things', thing('Linked'));
      const first = await post('/Locations', location('First'));
      const second = await post('/Locations', location('Second', point(9, 51)));
      noContent(await sta.request('POST', `/Things(${thingId})/Locations/$ref`, { '@iot.id': first }));
      assert.deepEqual(await ids(`/Things(${thingId})/Locations`), [first]);
      // The Thing is there now: one HistoricalLocation naming it.
      const history = (await sta.request('GET', `/Things(${thingId})/HistoricalLocations?$expand=Locations`)).json().value;
      assert.deepEqual(history.map((h: Json) => h.Locations.map((l: Json) => l['@iot.id'])), [[first]]);
      noContent(await sta.request('POST', `/Things(${thingId})/Locations/$ref`, { '@odata.id': `${sta.publicBase}/Locations(${second})` }));
      assert.deepEqual(await ids(`/Things(${thingId})/Locations`), [first, second]);
      // Linking again changes nothing (and records no second HistoricalLocation).
      noContent(await sta.request('POST', `/Things(${thingId})/Locations/$ref`, { '@odata.id': `Locations(${first})` }));
      assert.equal((await sta.request('GET', `/Things(${thingId})/HistoricalLocations?$count=true&$top=0`)).json()['@iot.count'], 2);
      const refs = (await sta.request('GET', `/Things(${thingId})/Locations/$ref`)).json().value;
      assert.deepEqual(refs, [{ '@iot.selfLink': `${sta.publicBase}/Locations(${first})` }, { '@iot.selfLink': `${sta.publicBase}/Locations(${second})` }]);
      // From the other side, and through a to-many foreign key (a Datastream moves to another Thing).
      const other = await post('/Things', thing('Other', { Datastreams: [datastream('Moving stream')] }));
      const streamId = (await ids(`/Things(${other})/Datastreams`))[0];
      noContent(await sta.request('POST', `/Locations(${second})/Things/$ref`, { '@iot.id': other }));
      assert.deepEqual(await ids(`/Things(${other})/Locations`), [second]);
      noContent(await sta.request('POST', `/Things(${thingId})/Datastreams/$ref`, { '@iot.id': streamId }));
      assert.equal((await sta.request('GET', `/Datastreams(${streamId})/Thing`)).json()['@iot.id'], thingId);
    });

    test('PUT …/Sensor/$ref replaces a to-one link', async () => {
      const thingId = await post('/Things', thing('Sensed', { Datastreams: [datastream('Sensed stream')] }));
      const streamId = (await ids(`/Things(${thingId})/Datastreams`))[0];
      const replacement = await post('/Sensors', sensor('Replacement'));
      noContent(await sta.request('PUT', `/Datastreams(${streamId})/Sensor/$ref`, { '@iot.id': replacement }));
      assert.equal((await sta.request('GET', `/Datastreams(${streamId})/Sensor`)).json()['@iot.id'], replacement);
      assert.deepEqual((await sta.request('GET', `/Datastreams(${streamId})/Sensor/$ref`)).json(), { '@iot.selfLink': `${sta.publicBase}/Sensors(${replacement})` });
      // A to-many link is added or removed, never replaced.
      const site = await post('/Locations', location('Put site'));
      expectProblem(await sta.request('PUT', `/Things(${thingId})/Locations/$ref`, { '@iot.id': site }), 405, 'MALFORMED_REQUEST');
    });

    test('DELETE …/Locations(5)/$ref or …/Locations/$ref?$id= removes a link, not the entity', async () => {
      const a = await post('/Locations', location('A'));
      const b = await post('/Locations', location('B'));
      const thingId = await post('/Things', thing('Unlinked', { Locations: [{ '@iot.id': a }, { '@iot.id': b }] }));
      noContent(await sta.request('DELETE', `/Things(${thingId})/Locations(${a})/$ref`));
      assert.deepEqual(await ids(`/Things(${thingId})/Locations`), [b]);
      assert.equal((await sta.request('GET', `/Locations(${a})`)).statusCode, 200, 'the Location itself stays');
      noContent(await sta.request('DELETE', `/Things(${thingId})/Locations/$ref?$id=${encodeURIComponent(`${sta.publicBase}/Locations(${b})`)}`));
      assert.deepEqual(await ids(`/Things(${thingId})/Locations`), []);
      // A link that is not there: 404; one every entity must have: 400.
      expectProblem(await sta.request('DELETE', `/Things(${thingId})/Locations/$ref?$id=Locations(${b})`), 404, 'NOT_FOUND');
      expectProblem(await sta.request('DELETE', `/Things(${thingId})/Locations(${b})/$ref`), 404, 'NOT_FOUND');
      const streamed = await post('/Things', thing('Streamed', { Datastreams: [datastream('Kept stream')] }));
      const streamId = (await ids(`/Things(${streamed})/Datastreams`))[0];
      expectFieldError(await sta.request('DELETE', `/Datastreams(${streamId})/Sensor/$ref`), '$ref');
      expectFieldError(await sta.request('DELETE', `/Things(${streamed})/Datastreams(${streamId})/$ref`), '$ref');
      assert.equal((await sta.request('GET', `/Datastreams(${streamId})/Thing`)).json()['@iot.id'], streamed);
    });

    test('bad references are 400 naming the field; unknown entities 400 or 404', async () => {
      const thingId = await post('/Things', thing('Strict'));
      const base = `/Things(${thingId})/Locations/$ref`;
      expectFieldError(await sta.request('POST', base, { '@iot.id': 987654 }), '@iot.id');
      expectFieldError(await sta.request('POST', base, { '@iot.id': -1 }), '@iot.id');
      expectFieldError(await sta.request('POST', base, { '@iot.id': 1, name: 'x' }), 'body');
      expectFieldError(await sta.request('POST', base, [1]), 'body');
      expectFieldError(await sta.request('POST', base, { '@odata.id': `${sta.publicBase}/Sensors(1)` }), '@odata.id');
      expectFieldError(await sta.request('POST', base, { '@odata.id': 'https://elsewhere.example.org/Locations(1)' }), '@odata.id');
      expectFieldError(await sta.request('POST', base, { '@odata.id': 'Locations(1);drop' }), '@odata.id');
      expectFieldError(await sta.request('POST', base, { '@odata.id': 'x'.repeat(5000) }), '@odata.id');
      expectFieldError(await sta.request('DELETE', base), '$id');
      expectProblem(await sta.request('POST', `/Things(987654)/Locations/$ref`, { '@iot.id': 1 }), 404, 'NOT_FOUND');
      expectProblem(await sta.request('PATCH', base, { '@iot.id': 1 }), 405, 'MALFORMED_REQUEST');
    });

    test('a $ref write is a write: a reader is refused, a writer served; in a $batch too', async () => {
      const thingId = await post('/Things', thing('Guarded'));
      const site = await post('/Locations', location('Guarded site'));
      const reader = await grant(t, uniqueEmail('ref-reader'), ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: sta.datasetId });
      const path = `/Things(${thingId})/Locations/$ref`;
      expectProblem(await sta.request('POST', path, { '@iot.id': site }, { authorization: `Bearer ${reader}` }), 403, 'ACCESS_DENIED');
      assert.equal((await sta.request('POST', path, { '@iot.id': site }, { authorization: null })).statusCode, 401);
      assert.equal((await sta.request('GET', path, undefined, { authorization: `Bearer ${reader}` })).json().value.length, 0);
      const writer = await grant(t, uniqueEmail('ref-writer'), ['DATASET_PAYLOAD_WRITE'], { scopeType: 'DATASET', scopeId: sta.datasetId });
      noContent(await sta.request('POST', path, { '@iot.id': site }, { authorization: `Bearer ${writer}` }));
      const batch = await sta.request('POST', '/$batch', { requests: [
        { id: 'unlink', method: 'delete', url: `Things(${thingId})/Locations(${site})/$ref` },
      ] }, { authorization: `Bearer ${reader}` });
      assert.equal(batch.statusCode, 200, batch.body);
      assert.equal(batch.json().responses[0].status, 403);
      const allowed = await sta.request('POST', '/$batch', { requests: [
        { id: 'unlink', method: 'delete', url: `Things(${thingId})/Locations(${site})/$ref` },
      ] });
      assert.equal(allowed.json().responses[0].status, 204, allowed.body);
      assert.deepEqual(await ids(`/Things(${thingId})/Locations`), []);
    });
  });
}
