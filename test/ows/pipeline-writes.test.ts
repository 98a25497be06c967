import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { publishDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { waitFor } from '../helpers/wait.js';
import { ogc } from './ows-helpers.js';
import { createFeatureWriter } from '../../src/ows/index.js';
import { dropCollection } from '../../src/ows/collections.repo.js';
import { locateMapServer } from '../../src/ows/mapserver-pool.js';
import { storageSchemaOf } from '../../src/modules/datasets/index.js';
import type { Database } from '../../src/db/client.js';
import type { PayloadWriter, WriteOutcome } from '../../src/ingest/types.js';

type Json = Record<string, any>;

// The pipelines' feature writer against a released OWS named API: records written inside a
// transaction as the runtime does, read back through the gateway's features API and WFS.
// PostgreSQL only: the feature store needs PostGIS (on PGlite every OWS request answers 503).
const kinds = databaseKinds(import.meta.url).filter((kind) => kind === 'postgres');
const skip = kinds.length === 0 ? 'needs TEST_DATABASE_URL' : false;

const at = (x: number, y: number) => ({ type: 'Point', coordinates: [x, y] });
const sensor = (x: number, y: number, properties: Json = {}, extra: Json = {}) => ({ collection: 'sensors', geometry: at(x, y), properties, ...extra });
const WRITTEN = { outcome: 'written' };
const DUPLICATE = { outcome: 'duplicate' };
const rejectedAt = (field: string | null) => (outcome: WriteOutcome) => outcome.outcome === 'rejected' && outcome.field === field;

describe('OWS pipeline writer (postgres)', { skip }, () => {
  let t: TestApp;
  let ows: PublishedDataset;
  let schema: string;
  let writer: PayloadWriter;

  /** Writes the records in one transaction, as the runtime does, and says it committed. */
  const write = async (values: unknown[]): Promise<WriteOutcome[]> => {
    const result = await t.ctx.db.transaction().execute((trx) =>
      writer.write(trx as Database, schema, values.map((value) => ({ value: value as Json, receivedAt: new Date() }))));
    result.committed();
    return result.outcomes;
  };
  const items = async (collection: string): Promise<Json[]> => {
    const response = await ows.request('GET', `/collections/${collection}/items?limit=10000`);
    assert.equal(response.statusCode, 200, response.body);
    return response.json().features;
  };
  const feature = async (collection: string, fid: number) => {
    const response = await ows.request('GET', `/collections/${collection}/items/${fid}`);
    assert.equal(response.statusCode, 200, response.body);
    return response.json();
  };
  const createCollection = async (body: Json) => {
    const created = await ows.request('POST', '/collections', body);
    assert.equal(created.statusCode, 201, created.body);
  };

  before(async () => {
    t = await buildTestApp('postgres');
    assert.equal(t.ctx.postgis, true, 'the test database needs PostGIS');
    ows = await publishDataset(t, { standard: 'OWS', slug: 'city' });
    schema = storageSchemaOf(ows.datasetId);
    writer = createFeatureWriter({ postgis: t.ctx.postgis });
    await createCollection({ name: 'sensors', title: 'Sensors', geometryType: 'Point', properties: { name: 'string', speed: 'number', count: 'integer', seen: 'date-time' } });
    await createCollection({ name: 'roads', geometryType: 'LineString', properties: { name: 'string' } });
  });
  after(() => t?.close());

  test('writes valid features and rejects each invalid one with its field, the rest of the batch still written', async () => {
    const outcomes = await write([
      sensor(8.1, 50.1, { name: 'alpha', speed: 12.5, count: 3, seen: '2024-05-01T10:00:00Z' }),
      sensor(8.2, 50.2, { name: 'beta' }, { id: 'abc' }),
      sensor(8.3, 50.3, { name: 'gamma' }, { id: 0 }),
      { ...sensor(8.4, 50.4, { name: 'delta' }), collection: 'nowhere' },
      { geometry: at(8.5, 50.5), properties: { name: 'epsilon' } },
      { collection: 'sensors', geometry: { type: 'LineString', coordinates: [[8, 50], [9, 51]] }, properties: { name: 'zeta' } },
      sensor(8.6, 50.6, { name: 'eta', speed: 'fast' }),
      sensor(8.7, 50.7, { name: 'theta', colour: 'red' }),
      sensor(8.8, 95, { name: 'iota' }),
      sensor(8.9, 50.9, { name: 'kappa' }, { colour: 'blue' }),
      { collection: 'roads', geometry: { type: 'LineString', coordinates: [[8, 50], [9, 51]] }, properties: { name: 'main street' } },
      sensor(9.0, 51.0, { name: 'lambda', count: 7 }),
    ]);
    assert.deepEqual(outcomes.map((o) => o.outcome), [
      'written', 'rejected', 'rejected', 'rejected', 'rejected', 'rejected', 'rejected', 'rejected', 'rejected', 'rejected', 'written', 'written',
    ]);
    const fields = outcomes.map((o) => (o.outcome === 'rejected' ? o.field : undefined));
    assert.deepEqual(fields, [
      undefined, 'id', 'id', 'collection', 'collection', 'geometry', 'properties.speed', 'properties.colour', 'geometry', 'colour', undefined, undefined,
    ]);
    for (const outcome of outcomes) if (outcome.outcome === 'rejected') assert.ok(outcome.reason.length > 0);
    assert.match((outcomes[5] as { reason: string }).reason, /Point/);

    const stored = await items('sensors');
    assert.deepEqual(stored.map((f) => f.properties.name).sort(), ['alpha', 'lambda']);
    const alpha = stored.find((f) => f.properties.name === 'alpha')!;
    assert.deepEqual(alpha.geometry, at(8.1, 50.1));
    assert.deepEqual(alpha.properties, { name: 'alpha', speed: 12.5, count: 3, seen: '2024-05-01T10:00:00.000Z' });
    assert.deepEqual((await items('roads')).map((f) => f.properties.name), ['main street']);
  });

  test('a feature with an id is upserted: an integer and a string of digits name the same fid; the same record again changes nothing', async () => {
    assert.deepEqual(await write([sensor(7.1, 49.1, { name: 'first' }, { id: 500 })]), [WRITTEN]);
    assert.deepEqual((await feature('sensors', 500)).properties.name, 'first');

    assert.deepEqual(await write([sensor(7.2, 49.2, { name: 'second', speed: 1 }, { id: '500' })]), [WRITTEN]);
    const replaced = await feature('sensors', 500);
    assert.deepEqual(replaced.geometry, at(7.2, 49.2));
    assert.deepEqual(replaced.properties, { name: 'second', speed: 1, count: null, seen: null });

    const count = (await items('sensors')).length;
    assert.deepEqual(await write([sensor(7.2, 49.2, { name: 'second', speed: 1 }, { id: 500 })]), [DUPLICATE]);
    // An attribute left out is null, as with PUT: replacing with it left out is a change.
    assert.deepEqual(await write([sensor(7.2, 49.2, { name: 'second' }, { id: 500 })]), [WRITTEN]);
    assert.equal((await feature('sensors', 500)).properties.speed, null);

    // One fid twice in a batch: the last record stays.
    assert.deepEqual(await write([sensor(7.3, 49.3, { name: 'third' }, { id: 501 }), sensor(7.4, 49.4, { name: 'fourth' }, { id: '501' })]), [WRITTEN, WRITTEN]);
    assert.equal((await feature('sensors', 501)).properties.name, 'fourth');
    assert.equal((await items('sensors')).length, count + 1);
  });

  test('a feature without an id is keyed by its content: stored once within a batch and across batches', async () => {
    await createCollection({ name: 'counts', geometryType: 'Point', properties: { name: 'string', value: 'integer' } });
    const reading = (x: number, value: number | null, name = 'gauge') => ({ collection: 'counts', geometry: at(x, 50), properties: { name, value } });
    assert.deepEqual(await write([reading(8, 1), reading(8, 1), reading(8, 2), reading(9, 1)]), [WRITTEN, DUPLICATE, WRITTEN, WRITTEN]);
    // Redelivered with one new record; a null attribute matches a left-out one.
    assert.deepEqual(
      await write([reading(9, 1), reading(8, 2), reading(8, 1), reading(8, 3), { collection: 'counts', geometry: at(8, 50), properties: { name: 'gauge', value: 3 } }]),
      [DUPLICATE, DUPLICATE, DUPLICATE, WRITTEN, DUPLICATE],
    );
    assert.deepEqual(await write([reading(7, null), { collection: 'counts', geometry: at(7, 50), properties: { name: 'gauge' } }]), [WRITTEN, DUPLICATE]);
    const stored = await items('counts');
    assert.deepEqual(stored.map((f) => [f.geometry.coordinates[0], f.properties.value]).sort(), [[7, null], [8, 1], [8, 2], [8, 3], [9, 1]]);
    // A feature the API stored counts as already there too.
    const posted = await ows.request('POST', '/collections/counts/items', { type: 'Feature', geometry: at(6, 50), properties: { name: 'api', value: 9 } });
    assert.equal(posted.statusCode, 201, posted.body);
    assert.deepEqual(await write([reading(6, 9, 'api')]), [DUPLICATE]);
    assert.equal((await items('counts')).length, 6);
  });

  test('a 2,000-record batch, then the same batch again: each distinct feature stored once', async () => {
    await createCollection({ name: 'samples', geometryType: 'Point', properties: { rank: 'integer' } });
    // 1,500 distinct features (x by rank), the last 500 records repeating the first 500.
    const batch = Array.from({ length: 2_000 }, (_, i) => ({ collection: 'samples', geometry: at(6 + (i % 1_500) * 0.001, 50), properties: { rank: i % 1_500 } }));
    const first = await write(batch);
    assert.equal(first.filter((o) => o.outcome === 'written').length, 1_500);
    assert.deepEqual(first.slice(1_500).map((o) => o.outcome), Array(500).fill('duplicate'));
    assert.ok((await write(batch)).every((o) => o.outcome === 'duplicate'));
    const described = (await ows.request('GET', '/collections/samples')).json();
    assert.equal(described.featureCount, 1_500);
  });

  test('an explicit id above the fid sequence does not make a later feature without one collide', async () => {
    await createCollection({ name: 'beacons', geometryType: 'Point', properties: { name: 'string' } });
    const beacon = (x: number, name: string, extra: Json = {}) => ({ collection: 'beacons', geometry: at(x, 50), properties: { name }, ...extra });
    assert.deepEqual(await write([beacon(8, 'low'), beacon(8.1, 'high', { id: 9000 })]), [WRITTEN, WRITTEN]);
    const posted = await ows.request('POST', '/collections/beacons/items', { type: 'Feature', geometry: at(8.2, 50), properties: { name: 'posted' } });
    assert.equal(posted.statusCode, 201, posted.body);
    const [postedId] = posted.json().ids;
    assert.ok(postedId > 9000, `the API drew fid ${postedId}`);
    assert.deepEqual(await write([beacon(8.3, 'after')]), [WRITTEN]);
    // A lower explicit id leaves the sequence where it is.
    assert.deepEqual(await write([beacon(8.4, 'lower', { id: 20 })]), [WRITTEN]);
    const byName = new Map((await items('beacons')).map((f) => [f.properties.name, f.id]));
    assert.equal(byName.get('high'), 9000);
    assert.equal(byName.get('lower'), 20);
    assert.ok(byName.get('after')! > postedId);
    assert.equal(byName.size, 5);
  });

  test('a value the parser lets through but PostgreSQL refuses rejects that record only, with its field', async () => {
    await createCollection({ name: 'visits', geometryType: 'Point', properties: { name: 'string', seen: 'date-time' } });
    const visit = (x: number, properties: Json, extra: Json = {}) => ({ collection: 'visits', geometry: at(x, 50), properties, ...extra });
    const outcomes = await write([
      visit(8, { name: 'fine', seen: '2024-02-29T10:00:00Z' }),
      visit(8.1, { name: 'no such day', seen: '2023-02-29T10:00:00Z' }),
      visit(8.2, { name: 'nul \u0000 inside' }),
      visit(8.3, { name: 'also fine' }),
      visit(8.4, { name: 'keyed, no such day', seen: '2023-02-30T10:00:00Z' }, { id: 77 }),
      visit(8.5, { name: 'keyed fine' }, { id: 78 }),
    ]);
    assert.deepEqual(outcomes[0], WRITTEN);
    assert.ok(rejectedAt('properties.seen')(outcomes[1]!), JSON.stringify(outcomes[1]));
    assert.ok(rejectedAt('properties.name')(outcomes[2]!), JSON.stringify(outcomes[2]));
    assert.deepEqual(outcomes[3], WRITTEN);
    assert.ok(rejectedAt('properties.seen')(outcomes[4]!), JSON.stringify(outcomes[4]));
    assert.deepEqual(outcomes[5], WRITTEN);
    for (const outcome of outcomes) if (outcome.outcome === 'rejected') assert.doesNotMatch(outcome.reason, /ds_[0-9a-f]{32}/);
    assert.deepEqual((await items('visits')).map((f) => f.properties.name).sort(), ['also fine', 'fine', 'keyed fine']);
  });

  test('a dropped collection rejects its records naming collection, also when the drop commits while the batch waits', async () => {
    await createCollection({ name: 'temporary', geometryType: 'Point', properties: {} });
    const temporary = (x: number) => ({ collection: 'temporary', geometry: at(x, 50), properties: {} });
    assert.deepEqual(await write([temporary(8)]), [WRITTEN]);
    assert.equal((await ows.request('DELETE', '/collections/temporary')).statusCode, 204);
    const after = await write([temporary(8.1), sensor(3.1, 45.1, { name: 'beside a dropped one' })]);
    assert.ok(rejectedAt('collection')(after[0]!), JSON.stringify(after[0]));
    assert.deepEqual(after[1], WRITTEN);

    // A drop in flight: the batch waits for it and then finds no collection, rather than failing.
    await createCollection({ name: 'doomed', geometryType: 'Point', properties: {} });
    let commitDrop!: () => void;
    let dropped!: () => void;
    const dropDone = new Promise<void>((resolve) => { dropped = resolve; });
    const dropping = t.ctx.db.transaction().execute(async (trx) => {
      assert.equal(await dropCollection(trx as Database, schema, 'doomed'), true);
      dropped();
      await new Promise<void>((resolve) => { commitDrop = resolve; });
    });
    await dropDone;
    const writing = write([{ collection: 'doomed', geometry: at(8, 50), properties: {} }, sensor(3.2, 45.2, { name: 'beside a doomed one' })]);
    await waitFor(async () => (await blockedOn(/feature_collections/)) > 0, { what: 'the batch to wait for the drop' });
    commitDrop();
    await dropping;
    const outcomes = await writing;
    assert.ok(rejectedAt('collection')(outcomes[0]!), JSON.stringify(outcomes[0]));
    assert.deepEqual(outcomes[1], WRITTEN);
  });

  test('a batch holding a collection makes a drop through the API wait until it committed', async () => {
    await createCollection({ name: 'held', geometryType: 'Point', properties: {} });
    let commitBatch!: () => void;
    let wrote!: (outcomes: WriteOutcome[]) => void;
    const written = new Promise<WriteOutcome[]>((resolve) => { wrote = resolve; });
    const batch = t.ctx.db.transaction().execute(async (trx) => {
      const result = await writer.write(trx as Database, schema, [{ value: { collection: 'held', geometry: at(8, 50), properties: {} }, receivedAt: new Date() }]);
      wrote(result.outcomes);
      await new Promise<void>((resolve) => { commitBatch = resolve; });
    });
    assert.deepEqual(await written, [WRITTEN]);
    const deleting = ows.request('DELETE', '/collections/held');
    await waitFor(async () => (await blockedOn(/feature_collections/)) > 0, { what: 'the drop to wait for the batch' });
    commitBatch();
    await batch;
    assert.equal((await deleting).statusCode, 204);
  });

  test('features a pipeline wrote are served by WFS GetFeature', { skip: locateMapServer() ? false : 'MapServer (cgi-mapserver, spawn-fcgi) is not installed' }, async () => {
    await createCollection({ name: 'kiosks', title: 'Kiosks', geometryType: 'Point', properties: { name: 'string' } });
    const kiosk = (x: number, name: string, extra: Json = {}) => ({ collection: 'kiosks', geometry: at(x, 50.1), properties: { name }, ...extra });
    assert.deepEqual(await write([kiosk(8.6, 'north'), kiosk(8.7, 'south', { id: 42 })]), [WRITTEN, WRITTEN]);
    const answer = await ogc(ows, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetFeature', TYPENAMES: 'city:kiosks', OUTPUTFORMAT: 'application/json' });
    assert.equal(answer.statusCode, 200, answer.body.slice(0, 500));
    const features: Json[] = answer.json().features;
    assert.deepEqual(features.map((f) => f.properties.name).sort(), ['north', 'south']);
    assert.deepEqual(features.find((f) => f.properties.name === 'south')!.geometry, at(8.7, 50.1));
  });

  test('without PostGIS every record is rejected, naming what is missing', async () => {
    const outcomes = await createFeatureWriter({ postgis: false }).write(t.ctx.db, schema, [{ value: sensor(1, 1), receivedAt: new Date() }]);
    assert.equal(outcomes.outcomes.length, 1);
    assert.ok(rejectedAt(null)(outcomes.outcomes[0]!));
    assert.match((outcomes.outcomes[0] as { reason: string }).reason, /PostGIS/);
  });

  /** How many backends of this database wait for a lock in a statement matching `query`. */
  async function blockedOn(query: RegExp): Promise<number> {
    const { rows } = await sql<{ query: string }>`
      select query from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(t.ctx.db);
    return rows.filter((row) => query.test(row.query)).length;
  }
});
