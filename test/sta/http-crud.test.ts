import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectProblem } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { datastream, feature, location, observedProperty, sensor, stationWithObservations, thing } from './fixtures.js';

/** SensorThings create, update and delete through the data API gateway, as a client sees them. */

type Json = Record<string, any>;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`SensorThings writes over HTTP (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    before(async () => {
      t = await buildTestApp(kind);
      sta = await publishStaDataset(t);
    });
    after(() => t.close());

    test('every entity type: 201 with an absolute Location on the public route, GET, PATCH, DELETE, then 404', async () => {
      const thingId = (await sta.request('POST', '/Things', thing('Http thing'))).json()['@iot.id'];
      const streamBody = datastream('Http stream', { Thing: { '@iot.id': thingId } });
      const cases: [string, Json][] = [
        ['Things', thing('Another')], ['Locations', location()], ['Sensors', sensor()], ['ObservedProperties', observedProperty()],
        ['FeaturesOfInterest', feature()], ['Datastreams', streamBody],
      ];
      for (const [set, body] of cases) {
        const created = await sta.request('POST', `/${set}`, body);
        assert.equal(created.statusCode, 201, created.body);
        const id = created.json()['@iot.id'];
        assert.equal(created.headers['location'], `${sta.publicBase}/${set}(${id})`);
        assert.equal(created.json()['@iot.selfLink'], `${sta.publicBase}/${set}(${id})`);
        assert.equal((await sta.request('GET', `/${set}(${id})`)).json().name, body['name']);
        const patched = await sta.request('PATCH', `/${set}(${id})`, { description: 'changed' });
        assert.equal(patched.statusCode, 200, patched.body);
        assert.equal(patched.json().description, 'changed');
        if (set === 'Datastreams') {
          const observation = await sta.request('POST', `/Datastreams(${id})/Observations`, { result: { ok: true }, FeatureOfInterest: feature('obs') });
          assert.equal(observation.statusCode, 201, observation.body);
          const observationId = observation.json()['@iot.id'];
          assert.deepEqual((await sta.request('GET', `/Observations(${observationId})/result`)).json(), { result: { ok: true } });
          const historical = await sta.request('POST', `/Things(${thingId})/HistoricalLocations`, { time: '2024-03-01T00:00:00Z' });
          assert.equal(historical.statusCode, 201, historical.body);
          assert.equal((await sta.request('DELETE', `/HistoricalLocations(${historical.json()['@iot.id']})`)).statusCode, 204);
        }
        assert.equal((await sta.request('DELETE', `/${set}(${id})`)).statusCode, 204);
        expectProblem(await sta.request('GET', `/${set}(${id})`), 404, 'NOT_FOUND');
      }
    });

    test('missing, mistyped and unknown properties are 400 problems naming the field', async () => {
      const missing = expectProblem(await sta.request('POST', '/Sensors', { name: 'no metadata', description: 'd', encodingType: 'text/html' }), 400, 'VALIDATION_FAILED');
      assert.deepEqual(missing.fieldErrors, [{ field: 'metadata', message: 'is required' }]);
      const mistyped = expectProblem(await sta.request('POST', '/Things', thing('x', { properties: [1] })), 400, 'VALIDATION_FAILED');
      assert.equal(mistyped.fieldErrors[0].field, 'properties');
      const unknown = expectProblem(await sta.request('POST', '/Things', thing('x', { color: 'red' })), 400, 'VALIDATION_FAILED');
      assert.equal(unknown.fieldErrors[0].field, 'color');
      const dangling = expectProblem(await sta.request('POST', '/Datastreams', datastream('x', { Thing: { '@iot.id': 987654 } })), 400, 'VALIDATION_FAILED');
      assert.match(dangling.detail, /987654/);
      expectProblem(await sta.request('POST', '/Things', thing('x', { '@iot.id': 12 })), 400, 'VALIDATION_FAILED');
    });

    test('a deep insert, the FeatureOfInterest made from the Location, the HistoricalLocation, and the cascade of a delete', async () => {
      const created = await sta.request('POST', '/Things', stationWithObservations(3, 'Deep over HTTP'));
      assert.equal(created.statusCode, 201, created.body);
      const id = created.json()['@iot.id'];
      const expanded = (await sta.request('GET', `/Things(${id})?$expand=Datastreams/Observations/FeatureOfInterest,HistoricalLocations/Locations`)).json();
      const observations = expanded.Datastreams[0].Observations;
      assert.equal(observations.length, 3);
      assert.equal(new Set(observations.map((o: Json) => o.FeatureOfInterest['@iot.id'])).size, 1);
      assert.deepEqual(observations[0].FeatureOfInterest.feature, location().location);
      assert.equal(expanded.HistoricalLocations.length, 1);
      assert.equal(expanded.HistoricalLocations[0].Locations[0].name, 'Town hall');
      const observationId = observations[0]['@iot.id'];
      assert.equal((await sta.request('DELETE', `/Things(${id})`)).statusCode, 204);
      expectProblem(await sta.request('GET', `/Observations(${observationId})`), 404, 'NOT_FOUND');
      expectProblem(await sta.request('GET', `/Datastreams(${expanded.Datastreams[0]['@iot.id']})`), 404, 'NOT_FOUND');
    });

    test('PUT clears what it omits; Prefer: return=minimal answers 204 with the Location; ids are not reused', async () => {
      const id = (await sta.request('POST', '/Things', thing('Put'))).json()['@iot.id'];
      const put = await sta.request('PUT', `/Things(${id})`, { name: 'Put again', description: 'all new' });
      assert.equal(put.statusCode, 200, put.body);
      assert.equal(put.json().properties, null);
      expectProblem(await sta.request('PUT', `/Things(${id})`, { name: 'no description' }), 400, 'VALIDATION_FAILED');
      const minimal = await sta.request('POST', '/Things', thing('Minimal'), { prefer: 'return=minimal' });
      assert.equal(minimal.statusCode, 204);
      assert.equal(minimal.body, '');
      const minimalId = Number(/Things\((\d+)\)$/.exec(String(minimal.headers['location']))![1]);
      assert.ok(minimalId > id);
      await sta.request('DELETE', `/Things(${minimalId})`);
      const after = (await sta.request('POST', '/Things', thing('After'))).json()['@iot.id'];
      assert.ok(after > minimalId, 'a deleted id is not given again');
    });

    test('paths and ids the server cannot parse are 400; entities that do not exist 404', async () => {
      expectProblem(await sta.request('GET', '/Things(abc)'), 400, 'VALIDATION_FAILED');
      expectProblem(await sta.request('GET', '/Things(1.5)'), 400, 'VALIDATION_FAILED');
      expectProblem(await sta.request('GET', '/Things(99999)'), 404, 'NOT_FOUND');
      expectProblem(await sta.request('GET', '/Things(99999)/Datastreams'), 404, 'NOT_FOUND');
      expectProblem(await sta.request('PATCH', '/Things(99999)', { name: 'x' }), 404, 'NOT_FOUND');
      expectProblem(await sta.request('DELETE', '/Things(99999)'), 404, 'NOT_FOUND');
      expectProblem(await sta.request('GET', '/Gadgets'), 404, 'NOT_FOUND');
    });
  });
}
