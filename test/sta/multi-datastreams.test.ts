import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectFieldError } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { datastream, location, multiDatastream, OM_COMPLEX_OBSERVATION, observedProperty, sensor, thing } from './fixtures.js';

/** The MultiDatastream extension of SensorThings 1.1, through the data API gateway. */

type Json = Record<string, any>;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`SensorThings MultiDatastreams (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    const get = async (path: string) => {
      const response = await sta.request('GET', path);
      assert.equal(response.statusCode, 200, response.body);
      return response.json();
    };
    const count = async (path: string) => (await get(`${path}${path.includes('?') ? '&' : '?'}$count=true&$top=0`))['@iot.count'];
    /** A Thing at a Location with one MultiDatastream (wind: speed, direction); the ids. */
    const station = async (name: string, extra: Record<string, unknown> = {}) => {
      const created = await sta.request('POST', '/Things', thing(name, { Locations: [location(`${name} site`)], MultiDatastreams: [multiDatastream(`${name} wind`, extra)] }));
      assert.equal(created.statusCode, 201, created.body);
      const thingId: number = created.json()['@iot.id'];
      const multi = (await get(`/Things(${thingId})/MultiDatastreams?$expand=ObservedProperties,Sensor`)).value[0];
      return { thingId, multiId: multi['@iot.id'] as number, multi };
    };

    before(async () => {
      t = await buildTestApp(kind);
      sta = await publishStaDataset(t);
    });
    after(() => t.close());

    test('the service root lists MultiDatastreams and the conformance class', async () => {
      const root = await get('');
      assert.ok(root.value.some((s: Json) => s.name === 'MultiDatastreams' && s.url === `${sta.publicBase}/MultiDatastreams`));
      assert.ok(root.serverSettings.conformance.includes('http://www.opengis.net/spec/iot_sensing/1.1/req/multi-datastream'));
    });

    test('deep insert from a Thing: read back with its links, ObservedProperties in order, reached from every side', async () => {
      const { thingId, multiId, multi } = await station('Deep', {
        Observations: [{ phenomenonTime: '2024-01-01T00:00:00Z', result: [3.5, 270] }, { phenomenonTime: '2024-01-01T01:00:00Z', result: [4, 180] }],
      });
      const read = await get(`/MultiDatastreams(${multiId})`);
      assert.equal(read['@iot.selfLink'], `${sta.publicBase}/MultiDatastreams(${multiId})`);
      assert.equal(read.name, 'Deep wind');
      assert.equal(read.observationType, OM_COMPLEX_OBSERVATION);
      assert.deepEqual(read.unitOfMeasurements.map((u: Json) => u.symbol), ['m/s', '°']);
      assert.equal(read.multiObservationDataTypes.length, 2);
      assert.equal(read.phenomenonTime, '2024-01-01T00:00:00.000Z/2024-01-01T01:00:00.000Z');
      for (const nav of ['Thing', 'Sensor', 'ObservedProperties', 'Observations']) {
        assert.equal(read[`${nav}@iot.navigationLink`], `${sta.publicBase}/MultiDatastreams(${multiId})/${nav}`);
      }
      assert.deepEqual(multi.ObservedProperties.map((p: Json) => p.name), ['Wind speed', 'Wind direction']);
      assert.equal(multi.Sensor.name, 'Anemometer');
      assert.equal((await get(`/MultiDatastreams(${multiId})/Thing`))['@iot.id'], thingId);
      const propertyId = multi.ObservedProperties[1]['@iot.id'];
      assert.deepEqual((await get(`/ObservedProperties(${propertyId})/MultiDatastreams`)).value.map((m: Json) => m['@iot.id']), [multiId]);
      assert.deepEqual((await get(`/Sensors(${multi.Sensor['@iot.id']})/MultiDatastreams`)).value.map((m: Json) => m['@iot.id']), [multiId]);
      const observations = (await get(`/MultiDatastreams(${multiId})/Observations?$orderby=phenomenonTime&$expand=FeatureOfInterest,MultiDatastream($select=id)`)).value;
      assert.deepEqual(observations.map((o: Json) => o.result), [[3.5, 270], [4, 180]]);
      assert.equal(observations[0].FeatureOfInterest.name, 'Deep site', 'the FeatureOfInterest is derived from the Thing\'s Location');
      assert.equal(observations[0].MultiDatastream['@iot.id'], multiId);
      assert.equal(observations[0]['Datastream@iot.navigationLink'], `${sta.publicBase}/Observations(${observations[0]['@iot.id']})/Datastream`);
      const viaThing = await get(`/Things(${thingId})?$expand=MultiDatastreams($select=name;$expand=Observations($select=result;$orderby=phenomenonTime desc;$top=1))`);
      assert.deepEqual(viaThing.MultiDatastreams, [{ name: 'Deep wind', Observations: [{ result: [4, 180] }], 'Observations@iot.nextLink': viaThing.MultiDatastreams[0]['Observations@iot.nextLink'] }]);
    });

    test('ObservedProperties linked by id keep the order given, not the order of their ids', async () => {
      const thingId = (await sta.request('POST', '/Things', thing('Refs'))).json()['@iot.id'];
      const sensorId = (await sta.request('POST', '/Sensors', sensor('Refs sensor'))).json()['@iot.id'];
      const first = (await sta.request('POST', '/ObservedProperties', observedProperty('Refs one'))).json()['@iot.id'];
      const second = (await sta.request('POST', '/ObservedProperties', observedProperty('Refs two'))).json()['@iot.id'];
      const created = await sta.request('POST', '/MultiDatastreams', multiDatastream('Refs wind', {
        Thing: { '@iot.id': thingId }, Sensor: { '@iot.id': sensorId }, ObservedProperties: [{ '@iot.id': second }, { '@iot.id': first }],
      }));
      assert.equal(created.statusCode, 201, created.body);
      const id = created.json()['@iot.id'];
      assert.equal(created.headers['location'], `${sta.publicBase}/MultiDatastreams(${id})`);
      assert.deepEqual((await get(`/MultiDatastreams(${id})/ObservedProperties`)).value.map((p: Json) => p['@iot.id']), [second, first]);
      assert.deepEqual((await get(`/MultiDatastreams(${id})?$expand=ObservedProperties($select=id)`)).ObservedProperties.map((p: Json) => p['@iot.id']), [second, first]);
      // An $orderby the client gives wins.
      assert.deepEqual((await get(`/MultiDatastreams(${id})/ObservedProperties?$orderby=id`)).value.map((p: Json) => p['@iot.id']), [first, second]);
    });

    test('a MultiDatastream whose arrays and ObservedProperties disagree is a 400 naming the field; nothing is created', async () => {
      const before = await count('/MultiDatastreams');
      const properties = await count('/ObservedProperties');
      const thingRef = { Thing: { '@iot.id': (await sta.request('POST', '/Things', thing('Bad'))).json()['@iot.id'] } };
      expectFieldError(await sta.request('POST', '/MultiDatastreams', multiDatastream('x', { ...thingRef, multiObservationDataTypes: [OM_COMPLEX_OBSERVATION] })), 'multiObservationDataTypes');
      expectFieldError(await sta.request('POST', '/MultiDatastreams', multiDatastream('x', { ...thingRef, ObservedProperties: [observedProperty('only one')] })), 'ObservedProperties');
      assert.equal((await sta.request('POST', '/MultiDatastreams', multiDatastream('valid', thingRef))).statusCode, 201);
      expectFieldError(await sta.request('POST', '/MultiDatastreams', multiDatastream('x', { ...thingRef, observationType: 'http://www.opengis.net/def/observationType/OGC-OM/2.0/OM_Measurement' })), 'observationType');
      expectFieldError(await sta.request('POST', '/MultiDatastreams', multiDatastream('x', { ...thingRef, unitOfMeasurements: { name: 'one' } })), 'unitOfMeasurements');
      expectFieldError(await sta.request('POST', '/MultiDatastreams', multiDatastream('x', { ...thingRef, multiObservationDataTypes: [1, 2] })), 'multiObservationDataTypes');
      expectFieldError(await sta.request('POST', '/MultiDatastreams', multiDatastream('x')), 'Thing');
      expectFieldError(await sta.request('POST', '/MultiDatastreams', multiDatastream('x', { ...thingRef, phenomenonTime: '2024-01-01T00:00:00Z' })), 'phenomenonTime');
      // A deep insert fails as a whole, with the nested path.
      expectFieldError(await sta.request('POST', '/Things', thing('Deep bad', { MultiDatastreams: [multiDatastream('y', { ObservedProperties: [] })] })), 'MultiDatastreams[0].ObservedProperties');
      assert.equal(await count('/MultiDatastreams'), before + 1, 'only the one valid create of the lot');
      assert.equal(await count('/ObservedProperties'), properties + 2);
      // An update that breaks the pairs is refused too, as is a link from the ObservedProperty's side.
      const { multiId, multi } = await station('Patched');
      const propertyId = multi.ObservedProperties[0]['@iot.id'];
      expectFieldError(await sta.request('PATCH', `/ObservedProperties(${propertyId})`, { MultiDatastreams: [{ '@iot.id': multiId }] }), 'MultiDatastreams');
      expectFieldError(await sta.request('POST', '/ObservedProperties', { ...observedProperty('z'), MultiDatastreams: [{ '@iot.id': multiId }] }), 'MultiDatastreams');
      assert.equal(await count(`/MultiDatastreams(${multiId})/ObservedProperties`), 2);
      expectFieldError(await sta.request('PATCH', `/MultiDatastreams(${multiId})`, { unitOfMeasurements: [{ name: 'one' }] }), 'multiObservationDataTypes');
      const renamed = await sta.request('PATCH', `/MultiDatastreams(${multiId})`, { description: 'renamed' });
      assert.equal(renamed.statusCode, 200, renamed.body);
      assert.equal(renamed.json().description, 'renamed');
    });

    test('an Observation of a MultiDatastream has an array result of its length, and exactly one stream', async () => {
      const { multiId } = await station('Results');
      const streamThing = await sta.request('POST', '/Things', thing('Plain', { Locations: [location('Plain site')], Datastreams: [datastream('Plain stream')] }));
      const datastreamId = (await get(`/Things(${streamThing.json()['@iot.id']})/Datastreams`)).value[0]['@iot.id'];
      const before = await count('/Observations');
      const created = await sta.request('POST', `/MultiDatastreams(${multiId})/Observations`, { result: [1.5, 90] });
      assert.equal(created.statusCode, 201, created.body);
      const id = created.json()['@iot.id'];
      assert.deepEqual(created.json().result, [1.5, 90]);
      expectFieldError(await sta.request('POST', `/MultiDatastreams(${multiId})/Observations`, { result: 1.5 }), 'result');
      expectFieldError(await sta.request('POST', `/MultiDatastreams(${multiId})/Observations`, { result: [1.5] }), 'result');
      expectFieldError(await sta.request('POST', `/MultiDatastreams(${multiId})/Observations`, { result: [1, 2, 3] }), 'result');
      expectFieldError(await sta.request('POST', '/Observations', { result: [1, 2], MultiDatastream: { '@iot.id': multiId }, Datastream: { '@iot.id': datastreamId } }), 'Datastream');
      expectFieldError(await sta.request('POST', '/Observations', { result: [1, 2] }), 'Datastream');
      expectFieldError(await sta.request('POST', '/Observations', { result: [1, 2], MultiDatastream: { '@iot.id': 999999 } }), 'MultiDatastream');
      assert.equal(await count('/Observations'), before + 1);
      // Updates are held to the same rules.
      expectFieldError(await sta.request('PATCH', `/Observations(${id})`, { result: [1] }), 'result');
      const patched = await sta.request('PATCH', `/Observations(${id})`, { result: [2, 45] });
      assert.equal(patched.statusCode, 200, patched.body);
      expectFieldError(await sta.request('PATCH', `/Observations(${id})`, { Datastream: { '@iot.id': datastreamId }, MultiDatastream: { '@iot.id': multiId } }), 'Datastream');
      // Moved to a Datastream, it leaves the MultiDatastream (a Datastream's result is any value).
      const moved = await sta.request('PATCH', `/Observations(${id})`, { Datastream: { '@iot.id': datastreamId }, result: 7 });
      assert.equal(moved.statusCode, 200, moved.body);
      assert.equal((await get(`/Observations(${id})/Datastream`))['@iot.id'], datastreamId);
      assert.equal((await sta.request('GET', `/Observations(${id})/MultiDatastream`)).statusCode, 404);
      // And back, only with a result that fits.
      expectFieldError(await sta.request('PATCH', `/Observations(${id})`, { MultiDatastream: { '@iot.id': multiId } }), 'result');
      const back = await sta.request('PATCH', `/Observations(${id})`, { MultiDatastream: { '@iot.id': multiId }, result: [0, 0] });
      assert.equal(back.statusCode, 200, back.body);
      assert.equal((await get(`/Observations(${id})/MultiDatastream`))['@iot.id'], multiId);
    });

    test('$filter, $select and $orderby through the model, on MultiDatastreams and on their Observations', async () => {
      const { multiId } = await station('Query', { Observations: [{ phenomenonTime: '2023-05-01T00:00:00Z', result: [9, 10] }] });
      const byName = (await get(`/MultiDatastreams?$filter=${encodeURIComponent("name eq 'Query wind'")}&$select=name,unitOfMeasurements,id`)).value;
      assert.deepEqual(byName, [{ '@iot.id': multiId, '@iot.selfLink': `${sta.publicBase}/MultiDatastreams(${multiId})`, name: 'Query wind', unitOfMeasurements: multiDatastream().unitOfMeasurements }]);
      const byThing = (await get(`/MultiDatastreams?$filter=${encodeURIComponent("Thing/name eq 'Query' and Sensor/name eq 'Anemometer'")}&$select=id`)).value;
      assert.deepEqual(byThing.map((m: Json) => m['@iot.id']), [multiId]);
      const byTime = (await get(`/MultiDatastreams?$filter=${encodeURIComponent('phenomenonTime lt 2023-06-01T00:00:00Z')}&$select=id`)).value;
      assert.deepEqual(byTime.map((m: Json) => m['@iot.id']), [multiId]);
      const observations = (await get(`/Observations?$filter=${encodeURIComponent("MultiDatastream/name eq 'Query wind'")}&$select=result`)).value;
      assert.deepEqual(observations, [{ result: [9, 10] }]);
      const ordered = (await get('/MultiDatastreams?$orderby=name desc&$select=name')).value.map((m: Json) => m.name);
      assert.deepEqual(ordered, [...ordered].sort().reverse());
      assert.ok(ordered.length >= 2);
    });

    test('dataArray: CreateObservations with a MultiDatastream, checked per row; read back grouped by stream', async () => {
      const { multiId } = await station('Bulk');
      const group = (dataArray: unknown[][]) => ({ MultiDatastream: { '@iot.id': multiId }, components: ['phenomenonTime', 'result'], dataArray });
      const created = await sta.request('POST', '/CreateObservations', [group([['2022-01-01T00:00:00Z', [1, 10]], ['2022-01-01T00:01:00Z', [2, 20]]])]);
      assert.equal(created.statusCode, 201, created.body);
      assert.equal(created.json().length, 2);
      const before = await count(`/MultiDatastreams(${multiId})/Observations`);
      // A wrong shape of the request (a group naming both streams) refuses it whole.
      expectFieldError(await sta.request('POST', '/CreateObservations', [{ ...group([]), Datastream: { '@iot.id': 1 } }]), '[0].Datastream');
      assert.equal(await count(`/MultiDatastreams(${multiId})/Observations`), before, 'nothing of a refused request is stored');
      // A misfit row or a missing MultiDatastream answers its own "error" entry; the other rows are stored.
      const mixed = await sta.request('POST', '/CreateObservations', [
        group([['2022-01-01T00:02:00Z', [3, 30]], ['2022-01-01T00:03:00Z', [4]], ['2022-01-01T00:04:00Z', 5]]),
        { ...group([['2022-01-01T00:05:00Z', [6, 60]]]), MultiDatastream: { '@iot.id': 987654 } },
      ]);
      assert.equal(mixed.statusCode, 201, mixed.body);
      const entries: string[] = mixed.json();
      assert.equal(entries.length, 4);
      assert.ok(entries[0]!.startsWith(`${sta.publicBase}/Observations(`), entries[0]);
      assert.match(entries[1]!, /^error \[0\]\.dataArray\[1\]\[1\]: must be an array of 2 values/);
      assert.match(entries[2]!, /^error \[0\]\.dataArray\[2\]\[1\]: must be an array of 2 values/);
      assert.match(entries[3]!, /^error \[1\]\.MultiDatastream: MultiDatastream with @iot\.id 987654 does not exist$/);
      assert.equal(await count(`/MultiDatastreams(${multiId})/Observations`), before + 1);
      const answer = await get(`/MultiDatastreams(${multiId})/Observations?$resultFormat=dataArray&$select=result&$orderby=phenomenonTime`);
      assert.deepEqual(answer.value, [{
        'MultiDatastream@iot.navigationLink': `${sta.publicBase}/MultiDatastreams(${multiId})`,
        components: ['result'], 'dataArray@iot.count': 3, dataArray: [[[1, 10]], [[2, 20]], [[3, 30]]],
      }]);
    });

    test('$ref writes and PATCH links: an Observation moved to the other stream leaves the first, its result checked; ObservedProperties are not linked one by one', async () => {
      const { thingId, multiId, multi } = await station('Ref');
      const streamId = (await sta.request('POST', `/Things(${thingId})/Datastreams`, datastream('Ref stream'))).json()['@iot.id'];
      const scalar = (await sta.request('POST', `/Datastreams(${streamId})/Observations`, { result: 7 })).json()['@iot.id'];
      const pair = (await sta.request('POST', `/Datastreams(${streamId})/Observations`, { result: [8, 80] })).json()['@iot.id'];
      const ref = (id: number) => ({ '@odata.id': `${sta.publicBase}/Observations(${id})` });
      expectFieldError(await sta.request('POST', `/MultiDatastreams(${multiId})/Observations/$ref`, ref(scalar)), 'result');
      assert.equal((await get(`/Observations(${scalar})/Datastream`))['@iot.id'], streamId, 'the refused move is undone');
      const moved = await sta.request('POST', `/MultiDatastreams(${multiId})/Observations/$ref`, ref(pair));
      assert.equal(moved.statusCode, 204, moved.body);
      assert.equal((await get(`/Observations(${pair})/MultiDatastream`))['@iot.id'], multiId);
      assert.equal((await sta.request('GET', `/Observations(${pair})/Datastream`)).statusCode, 404);
      // PUT replaces the link the Observation has: its MultiDatastream, for another one.
      const other = (await sta.request('POST', `/Things(${thingId})/MultiDatastreams`, multiDatastream('Ref other'))).json()['@iot.id'];
      const replaced = await sta.request('PUT', `/Observations(${pair})/MultiDatastream/$ref`, { '@iot.id': other });
      assert.equal(replaced.statusCode, 204, replaced.body);
      const back = await sta.request('POST', `/Datastreams(${streamId})/Observations/$ref`, { '@iot.id': pair });
      assert.equal(back.statusCode, 204, back.body);
      assert.equal((await sta.request('GET', `/Observations(${pair})/MultiDatastream`)).statusCode, 404);
      assert.equal(await count(`/MultiDatastreams(${multiId})/Observations`) + await count(`/MultiDatastreams(${other})/Observations`), 0);
      // A PATCH listing an Observation of the other stream moves it likewise.
      expectFieldError(await sta.request('PATCH', `/MultiDatastreams(${multiId})`, { Observations: [{ '@iot.id': scalar }] }), 'result');
      const listed = await sta.request('PATCH', `/MultiDatastreams(${multiId})`, { Observations: [{ '@iot.id': pair }] });
      assert.equal(listed.statusCode, 200, listed.body);
      assert.equal((await sta.request('GET', `/Observations(${pair})/Datastream`)).statusCode, 404);
      assert.equal((await get(`/Observations(${pair})/MultiDatastream`))['@iot.id'], multiId);
      const propertyId = multi.ObservedProperties[0]['@iot.id'];
      expectFieldError(await sta.request('DELETE', `/MultiDatastreams(${multiId})/ObservedProperties(${propertyId})/$ref`), '$ref');
      const extra = (await sta.request('POST', '/ObservedProperties', observedProperty('Gust'))).json()['@iot.id'];
      expectFieldError(await sta.request('POST', `/MultiDatastreams(${multiId})/ObservedProperties/$ref`, { '@iot.id': extra }), '$ref');
      assert.equal(await count(`/MultiDatastreams(${multiId})/ObservedProperties`), 2);
    });

    test('$batch: a MultiDatastream and its Observation in one atomicity group; a misfit result rolls the group back', async () => {
      const batch = async (requests: Json[]) => {
        const response = await sta.request('POST', '/$batch', { requests });
        assert.equal(response.statusCode, 200, response.body);
        return new Map((response.json().responses as Json[]).map((r) => [r.id as string, r]));
      };
      const thingId = (await sta.request('POST', '/Things', thing('Batch', { Locations: [location('Batch site')] }))).json()['@iot.id'];
      const group = (name: string, result: unknown) => [
        { id: 'multi', atomicityGroup: 'g', method: 'post', url: `Things(${thingId})/MultiDatastreams`, body: multiDatastream(name) },
        { id: 'obs', atomicityGroup: 'g', method: 'post', url: '$multi/Observations', body: { result } },
      ];
      const good = await batch(group('Batch wind', [1, 2]));
      assert.equal(good.get('obs')!.status, 201, JSON.stringify(good.get('obs')));
      assert.deepEqual(good.get('obs')!.body.result, [1, 2]);
      const bad = await batch(group('Batch misfit', [1]));
      assert.equal(bad.get('obs')!.status, 400, JSON.stringify(bad.get('obs')));
      assert.deepEqual((await get(`/Things(${thingId})/MultiDatastreams?$select=name`)).value, [{ name: 'Batch wind' }]);
    });

    test('deletes cascade as FROST-Server does: Observations with their MultiDatastream, MultiDatastreams with their Thing, Sensor or any ObservedProperty', async () => {
      const observation = { phenomenonTime: '2021-01-01T00:00:00Z', result: [1, 2] };
      const byMulti = await station('Del multi', { Observations: [observation] });
      const observationId = (await get(`/MultiDatastreams(${byMulti.multiId})/Observations`)).value[0]['@iot.id'];
      assert.equal((await sta.request('DELETE', `/MultiDatastreams(${byMulti.multiId})`)).statusCode, 204);
      assert.equal((await sta.request('GET', `/Observations(${observationId})`)).statusCode, 404);
      assert.equal((await sta.request('GET', `/Things(${byMulti.thingId})`)).statusCode, 200, 'the Thing stays');
      assert.equal((await sta.request('GET', `/ObservedProperties(${byMulti.multi.ObservedProperties[0]['@iot.id']})`)).statusCode, 200, 'its ObservedProperties stay');

      const byThing = await station('Del thing', { Observations: [observation] });
      assert.equal((await sta.request('DELETE', `/Things(${byThing.thingId})`)).statusCode, 204);
      assert.equal((await sta.request('GET', `/MultiDatastreams(${byThing.multiId})`)).statusCode, 404);

      const bySensor = await station('Del sensor');
      assert.equal((await sta.request('DELETE', `/Sensors(${bySensor.multi.Sensor['@iot.id']})`)).statusCode, 204);
      assert.equal((await sta.request('GET', `/MultiDatastreams(${bySensor.multiId})`)).statusCode, 404);

      const byProperty = await station('Del property', { Observations: [observation] });
      const kept = byProperty.multi.ObservedProperties[0]['@iot.id'];
      assert.equal((await sta.request('DELETE', `/ObservedProperties(${byProperty.multi.ObservedProperties[1]['@iot.id']})`)).statusCode, 204);
      assert.equal((await sta.request('GET', `/MultiDatastreams(${byProperty.multiId})`)).statusCode, 404);
      assert.equal(await count(`/Things(${byProperty.thingId})/MultiDatastreams`), 0);
      assert.equal((await sta.request('GET', `/ObservedProperties(${kept})`)).statusCode, 200, 'the other ObservedProperty stays');
    });
  });
}
