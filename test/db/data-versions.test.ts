import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { readDataVersion, watchPayloadTable } from '../../src/db/data-versions.js';
import { down, up } from '../../src/db/migrations/0023_payload_data_versions.js';
import type { Database } from '../../src/db/client.js';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';

/**
 * A storage schema's data version (migration 0023, db/data-versions.ts), which the bulk downloads'
 * ETag and Last-Modified come from: it moves once per committed transaction that wrote the schema,
 * never for one rolled back, and a writer's open transaction holds up no other writer of the schema.
 */

for (const kind of databaseKinds(import.meta.url)) {
  describe(`the data version of a storage schema (${kind})`, () => {
    let t: TestApp;
    let db: Database;
    const schema = 'ds_versiontest';
    before(async () => {
      t = await buildTestApp(kind);
      db = t.ctx.db;
      await sql`create schema ${sql.id(schema)}`.execute(db);
      for (const table of ['a', 'b']) {
        await sql`create table ${sql.id(schema, table)} (id bigint generated always as identity primary key, n int)`.execute(db);
        await watchPayloadTable(db, schema, table);
      }
    });
    after(() => t?.close());

    const version = async () => (await readDataVersion(db, schema)).version;
    const insert = (into: Database, table: string) => sql`insert into ${sql.id(schema, table)} (n) values (1)`.execute(into);

    it('moves once per committed transaction, whatever it wrote; a rollback moves nothing; so does a TRUNCATE', async () => {
      const start = await readDataVersion(db, schema);
      await insert(db, 'a');
      const once = await readDataVersion(db, schema);
      assert.equal(once.version, start.version + 1);
      assert.ok(once.changedAt > start.changedAt);
      await db.transaction().execute(async (trx) => {
        await insert(trx, 'a');
        await insert(trx, 'b');
        await sql`update ${sql.id(schema, 'a')} set n = 2`.execute(trx);
      });
      assert.equal(await version(), once.version + 1, 'three statements in two tables: one move');
      await assert.rejects(db.transaction().execute(async (trx) => {
        await insert(trx, 'b');
        throw new Error('rolled back');
      }));
      assert.equal(await version(), once.version + 1, 'a rollback moves nothing');
      await sql`truncate ${sql.id(schema, 'b')}`.execute(db);
      assert.equal(await version(), once.version + 2);
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from payload_data_changes`.execute(db);
      assert.equal(rows[0]!.n, 0, 'the notes of committed transactions are gone');
    });

    it('migration 0023 watches the tables of schemas made before it', async () => {
      await sql`create schema ds_older`.execute(db);
      await sql`create table ds_older.things (id int)`.execute(db);
      await down(db);
      await up(db);
      assert.equal((await readDataVersion(db, 'ds_older')).version, 0);
      await sql`insert into ds_older.things values (1)`.execute(db);
      assert.equal((await readDataVersion(db, 'ds_older')).version, 1);
      await insert(db, 'a');
      assert.equal((await readDataVersion(db, schema)).version, 1, 'and the tables watched before (its counters begin again)');
    });

    if (kind === 'postgres') {
      it('a writer\'s open transaction holds up no other writer of the same schema (the version row is taken at commit)', async () => {
        const first = new pg.Client({ connectionString: t.ctx.databaseUrl! });
        const second = new pg.Client({ connectionString: t.ctx.databaseUrl! });
        await Promise.all([first.connect(), second.connect()]);
        try {
          const before = await version();
          await first.query('begin');
          await first.query(`insert into ${schema}.a (n) values (1)`);
          // Were the version row locked from the first write on, this would wait for the first's commit.
          await second.query(`set statement_timeout = 5000`);
          await second.query(`insert into ${schema}.a (n) values (2)`);
          assert.equal(await version(), before + 1);
          await first.query('commit');
          assert.equal(await version(), before + 2);
        } finally {
          await Promise.all([first.end(), second.end()]);
        }
      });
    }
  });
}
