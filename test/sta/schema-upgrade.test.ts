import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { openDatabase, type Database } from '../../src/db/client.js';
import { createStaServer } from '../../src/sta/server.js';
import type { StaRequest, StaServer } from '../../src/sta/types.js';
import { up as upgrade } from '../../src/db/migrations/0019_sta_multi_datastreams.js';
import { up as upgradeStored } from '../../src/db/migrations/0020_sta_stored_stream_properties.js';
import { DERIVED_COLUMNS } from '../../src/sta/derived.js';
import { compareDerived } from './derived-check.js';
import { databaseKinds, freshPostgresDatabase } from '../helpers/test-app.js';
import { datastream, location, multiDatastream, point, stationWithObservations, thing } from './fixtures.js';

/**
 * A dataset schema provisioned before the MultiDatastream extension (no MultiDatastream tables,
 * Observations with a required `datastream_id`) is brought up to date by migration 0019, its
 * data kept, and then serves MultiDatastreams like a new one.
 */

const SCHEMA = 'ds_before_multi';

/**
 * What provisioning made before the extension: today's schema without what the extension added,
 * with what `seed` wrote before the extension's parts are taken away (today's writes read them).
 */
async function oldSchema(db: Database, server: StaServer, seed: () => Promise<void>) {
  await db.transaction().execute((trx) => server.provision(trx, SCHEMA));
  await seed();
  const table = (name: string) => sql.id(SCHEMA, name);
  await sql`alter table ${table('observations')} drop constraint observations_one_stream`.execute(db);
  await sql`alter table ${table('observations')} drop column multi_datastream_id`.execute(db);
  await sql`alter table ${table('observations')} alter column datastream_id set not null`.execute(db);
  await sql`drop table ${table('multi_datastream_observed_properties')}`.execute(db);
  await sql`drop table ${table('multi_datastreams')}`.execute(db);
}

for (const kind of databaseKinds(import.meta.url)) {
  describe(`SensorThings schema upgrade for MultiDatastreams (${kind})`, () => {
    let db: Database;
    let drop: (() => Promise<void>) | undefined;
    let server: StaServer;
    const call = async (method: StaRequest['method'], path: string, body?: unknown) => server.handle({
      method, path, query: '', body, preferMinimal: false, baseUrl: 'http://data.example/v1/datasets/1/s', schema: SCHEMA, rights: { read: true, write: true },
    });

    before(async () => {
      const pg = kind === 'postgres' ? await freshPostgresDatabase() : null;
      drop = pg?.drop;
      db = openDatabase({ url: pg?.url ?? null, dataDir: null });
      server = createStaServer({ db });
    });
    after(async () => {
      await db.destroy();
      await drop?.();
    });

    test('migration 0019 adds the tables to an old schema, keeps its Observations, and runs twice harmlessly', async () => {
      await oldSchema(db, server, async () => assert.equal((await call('POST', '/Things', stationWithObservations(2, 'Old station'))).status, 201));
      await assert.rejects(call('GET', '/MultiDatastreams'), 'the old schema has no MultiDatastreams');
      await upgrade(db);
      await upgrade(db);
      const old = await call('GET', '/Observations');
      assert.equal((old.body as { value: unknown[] }).value.length, 2);
      const created = await call('POST', '/Things', thing('New station', { Locations: [location()], MultiDatastreams: [multiDatastream('New wind', { Observations: [{ result: [1, 2] }] })] }));
      assert.equal(created.status, 201);
      const multis = (await call('GET', '/MultiDatastreams')).body as { value: Array<Record<string, unknown>> };
      assert.deepEqual(multis.value.map((m) => m['name']), ['New wind']);
      const observations = (await call('GET', `/MultiDatastreams(${String(multis.value[0]!['@iot.id'])})/Observations`)).body as { value: Array<Record<string, unknown>> };
      assert.deepEqual(observations.value.map((o) => o['result']), [[1, 2]]);
      // The one-stream check holds in the upgraded schema too.
      const neither = sql`insert into ${sql.id(SCHEMA, 'observations')} (phenomenon_time_start, phenomenon_time_end, result, feature_of_interest_id)
        select now(), now(), '1', id from ${sql.id(SCHEMA, 'features_of_interest')} limit 1`;
      await assert.rejects(neither.execute(db), /observations_one_stream/);
    });
  });
}

/**
 * A dataset schema provisioned before a stream's derived properties were stored (no columns, no
 * triggers) gets them from migration 0020, filled exactly as the reads computed them, once; the
 * triggers then keep them.
 */
const STORED_SCHEMA = 'ds_before_stored';

for (const kind of databaseKinds(import.meta.url)) {
  describe(`SensorThings schema upgrade for stored stream properties (${kind})`, () => {
    let db: Database;
    let drop: (() => Promise<void>) | undefined;
    let server: StaServer;
    let postgis = false;
    const call = async (method: StaRequest['method'], path: string, body?: unknown) => server.handle({
      method, path, query: '', body, preferMinimal: false, baseUrl: 'http://data.example/v1/datasets/1/s', schema: STORED_SCHEMA, rights: { read: true, write: true },
    });

    before(async () => {
      const pg = kind === 'postgres' ? await freshPostgresDatabase() : null;
      drop = pg?.drop;
      db = openDatabase({ url: pg?.url ?? null, dataDir: null });
      if (pg) postgis = await sql`create extension if not exists postgis`.execute(db).then(() => true, () => false);
      server = createStaServer({ db, postgis });
    });
    after(async () => {
      await db.destroy();
      await drop?.();
    });

    test('migration 0020 adds and fills the columns as computed, creates the triggers, and fills only once', async () => {
      await db.transaction().execute((trx) => server.provision(trx, STORED_SCHEMA));
      const station = thing('Before', {
        Locations: [location('Before', point(1, 1))],
        Datastreams: [datastream('Before stream', { Observations: [
          { result: 1, phenomenonTime: '2020-01-01T00:00:00Z', resultTime: '2020-01-01T00:05:00Z' },
          { result: 2, phenomenonTime: '2020-01-02T00:00:00Z/2020-01-03T00:00:00Z', FeatureOfInterest: { name: 'Far', description: 'far', encodingType: 'application/geo+json', feature: point(4, 2) } },
        ] }), datastream('Empty stream')],
        MultiDatastreams: [multiDatastream('Before wind', { Observations: [{ result: [1, 2], phenomenonTime: '2021-01-01T00:00:00Z' }] })],
      });
      assert.equal((await call('POST', '/Things', station)).status, 201);
      // What a schema provisioned before looked like: no triggers, no columns.
      for (const name of ['observations_derived_insert', 'observations_derived_update', 'observations_derived_delete']) {
        await sql`drop trigger ${sql.id(name)} on ${sql.id(STORED_SCHEMA, 'observations')}`.execute(db);
      }
      await sql`drop trigger features_derived_update on ${sql.id(STORED_SCHEMA, 'features_of_interest')}`.execute(db);
      for (const table of ['datastreams', 'multi_datastreams']) {
        for (const column of DERIVED_COLUMNS) await sql`alter table ${sql.id(STORED_SCHEMA, table)} drop column ${sql.id(column)}`.execute(db);
      }
      await assert.rejects(call('GET', '/Datastreams'), 'the old schema has no stored properties');

      await upgradeStored(db);
      const filled = await compareDerived(db, STORED_SCHEMA, postgis);
      assert.deepEqual(filled.mismatches, []);
      assert.equal(filled.streams, 3);
      assert.equal(filled.observed, 2);
      assert.equal(filled.withArea, postgis ? 2 : 0);
      const streams = (await call('GET', '/Datastreams')).body as { value: Array<Record<string, unknown>> };
      assert.deepEqual(streams.value.map((s) => s['phenomenonTime']), ['2020-01-01T00:00:00.000Z/2020-01-03T00:00:00.000Z', null]);

      // The triggers keep them from now on.
      const streamId = Number(streams.value[0]!['@iot.id']);
      assert.equal((await call('POST', `/Datastreams(${streamId})/Observations`, { result: 3, phenomenonTime: '2019-06-01T00:00:00Z' })).status, 201);
      assert.deepEqual((await compareDerived(db, STORED_SCHEMA, postgis)).mismatches, []);
      assert.equal(((await call('GET', `/Datastreams(${streamId})`)).body as Record<string, unknown>)['phenomenonTime'], '2019-06-01T00:00:00.000Z/2020-01-03T00:00:00.000Z');

      // Once: a schema that has the columns is not filled again (a value put there by hand stays).
      await sql`update ${sql.id(STORED_SCHEMA, 'datastreams')} set result_time_end = '2000-01-01T00:00:00Z' where id = ${streamId}`.execute(db);
      await upgradeStored(db);
      const { rows } = await sql<{ end: string }>`select to_char(result_time_end at time zone 'UTC', 'YYYY') as end from ${sql.id(STORED_SCHEMA, 'datastreams')} where id = ${streamId}`.execute(db);
      assert.equal(rows[0]!.end, '2000');
    });
  });
}
