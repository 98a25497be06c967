import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { openDatabase, type Database } from '../../src/db/client.js';
import { createStaServer } from '../../src/sta/server.js';
import type { StaRequest, StaServer } from '../../src/sta/types.js';
import { up as upgrade } from '../../src/db/migrations/0019_sta_multi_datastreams.js';
import { databaseKinds, freshPostgresDatabase } from '../helpers/test-app.js';
import { location, multiDatastream, stationWithObservations, thing } from './fixtures.js';

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

for (const kind of databaseKinds()) {
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
