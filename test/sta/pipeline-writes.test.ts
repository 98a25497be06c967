import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { storageSchemaOf } from '../../src/modules/datasets/index.js';
import { createObservationWriter } from '../../src/sta/index.js';
import type { StaChange } from '../../src/sta/index.js';
import type { MappedRecord, PayloadWriter, WriteOutcome, WriteResult } from '../../src/ingest/types.js';
import { datastream, location, point, thing } from './fixtures.js';

/**
 * The pipelines' SensorThings writer, called inside a real transaction as the runtime calls it, on
 * a dataset released through the management API; what it stored is read back through the gateway.
 */

type Json = Record<string, any>;

const OM_MEASUREMENT = 'http://www.opengis.net/def/observationType/OGC-OM/2.0/OM_Measurement';
const RECEIVED = new Date('2024-05-01T12:00:00.000Z');
const at = (minute: number) => new Date(Date.UTC(2024, 4, 1, 10, minute)).toISOString();
const record = (value: Json, receivedAt = RECEIVED): MappedRecord => ({ value, receivedAt });
const site = (name = 'Pipe site') => ({ name, description: 'where the pipe ends', encodingType: 'application/geo+json', feature: point(7.1, 51.2) });
const written: WriteOutcome = { outcome: 'written' };
const duplicate: WriteOutcome = { outcome: 'duplicate' };

for (const kind of databaseKinds(import.meta.url)) {
  describe(`SensorThings pipeline writer (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    let schema: string;
    let changes: StaChange[];
    let writer: PayloadWriter;

    const newWriter = () => createObservationWriter({ postgis: t.ctx.postgis, onChange: (change) => changes.push(change) });
    /** One batch in its own committed transaction, as the runtime runs it. */
    const write = async (records: MappedRecord[], by = writer): Promise<WriteOutcome[]> => {
      const result = await t.ctx.db.transaction().execute((trx) => by.write(trx, schema, records));
      result.committed();
      return result.outcomes;
    };
    const get = async (path: string): Promise<Json> => {
      const response = await sta.request('GET', path);
      assert.equal(response.statusCode, 200, response.body);
      return response.json();
    };
    const named = async (set: string, name: string, expand = '') =>
      (await get(`/${set}?$filter=name eq '${name}'${expand ? `&$expand=${expand}` : ''}`)).value as Json[];
    const observationsOf = async (datastreamId: number) =>
      (await get(`/Datastreams(${datastreamId})/Observations?$orderby=phenomenonTime asc&$expand=FeatureOfInterest`)).value as Json[];

    before(async () => {
      t = await buildTestApp(kind);
      sta = await publishStaDataset(t);
      schema = storageSchemaOf(sta.datasetId);
      changes = [];
      writer = newWriter();
    });
    after(() => t.close());

    test('a Datastream named first is created with its Thing, Sensor and ObservedProperty, then reused by name', async () => {
      const stream = (minute: number, extra: Json = {}) => record({
        result: 20 + minute, phenomenonTime: at(minute), FeatureOfInterest: site(),
        Datastream: { name: 'Pipe temperature', Thing: { name: 'Pipe station' }, Sensor: { name: 'Pipe sensor' }, ObservedProperty: { name: 'Pipe heat' }, ...extra },
      });
      assert.deepEqual(await write([stream(0), stream(1)]), [written, written]);
      const [created] = await named('Datastreams', 'Pipe temperature', 'Thing,Sensor,ObservedProperty');
      assert.ok(created);
      assert.equal(created.observationType, OM_MEASUREMENT);
      assert.deepEqual(created.unitOfMeasurement, { name: null, symbol: null, definition: null });
      assert.equal(created.description, 'Created by a pipeline');
      assert.deepEqual([created.Thing.name, created.Sensor.name, created.ObservedProperty.name], ['Pipe station', 'Pipe sensor', 'Pipe heat']);
      assert.equal(created.Sensor.encodingType, 'text/plain');

      // A later batch, a fresh writer (nothing cached) and a second Datastream of the same Thing: all reuse by name.
      assert.deepEqual(await write([stream(2, { description: 'ignored: the Datastream exists' })]), [written]);
      assert.deepEqual(await write([stream(3)], newWriter()), [written]);
      const second = record({ result: 1, FeatureOfInterest: site(), Datastream: { name: 'Pipe pressure', unitOfMeasurement: { name: 'bar', symbol: 'bar', definition: 'http://qudt.org/vocab/unit/BAR' }, Thing: { name: 'Pipe station' } } });
      assert.deepEqual(await write([second]), [written]);
      assert.equal((await named('Datastreams', 'Pipe temperature')).length, 1);
      assert.equal((await named('Things', 'Pipe station')).length, 1);
      assert.equal((await named('Sensors', 'Pipe sensor')).length, 1);
      assert.equal((await named('FeaturesOfInterest', 'Pipe site')).length, 1, 'an identical inline FeatureOfInterest is reused');
      const observations = await observationsOf(created['@iot.id']);
      assert.deepEqual(observations.map((o) => o.result), [20, 21, 22, 23]);
      assert.equal(observations[0]!.phenomenonTime, at(0));
      assert.equal(observations[0]!.FeatureOfInterest.name, 'Pipe site');
      const [pressure] = await named('Datastreams', 'Pipe pressure', 'Thing,Sensor,ObservedProperty');
      assert.equal(pressure!.Thing['@iot.id'], created.Thing['@iot.id']);
      assert.equal(pressure!.unitOfMeasurement.symbol, 'bar');
      // The minimal mapping names only the Datastream: its Sensor and ObservedProperty take its name.
      assert.deepEqual([pressure!.Sensor.name, pressure!.ObservedProperty.name], ['Pipe pressure', 'Pipe pressure']);
      // No phenomenonTime in the record: when it was received.
      assert.equal((await observationsOf(pressure!['@iot.id']))[0]!.phenomenonTime, RECEIVED.toISOString());
    });

    test('by Datastream.@iot.id, and a Thing the API has (with a Location) gives the FeatureOfInterest', async () => {
      const placed = await sta.request('POST', '/Things', thing('Placed station', { Locations: [location('Placed site')], Datastreams: [datastream('Placed stream')] }));
      assert.equal(placed.statusCode, 201, placed.body);
      const [stream] = await named('Datastreams', 'Placed stream');
      const outcomes = await write([
        record({ result: 'by id', phenomenonTime: at(0), Datastream: { '@iot.id': stream!['@iot.id'] } }),
        record({ result: 'by id, as text', phenomenonTime: at(1), Datastream: { '@iot.id': String(stream!['@iot.id']) } }),
        record({ result: 'new stream', phenomenonTime: at(0), Datastream: { name: 'Placed pipe stream', Thing: { name: 'Placed station' } } }),
      ]);
      assert.deepEqual(outcomes, [written, written, written]);
      const byId = await observationsOf(stream!['@iot.id']);
      assert.deepEqual(byId.map((o) => o.result), ['by id', 'by id, as text']);
      assert.equal(byId[0]!.FeatureOfInterest.name, 'Placed site');
      const [pipeStream] = await named('Datastreams', 'Placed pipe stream', 'Thing');
      assert.equal(pipeStream!.Thing.name, 'Placed station');
      assert.equal((await named('Things', 'Placed station')).length, 1);
      const derived = await observationsOf(pipeStream!['@iot.id']);
      assert.equal(derived[0]!.FeatureOfInterest['@iot.id'], byId[0]!.FeatureOfInterest['@iot.id'], 'one FeatureOfInterest per Location');
    });

    test('an invalid record is rejected naming the target path; the others of the batch are written', async () => {
      const good = (minute: number) => record({ result: minute, phenomenonTime: at(minute), FeatureOfInterest: site(), Datastream: { name: 'Mixed stream' } });
      const outcomes = await write([
        good(0),
        record({ phenomenonTime: at(1), FeatureOfInterest: site(), Datastream: { name: 'Mixed stream' } }),
        record({ result: 2, phenomenonTime: 'yesterday', FeatureOfInterest: site(), Datastream: { name: 'Mixed stream' } }),
        record({ result: 3, phenomenonTime: at(3), Datastream: { '@iot.id': 987654 } }),
        record({ result: 4, phenomenonTime: at(4), FeatureOfInterest: site() }),
        // The Thing a pipeline created has no Location: nothing to derive a FeatureOfInterest from.
        record({ result: 5, phenomenonTime: at(5), Datastream: { name: 'Mixed stream' } }),
        record({ result: 6, phenomenonTime: at(6), FeatureOfInterest: site(), Datastream: { name: 'Mixed stream', unitOfMeasurement: 'celsius' } }),
        // Valid ISO, but a year PostgreSQL has not: refused by the database, for this record alone.
        record({ result: 7, phenomenonTime: '0000-01-01T00:00:00Z', FeatureOfInterest: site(), Datastream: { name: 'Mixed stream' } }),
        record({ result: 'nul \u0000', phenomenonTime: at(8), FeatureOfInterest: site(), Datastream: { name: 'Mixed stream' } }),
        good(9),
      ]);
      const fields = outcomes.map((outcome) => (outcome.outcome === 'rejected' ? outcome.field : outcome.outcome));
      assert.deepEqual(fields, ['written', 'result', 'phenomenonTime', 'Datastream.@iot.id', 'Datastream.name', 'FeatureOfInterest',
        'Datastream.unitOfMeasurement', null, 'result', 'written']);
      const reasons = outcomes.map((outcome) => (outcome.outcome === 'rejected' ? outcome.reason : ''));
      assert.match(reasons[1]!, /^result: is required/);
      assert.match(reasons[3]!, /987654 does not exist/);
      assert.match(reasons[5]!, /^FeatureOfInterest: .*no Location/);
      assert.match(reasons[7]!, /could not be stored/);
      const [mixed] = await named('Datastreams', 'Mixed stream');
      assert.deepEqual((await observationsOf(mixed!['@iot.id'])).map((o) => o.result), [0, 9]);
    });

    test('a record met twice (in one batch, or again later) is stored once', async () => {
      const reading = (result: number, phenomenonTime?: string, receivedAt?: Date) =>
        record({ result, ...(phenomenonTime ? { phenomenonTime } : {}), FeatureOfInterest: site(), Datastream: { name: 'Twice stream' } }, receivedAt);
      const interval = `${at(0)}/${at(5)}`;
      assert.deepEqual(await write([
        reading(1, at(0)), reading(2, at(0)), reading(3, interval), reading(4, at(1)), reading(5, interval),
        reading(6, undefined, new Date(at(30))), reading(7, undefined, new Date(at(30))),
      ]), [written, duplicate, written, written, duplicate, written, duplicate]);
      // The same records delivered again, in another batch and by another writer: nothing new.
      assert.deepEqual(await write([reading(1, at(0)), reading(3, interval), reading(6, undefined, new Date(at(30))), reading(8, at(2))], newWriter()),
        [duplicate, duplicate, duplicate, written]);
      const [twice] = await named('Datastreams', 'Twice stream');
      const stored = await observationsOf(twice!['@iot.id']);
      assert.deepEqual(stored.map((o) => [o.phenomenonTime, o.result]), [
        [at(0), 1], [interval, 3], [at(1), 4], [at(2), 8], [at(30), 6],
      ]);
    });

    test('a rolled-back batch leaves nothing cached: the next one creates the Datastream again', async () => {
      const once = (minute: number) => record({ result: minute, phenomenonTime: at(minute), FeatureOfInterest: site('Rollback site'), Datastream: { name: 'Rolled stream' } });
      let result: WriteResult | undefined;
      await assert.rejects(t.ctx.db.transaction().execute(async (trx) => {
        result = await writer.write(trx, schema, [once(0)]);
        assert.deepEqual(result.outcomes, [written]);
        throw new Error('the runtime failed after the write');
      }), /the runtime failed/);
      result!.rolledBack?.();
      assert.equal((await named('Datastreams', 'Rolled stream')).length, 0);
      assert.equal((await named('FeaturesOfInterest', 'Rollback site')).length, 0);

      assert.deepEqual(await write([once(0), once(1)]), [written, written]);
      const [stream] = await named('Datastreams', 'Rolled stream');
      assert.deepEqual((await observationsOf(stream!['@iot.id'])).map((o) => [o.result, o.FeatureOfInterest.name]), [[0, 'Rollback site'], [1, 'Rollback site']]);
    });

    test('a cached Datastream deleted through the API is created again, not written to', async () => {
      const reading = (minute: number) => record({ result: minute, phenomenonTime: at(minute), FeatureOfInterest: site(), Datastream: { name: 'Deleted stream' } });
      assert.deepEqual(await write([reading(0)]), [written]);
      const [first] = await named('Datastreams', 'Deleted stream');
      assert.equal((await sta.request('DELETE', `/Datastreams(${first!['@iot.id']})`)).statusCode, 204);
      assert.deepEqual(await write([reading(1)]), [written]);
      const [again] = await named('Datastreams', 'Deleted stream');
      assert.notEqual(again!['@iot.id'], first!['@iot.id']);
      assert.deepEqual((await observationsOf(again!['@iot.id'])).map((o) => o.result), [1]);
    });

    test('committed() announces what the batch created, and only then', async () => {
      changes.length = 0;
      const records = [0, 1].map((minute) => record({ result: minute, phenomenonTime: at(minute), FeatureOfInterest: site('Announced site'), Datastream: { name: 'Announced stream', Thing: { name: 'Announced station' } } }));
      const result = await t.ctx.db.transaction().execute((trx) => writer.write(trx, schema, records));
      assert.equal(changes.length, 0, 'nothing is announced before the commit is known');
      result.committed();
      const [stream] = await named('Datastreams', 'Announced stream', 'Thing,Sensor,ObservedProperty,Observations($expand=FeatureOfInterest)');
      const created = (set: string) => changes.filter((c) => c.entitySet === set && c.kind === 'create').map((c) => c.id).sort((a, b) => a - b);
      assert.ok(changes.every((change) => change.schema === schema));
      assert.deepEqual(created('Observations'), stream!.Observations.map((o: Json) => o['@iot.id']).sort((a: number, b: number) => a - b));
      assert.deepEqual(created('Datastreams'), [stream!['@iot.id']]);
      assert.deepEqual(created('Things'), [stream!.Thing['@iot.id']]);
      assert.deepEqual(created('Sensors'), [stream!.Sensor['@iot.id']]);
      assert.deepEqual(created('ObservedProperties'), [stream!.ObservedProperty['@iot.id']]);
      assert.deepEqual(created('FeaturesOfInterest'), [stream!.Observations[0].FeatureOfInterest['@iot.id']]);
    });
  });
}
