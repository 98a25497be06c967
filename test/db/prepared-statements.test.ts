import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase, type Database } from '../../src/db/client.js';
import { StatementNames } from '../../src/db/prepared-statements.js';
import { freshPostgresDatabase } from '../helpers/test-app.js';

describe('statement names', () => {
  it('names a query the second time it is seen, never transaction control, DDL or several statements', () => {
    const names = new StatementNames(10);
    assert.equal(names.nameOf('select $1::int'), undefined);
    const name = names.nameOf('select $1::int');
    assert.ok(name);
    assert.equal(names.nameOf('select $1::int'), name, 'the same text keeps its name');
    for (const text of ['begin', 'commit', 'create table t (a int)', 'select 1; select 2']) {
      names.nameOf(text);
      assert.equal(names.nameOf(text), undefined, text);
    }
  });

  it('names at most maxNamed texts; the rest run unnamed', () => {
    const names = new StatementNames(2);
    const named = ['a', 'b', 'c'].map((column) => { names.nameOf(`select ${column}`); return names.nameOf(`select ${column}`); });
    assert.equal(named.filter(Boolean).length, 2);
    assert.equal(new Set(named.filter(Boolean)).size, 2);
  });
});

// A named statement is planned once per connection; one whose table changed shape is run again
// unnamed and its connection replaced, so that the next run plans it afresh. Transactions run unnamed.
describe('prepared statements on PostgreSQL', { skip: !process.env['TEST_DATABASE_URL'] && 'needs TEST_DATABASE_URL' }, () => {
  let database: { url: string; drop: () => Promise<void> };
  let db: Database;
  before(async () => {
    database = await freshPostgresDatabase();
    // One connection, so that every query below runs on the connection that prepared.
    db = openDatabase({ url: database.url, dataDir: null, poolSize: 1 });
    await sql`create table shapes (id int primary key, name text)`.execute(db);
    await sql`insert into shapes values (1, 'one')`.execute(db);
  });
  after(async () => {
    await db.destroy();
    await database.drop();
  });

  const read = () => db.selectFrom('shapes' as never).selectAll().where('id' as never, '=', 1 as never).execute();

  it('runs a repeated query as a named statement, prepared on its connection', async () => {
    await read();
    await read();
    const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db);
    assert.ok(rows.some((row) => row.statement.includes('"shapes"')), JSON.stringify(rows));
    assert.deepEqual(await read(), [{ id: 1, name: 'one' }]);
  });

  it('a statement planned before its table changed shape answers all the same, and its connection is replaced', async () => {
    await read();
    const backend = async () => (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db)).rows[0]!.pid;
    const before = await backend();
    await sql`alter table shapes add column colour text`.execute(db);
    assert.deepEqual(await read(), [{ id: 1, name: 'one', colour: null }]);
    assert.notEqual(await backend(), before, 'the connection holding the stale statement was closed');
    assert.deepEqual(await read(), [{ id: 1, name: 'one', colour: null }]);
  });

  it('statements inside a transaction run unnamed', async () => {
    const text = 'select id from shapes where id = $1 and name is not null';
    await db.transaction().execute(async (trx) => {
      for (let i = 0; i < 3; i++) await sql.raw(text.replace('$1', '1')).execute(trx);
      for (let i = 0; i < 3; i++) await trx.selectFrom('shapes' as never).select('id' as never).where('name' as never, '=', 'one' as never).execute();
    });
    const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db);
    assert.ok(!rows.some((row) => row.statement.includes('"name" =')), JSON.stringify(rows));
  });
});
