import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { grant, uniqueEmail } from '../helpers/factories.js';
import { publishDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { datastream, stationWithObservations, thing } from '../sta/fixtures.js';
import { missing, requirePostgis } from '../helpers/requirements.js';

const postgis = await requirePostgis();

// Issue 16, finding 7: a caller holding DATASET_PAYLOAD_WRITE but not DATASET_PAYLOAD_READ read
// stored entities through `PATCH {}`. An answer to a write never carries stored data the caller
// may not read: an update answers 204 without a body, a create what the caller sent with the
// identifiers and links assigned. (Upstream mode: test/data-api/upstream-security.test.ts.)

type Json = Record<string, any>;

function expectEmpty204(response: LightMyRequestResponse, what: string) {
  assert.equal(response.statusCode, 204, `${what}: ${response.body}`);
  assert.equal(response.body, '', what);
  assert.equal(response.headers['content-type'], undefined, what);
}

for (const kind of databaseKinds(import.meta.url)) {
  describe(`write-only callers (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    let writer: Record<string, string>;
    let readerWriter: Record<string, string>;
    let thingId: number;
    let observationIds: number[];
    before(async () => {
      t = await buildTestApp(kind);
      sta = await publishDataset(t, { slug: 'sensors' });
      const scope = { scopeType: 'DATASET' as const, scopeId: sta.datasetId };
      writer = { authorization: `Bearer ${await grant(t, uniqueEmail('writer'), ['DATASET_PAYLOAD_WRITE'], scope)}` };
      readerWriter = { authorization: `Bearer ${await grant(t, uniqueEmail('reader-writer'), ['DATASET_PAYLOAD_READ', 'DATASET_PAYLOAD_WRITE'], scope)}` };
      const station = await sta.request('POST', '/Things', stationWithObservations(4, 'Secret station'));
      assert.equal(station.statusCode, 201, station.body);
      thingId = station.json()['@iot.id'];
      const observations = await sta.request('GET', `/Things(${thingId})/Datastreams?$expand=Observations($orderby=id)`);
      observationIds = observations.json().value[0].Observations.map((o: Json) => o['@iot.id']);
      assert.equal(observationIds.length, 4);
    });
    after(() => t.close());

    test('SensorThings: PATCH {} and PUT answer 204 without the stored entity, and still change it', async () => {
      expectEmpty204(await sta.request('PATCH', `/Things(${thingId})`, {}, writer), 'PATCH {}');
      expectEmpty204(await sta.request('PATCH', `/Observations(${observationIds[0]})`, { result: 99 }, writer), 'PATCH of an Observation');
      expectEmpty204(await sta.request('PUT', `/Things(${thingId})`, thing('Renamed station', { properties: { owner: 'city' } }), writer), 'PUT');
      // The writes happened: the admin reads them.
      assert.equal((await sta.request('GET', `/Things(${thingId})`)).json().name, 'Renamed station');
      assert.equal((await sta.request('GET', `/Observations(${observationIds[0]})`)).json().result, 99);
      // A caller who may read gets the entity, as before: the 204 is not a general change.
      const control = await sta.request('PATCH', `/Things(${thingId})`, {}, readerWriter);
      assert.equal(control.statusCode, 200, control.body);
      assert.deepEqual([control.json().name, control.json().properties], ['Renamed station', { owner: 'city' }]);
    });

    test('SensorThings: a create answers what the caller sent with the id and links, without values computed from stored entities', async () => {
      const created = await sta.request('POST', '/Things', thing('Mine'), writer);
      assert.equal(created.statusCode, 201, created.body);
      const body = created.json();
      assert.deepEqual([body.name, body.description, body.properties], ['Mine', 'Mine on the roof', { owner: 'city' }]);
      assert.equal(created.headers['location'], body['@iot.selfLink']);
      assert.equal(body['@iot.selfLink'], `${sta.publicBase}/Things(${body['@iot.id']})`);
      // A Datastream that takes over stored Observations: its phenomenonTime would quote theirs.
      const linked = (observationId: number) => datastream('Taken over', { Thing: { '@iot.id': thingId }, Observations: [{ '@iot.id': observationId }] });
      const byWriter = await sta.request('POST', '/Datastreams', linked(observationIds[1]!), writer);
      assert.equal(byWriter.statusCode, 201, byWriter.body);
      for (const derived of ['phenomenonTime', 'resultTime', 'observedArea']) assert.equal(byWriter.json()[derived], undefined, derived);
      assert.equal(byWriter.json().name, 'Taken over');
      const byReader = await sta.request('POST', '/Datastreams', linked(observationIds[2]!), readerWriter);
      assert.equal(byReader.statusCode, 201, byReader.body);
      assert.equal(byReader.json().phenomenonTime, '2020-01-01T02:00:00.000Z');
    });

    test('SensorThings $batch: an update inside it answers 204 without a body; a create answers as usual', async () => {
      const answer = await sta.request('POST', '/$batch', {
        requests: [
          { id: 'u', method: 'patch', url: `Things(${thingId})`, body: {} },
          { id: 'p', method: 'put', url: `Things(${thingId})`, body: thing('Renamed again') },
          { id: 'c', method: 'post', url: 'Things', body: thing('Batch-made') },
          { id: 'r', method: 'get', url: `Things(${thingId})` },
        ],
      }, writer);
      assert.equal(answer.statusCode, 200, answer.body);
      const [update, put, create, read] = answer.json().responses;
      assert.deepEqual(update, { id: 'u', status: 204 });
      assert.deepEqual(put, { id: 'p', status: 204 });
      assert.equal(create.status, 201);
      assert.equal(create.body.name, 'Batch-made');
      assert.equal(read.status, 403);
      assert.doesNotMatch(answer.body, /Secret station|Renamed/);
    });

    if (kind === 'postgres') {
      test('OWS feature item PUT answers 204 without the stored feature; a reader-writer gets the feature', { skip: missing(postgis) }, async () => {
        const ows = await publishDataset(t, { standard: 'OWS', slug: 'maps' });
        const scope = { scopeType: 'DATASET' as const, scopeId: ows.datasetId };
        const owsWriter = { authorization: `Bearer ${await grant(t, uniqueEmail('ows-writer'), ['DATASET_PAYLOAD_WRITE'], scope)}` };
        const owsReaderWriter = { authorization: `Bearer ${await grant(t, uniqueEmail('ows-rw'), ['DATASET_PAYLOAD_READ', 'DATASET_PAYLOAD_WRITE'], scope)}` };
        const created = await ows.request('POST', '/collections', { name: 'stops', geometryType: 'Point', properties: { label: 'string', note: 'string' } });
        assert.equal(created.statusCode, 201, created.body);
        const feature = (label: string) => ({ type: 'Feature', geometry: { type: 'Point', coordinates: [8.6, 50.1] }, properties: { label } });
        const added = await ows.request('POST', '/collections/stops/items', { ...feature('first'), properties: { label: 'first', note: 'stored note' } });
        const [id] = added.json().ids;
        expectEmpty204(await ows.request('PUT', `/collections/stops/items/${id}`, feature('replaced'), owsWriter), 'item PUT');
        assert.equal((await ows.request('GET', `/collections/stops/items/${id}`)).json().properties.label, 'replaced');
        const control = await ows.request('PUT', `/collections/stops/items/${id}`, feature('again'), owsReaderWriter);
        assert.equal(control.statusCode, 200, control.body);
        assert.equal(control.json().properties.label, 'again');
        // A create answers the identifiers assigned, nothing stored.
        const mine = await ows.request('POST', '/collections/stops/items', feature('mine'), owsWriter);
        assert.equal(mine.statusCode, 201, mine.body);
        assert.deepEqual(Object.keys(mine.json()), ['ids']);
      });
    }
  });
}
