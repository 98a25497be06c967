import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../src/errors.js';
import { databaseKinds } from '../helpers/test-app.js';
import { BASE, count, openStore, type Store } from './store-harness.js';
import { datastream, feature, location, observedProperty, point, sensor, stationWithObservations, thing } from './fixtures.js';

/** The store's writes called below the parser: creates, updates, deletes and their rules. */

const rejects = (promise: Promise<unknown>, status: number, detail: RegExp) =>
  assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof AppError, String(error));
    assert.equal(error.status, status);
    assert.match(error.message, detail);
    return true;
  });

type Json = Record<string, any>;
const bodyOf = (response: { body?: unknown }) => response.body as Json;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`SensorThings store writes (${kind})`, () => {
    let store: Store;
    const changes: { entitySet: string; id: number; kind: string; properties?: string[] }[] = [];
    before(async () => {
      store = await openStore(kind, { onChange: (change) => changes.push(change) });
    });
    after(() => store.close());

    test('each of the eight entity types is created, read, patched and deleted; required properties are named when missing', async () => {
      const created = bodyOf(await store.call('POST', '/Things', { body: thing('Crud thing') }));
      const thingId = created['@iot.id'];
      const bodies: [string, Json, string][] = [
        ['Locations', location('Crud place'), 'encodingType'],
        ['Sensors', sensor('Crud sensor'), 'metadata'],
        ['ObservedProperties', observedProperty('Crud property'), 'definition'],
        ['FeaturesOfInterest', feature('Crud feature'), 'feature'],
        ['Things', thing('Crud thing 2'), 'description'],
      ];
      for (const [set, body, required] of bodies) {
        const { [required]: _dropped, ...incomplete } = body;
        await rejects(store.call('POST', `/${set}`, { body: incomplete }), 400, new RegExp(`${required}: is required`));
        const response = await store.call('POST', `/${set}`, { body });
        assert.equal(response.status, 201);
        const id = bodyOf(response)['@iot.id'];
        assert.equal(response.headers?.['location'], `${BASE}/${set}(${id})`);
        assert.equal(bodyOf(await store.call('GET', `/${set}(${id})`))['name'], body['name']);
        const patched = await store.call('PATCH', `/${set}(${id})`, { body: { description: 'patched' } });
        assert.equal(bodyOf(patched)['description'], 'patched');
        assert.equal(bodyOf(patched)['name'], body['name']);
        assert.equal((await store.call('DELETE', `/${set}(${id})`)).status, 204);
        await rejects(store.call('GET', `/${set}(${id})`), 404, /does not exist/);
      }

      const ds = datastream('Crud stream', { Thing: { '@iot.id': thingId } });
      const { unitOfMeasurement: _u, ...noUnit } = ds;
      await rejects(store.call('POST', '/Datastreams', { body: noUnit }), 400, /unitOfMeasurement: is required/);
      await rejects(store.call('POST', '/Datastreams', { body: { ...ds, Thing: undefined } }), 400, /Thing: is required|must be a Thing/);
      const stream = bodyOf(await store.call('POST', '/Datastreams', { body: ds }));
      const streamId = stream['@iot.id'];
      await rejects(store.call('POST', '/Observations', { body: { phenomenonTime: '2020-01-01T00:00:00Z', Datastream: { '@iot.id': streamId } } }), 400, /result: is required/);
      const observation = bodyOf(await store.call('POST', '/Observations', {
        body: { result: 21.5, resultTime: '2020-01-01T00:00:00Z', Datastream: { '@iot.id': streamId }, FeatureOfInterest: feature('Obs feature') },
      }));
      assert.equal(observation['result'], 21.5);
      assert.equal(observation['resultTime'], '2020-01-01T00:00:00.000Z');
      assert.match(observation['phenomenonTime'], /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, 'phenomenonTime defaults to now');
      const historical = await store.call('POST', '/HistoricalLocations', { body: { time: '2021-05-01T12:00:00+02:00', Thing: { '@iot.id': thingId } } });
      assert.equal(bodyOf(historical)['time'], '2021-05-01T10:00:00.000Z');
      await rejects(store.call('POST', '/HistoricalLocations', { body: { Thing: { '@iot.id': thingId } } }), 400, /time: is required/);
      for (const [set, id] of [['Observations', observation['@iot.id']], ['HistoricalLocations', bodyOf(historical)['@iot.id']], ['Datastreams', streamId]] as const) {
        assert.equal((await store.call('PATCH', `/${set}(${id})`, { body: {} })).status, 200);
        assert.equal((await store.call('DELETE', `/${set}(${id})`)).status, 204);
      }
    });

    test('a Thing created with Locations, Datastreams, Sensor, ObservedProperty and Observations in one request', async () => {
      const before = await count(store.db, 'observations');
      const response = await store.call('POST', '/Things', { body: stationWithObservations(3, 'Deep') });
      const id = bodyOf(response)['@iot.id'];
      assert.equal(await count(store.db, 'observations'), before + 3);
      const streams = bodyOf(await store.call('GET', `/Things(${id})/Datastreams`))['value'];
      assert.equal(streams.length, 1);
      assert.equal(streams[0].phenomenonTime, '2020-01-01T00:00:00.000Z/2020-01-01T02:00:00.000Z', 'derived from the Observations');
      const sensorOf = bodyOf(await store.call('GET', `/Datastreams(${streams[0]['@iot.id']})/Sensor`));
      assert.equal(sensorOf['name'], 'DHT22');
      const historical = bodyOf(await store.call('GET', `/Things(${id})/HistoricalLocations`))['value'];
      assert.equal(historical.length, 1, 'a Thing created with a Location gets one HistoricalLocation');
      const historicalLocations = bodyOf(await store.call('GET', `/HistoricalLocations(${historical[0]['@iot.id']})/Locations`))['value'];
      assert.equal(historicalLocations[0].name, 'Town hall');
    });

    test('a deep insert is all or nothing; a link to a missing id is a 400 naming it', async () => {
      const counts = async () => [await count(store.db, 'things'), await count(store.db, 'sensors'), await count(store.db, 'datastreams')];
      const before = await counts();
      const broken = thing('Broken', { Datastreams: [datastream('ok'), datastream('bad', { ObservedProperty: { '@iot.id': 999999 } })] });
      await rejects(store.call('POST', '/Things', { body: broken }), 400, /Datastreams\[1\]\.ObservedProperty\.@iot\.id|ObservedProperty with @iot.id 999999 does not exist/);
      assert.deepEqual(await counts(), before);
      await rejects(store.call('POST', '/Things', { body: thing('Typed', { Datastreams: [datastream('x', { unitOfMeasurement: 'C' })] }) }), 400, /Datastreams\[0\]\.unitOfMeasurement: must be a JSON object/);
      await rejects(store.call('POST', '/Things', { body: thing('Unknown', { colour: 'red' }) }), 400, /colour: Thing has no property colour/);
      await rejects(store.call('POST', '/Things', { body: thing('With id', { '@iot.id': 5 }) }), 400, /@iot.id: ids are given by the server/);
      await rejects(store.call('POST', '/Things', { body: { name: 7, description: 'x' } }), 400, /name: must be a string/);
      await rejects(store.call('POST', '/Observations', { body: { result: 1, phenomenonTime: 'yesterday', Datastream: { '@iot.id': 1 } } }), 400, /phenomenonTime: must be an ISO 8601/);
      assert.deepEqual(await counts(), before);
    });

    test('an Observation without a FeatureOfInterest gets one from its Thing\'s Location, reused by the next ones', async () => {
      const id = bodyOf(await store.call('POST', '/Things', { body: stationWithObservations(2, 'Foi') }))['@iot.id'];
      const streamId = bodyOf(await store.call('GET', `/Things(${id})/Datastreams`))['value'][0]['@iot.id'];
      const posted = bodyOf(await store.call('POST', `/Datastreams(${streamId})/Observations`, { body: { result: 3, phenomenonTime: '2020-02-01T00:00:00Z' } }));
      const features = await Promise.all([1, 2, 3].map(async (n) => {
        const observations = bodyOf(await store.call('GET', `/Datastreams(${streamId})/Observations`))['value'];
        return bodyOf(await store.call('GET', `/Observations(${observations[n - 1]['@iot.id']})/FeatureOfInterest`));
      }));
      assert.equal(new Set(features.map((f) => f['@iot.id'])).size, 1, 'one FeatureOfInterest for one Location');
      assert.deepEqual(features[0]!['feature'], point(8.68, 50.11));
      assert.ok(posted['@iot.id']);

      const bare = bodyOf(await store.call('POST', '/Things', { body: thing('Nowhere', { Datastreams: [datastream('Bare')] }) }))['@iot.id'];
      const bareStream = bodyOf(await store.call('GET', `/Things(${bare})/Datastreams`))['value'][0]['@iot.id'];
      await rejects(store.call('POST', `/Datastreams(${bareStream})/Observations`, { body: { result: 1 } }), 400, /FeatureOfInterest: is required/);
    });

    test('linking a Location to a Thing later makes it the current one and records a HistoricalLocation', async () => {
      const id = bodyOf(await store.call('POST', '/Things', { body: thing('Mover', { Locations: [location('First')] }) }))['@iot.id'];
      await store.call('POST', `/Things(${id})/Locations`, { body: location('Second', point(1, 2)) });
      const current = bodyOf(await store.call('GET', `/Things(${id})/Locations`))['value'];
      assert.deepEqual(current.map((l: Json) => l.name), ['Second']);
      assert.equal(bodyOf(await store.call('GET', `/Things(${id})/HistoricalLocations`, { options: { count: true } }))['@iot.count'], 2);
      const third = bodyOf(await store.call('POST', '/Locations', { body: location('Third') }))['@iot.id'];
      await store.call('PATCH', `/Things(${id})`, { body: { Locations: [{ '@iot.id': third }] } });
      assert.deepEqual(bodyOf(await store.call('GET', `/Things(${id})/Locations`))['value'].map((l: Json) => l.name), ['Third']);
      assert.equal(bodyOf(await store.call('GET', `/Things(${id})/HistoricalLocations`, { options: { count: true } }))['@iot.count'], 3);
    });

    test('deleting a Thing takes its Datastreams, Observations and HistoricalLocations along, not its Locations or Sensors', async () => {
      const id = bodyOf(await store.call('POST', '/Things', { body: stationWithObservations(4, 'Doomed') }))['@iot.id'];
      const stream = bodyOf(await store.call('GET', `/Things(${id})/Datastreams`))['value'][0];
      const [observations, locations, sensors] = [await count(store.db, 'observations'), await count(store.db, 'locations'), await count(store.db, 'sensors')];
      await store.call('DELETE', `/Things(${id})`);
      await rejects(store.call('GET', `/Datastreams(${stream['@iot.id']})`), 404, /does not exist/);
      assert.equal(await count(store.db, 'observations'), observations - 4);
      assert.equal(await count(store.db, 'locations'), locations);
      assert.equal(await count(store.db, 'sensors'), sensors);
      const historical = await store.db.selectFrom('ds_store_test.historical_locations' as never).selectAll().where('thing_id' as never, '=', id as never).execute();
      assert.equal(historical.length, 0);
    });

    test('deleting a Sensor deletes its Datastreams; ids are never given twice', async () => {
      const id = bodyOf(await store.call('POST', '/Things', { body: stationWithObservations(1, 'Sensor doomed') }))['@iot.id'];
      const stream = bodyOf(await store.call('GET', `/Things(${id})/Datastreams`, { options: { expand: [{ path: ['Sensor'], options: {}, pos: 0 }] } }))['value'][0];
      await store.call('DELETE', `/Sensors(${stream.Sensor['@iot.id']})`);
      await rejects(store.call('GET', `/Datastreams(${stream['@iot.id']})`), 404, /Datastream/);
      const last = bodyOf(await store.call('POST', '/Things', { body: thing('Last') }))['@iot.id'];
      await store.call('DELETE', `/Things(${last})`);
      const next = bodyOf(await store.call('POST', '/Things', { body: thing('Next') }))['@iot.id'];
      assert.ok(next > last, `${next} after ${last}`);
    });

    test('PUT replaces: omitted optional properties are cleared, missing required ones refused; PATCH merges', async () => {
      const id = bodyOf(await store.call('POST', '/Things', { body: thing('Replace me') }))['@iot.id'];
      const patched = bodyOf(await store.call('PATCH', `/Things(${id})`, { body: { name: 'Patched' } }));
      assert.deepEqual(patched['properties'], { owner: 'city' });
      await rejects(store.call('PUT', `/Things(${id})`, { body: { name: 'Only a name' } }), 400, /description: is required/);
      const put = await store.call('PUT', `/Things(${id})`, { body: { name: 'Put', description: 'replaced' } });
      assert.equal(put.status, 200);
      assert.equal(bodyOf(put)['properties'], null);
      assert.equal(bodyOf(put)['name'], 'Put');
      await rejects(store.call('PATCH', `/Things(${id})`, { body: { '@iot.id': id + 1 } }), 400, /id cannot change/);
      await rejects(store.call('PATCH', `/Things(${id + 1000})`, { body: { name: 'x' } }), 404, /does not exist/);
    });

    test('Prefer: return=minimal answers 204 with the Location', async () => {
      const response = await store.call('POST', '/Sensors', { body: sensor('Minimal'), preferMinimal: true });
      assert.equal(response.status, 204);
      assert.equal(response.body, undefined);
      assert.match(response.headers?.['location'] ?? '', /\/Sensors\(\d+\)$/);
    });

    test('onChange hears every created, updated and deleted entity after the commit', async () => {
      changes.length = 0;
      const id = bodyOf(await store.call('POST', '/Things', { body: thing('Heard', { Locations: [location('Heard')] }) }))['@iot.id'];
      assert.deepEqual(changes.map((c) => `${c.entitySet}:${c.kind}`).sort(), ['HistoricalLocations:create', 'Locations:create', 'Things:create']);
      changes.length = 0;
      await store.call('PATCH', `/Things(${id})`, { body: { name: 'Still heard' } });
      await store.call('DELETE', `/Things(${id})`);
      assert.deepEqual(changes.map((c) => `${c.entitySet}(${c.id}):${c.kind}`), [`Things(${id}):update`, `Things(${id}):delete`]);
      // An update says which properties' stored values it changed (property topics are notified of those only).
      assert.deepEqual(changes[0]!.properties, ['name']);
      changes.length = 0;
      await rejects(store.call('POST', '/Things', { body: thing('x', { Datastreams: [datastream('y', { Sensor: { '@iot.id': 424242 } })] }) }), 400, /424242/);
      assert.deepEqual(changes, [], 'a rolled-back write announces nothing');
    });
  });
}
