import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import pg from 'pg';
import { sqlConnector } from '../../src/ingest/connectors/sql.js';
import type { Connector } from '../../src/ingest/types.js';
import { freshPostgresDatabase } from '../helpers/test-app.js';
import { waitFor } from '../helpers/wait.js';
import { recordingContext } from './connector-context.js';

/** The SQL polling connector against a fresh database on the real PostgreSQL, without the runtime. */

describe('SQL polling connector (postgres)', { skip: process.env['TEST_DATABASE_URL'] ? false : 'needs TEST_DATABASE_URL' }, () => {
  let database: { url: string; drop: () => Promise<void> };
  let admin: pg.Client;
  const running: Connector[] = [];

  before(async () => {
    database = await freshPostgresDatabase();
    admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((connector) => connector.stop()));
  });
  after(async () => {
    await admin?.end();
    await database?.drop();
  });

  const start = async (configuration: Record<string, unknown>, options: { schedule?: string | null; position?: unknown } = {}) => {
    const recording = recordingContext('SQL', { driver: 'postgres', dsn: database.url, ...configuration }, options);
    const connector = await sqlConnector(recording.context);
    running.push(connector);
    return { ...recording, connector };
  };
  const ids = (values: unknown[]) => values.map((value) => (value as { id: number }).id);

  it('reads rows in cursor order, in pages of 1,000, each batch carrying the cursor value it reached', async () => {
    await admin.query('create table readings (id bigint primary key, station text, value numeric, at timestamptz)');
    // Inserted out of order: the cursor, not the physical order, decides.
    await admin.query(`insert into readings select id, 's' || (id % 7), id / 4.0, timestamptz '2024-01-01' + id * interval '1 second'
      from generate_series(1, 2500) id order by random()`);
    const run = await start({ table: 'readings', columns: ['id', 'station', 'value', 'at'], cursor_column: 'id' });
    await waitFor(() => run.values().length === 2500, { what: '2,500 rows', timeoutMs: 10_000, last: () => String(run.values().length) });
    assert.deepEqual(run.batches.map((batch) => [batch.records.length, batch.position]), [[1000, 1000], [1000, 2000], [500, 2500]]);
    assert.deepEqual(ids(run.values()), Array.from({ length: 2500 }, (_, i) => i + 1));
    assert.deepEqual(run.values()[2], { id: 3, station: 's3', value: 0.75, at: '2024-01-01T00:00:03Z' });
    assert.equal(run.states[0]?.state, 'RUNNING');
  });

  it('a new connector with the saved position reads only the rows after it', async () => {
    const run = await start({ table: 'public.readings', columns: ['id'], cursor_column: 'id' }, { position: 2000 });
    await waitFor(() => run.values().length === 500, { what: 'the 500 newer rows', timeoutMs: 10_000 });
    assert.deepEqual(ids(run.values()), Array.from({ length: 500 }, (_, i) => 2001 + i));
    assert.equal(run.batches.at(-1)!.position, 2500);
  });

  it('rows sharing a cursor value across a page boundary are all delivered, each once', async () => {
    await admin.query('create table grouped (id serial primary key, g int not null)');
    // 998 of 1, 10 of 2 (straddling the first page's end), 3 of 3; then 1,500 of 5 (more than a page of one value), 2 of 6.
    await admin.query(`insert into grouped (g) select 1 from generate_series(1, 998);
      insert into grouped (g) select 2 from generate_series(1, 10); insert into grouped (g) select 3 from generate_series(1, 3);
      insert into grouped (g) select 5 from generate_series(1, 1500); insert into grouped (g) select 6 from generate_series(1, 2)`);
    const run = await start({ table: 'grouped', columns: ['*'], cursor_column: 'g' });
    await waitFor(() => run.values().length >= 2513, { what: 'every row', timeoutMs: 10_000, last: () => String(run.values().length) });
    const delivered = ids(run.values());
    assert.equal(new Set(delivered).size, 2513, 'no row twice');
    assert.deepEqual([...delivered].sort((a, b) => a - b), Array.from({ length: 2513 }, (_, i) => i + 1));
    // No batch ends inside a run of one value with the position on it while rows of that value are still to come.
    assert.deepEqual(run.batches.map((batch) => [batch.records.length, batch.position]), [[998, 1], [13, 3], [1000, undefined], [500, 5], [2, 6]]);
  });

  it('keeps timestamps to the microsecond: a position between two rows a microsecond apart reads only the later', async () => {
    await admin.query(`create table precise (id int, at timestamptz);
      insert into precise values (1, '2024-05-01 10:00:00.000001+00'), (2, '2024-05-01 10:00:00.000002+00')`);
    const first = await start({ table: 'precise', columns: ['id', 'at'], cursor_column: 'at' });
    await waitFor(() => first.values().length === 2, { what: 'both rows' });
    assert.deepEqual(first.batches.map((batch) => batch.position), ['2024-05-01T10:00:00.000002Z']);
    const resumed = await start({ table: 'precise', columns: ['id'], cursor_column: 'at' }, { position: '2024-05-01T10:00:00.000001Z' });
    await waitFor(() => resumed.values().length, { what: 'the later row' });
    assert.deepEqual(resumed.values(), [{ id: 2 }]);
  });

  it('on a six-field cron of every second, rows inserted later are picked up at the next polls', async () => {
    await admin.query('create table later (id int primary key, note text)');
    const run = await start({ table: 'later', columns: ['id', 'note'], cursor_column: 'id' }, { schedule: '*/1 * * * * *' });
    await waitFor(() => run.states.length, { what: 'a first poll' });
    for (const id of [1, 2, 3]) {
      await admin.query('insert into later values ($1, $2)', [id, `row ${id}`]);
      // Without the schedule, the next poll would come after 60 s.
      await waitFor(() => run.values().length === id, { what: `row ${id}`, timeoutMs: 4_000 });
    }
    assert.deepEqual(run.values(), [{ id: 1, note: 'row 1' }, { id: 2, note: 'row 2' }, { id: 3, note: 'row 3' }]);
    assert.deepEqual(run.batches.map((batch) => batch.position), [1, 2, 3]);
  });

  it('without a cursor column every poll reads every row', async () => {
    await admin.query('create table whole (id int); insert into whole values (1), (2)');
    const run = await start({ table: 'whole', columns: ['id'], where: 'id > 0' }, { schedule: '* * * * * *' });
    await waitFor(() => run.batches.length >= 2, { what: 'two polls', timeoutMs: 5_000 });
    assert.deepEqual(run.batches.slice(0, 2).map((batch) => [ids(batch.records.map((r) => r.value)).sort(), batch.position]), [[[1, 2], undefined], [[1, 2], undefined]]);
  });

  it('the session is read-only: a where that writes is refused by PostgreSQL, reported, and nothing is written', async () => {
    await admin.query(`create table written (at timestamptz default now());
      create function leaves_a_trace() returns boolean language sql as 'insert into written default values returning true'`);
    const run = await start({ table: 'readings', columns: ['id'], cursor_column: 'id', where: 'leaves_a_trace()' });
    await waitFor(() => run.states.length, { what: 'a report' });
    assert.equal(run.states[0]!.state, 'RETRYING');
    assert.match(run.states[0]!.message, /cannot execute INSERT in a read-only transaction/);
    assert.equal(run.batches.length, 0);
    assert.equal((await admin.query('select count(*)::int as n from written')).rows[0].n, 0);
  });

  it('a second statement in where or suffix is refused, not run', async () => {
    const run = await start({ table: 'readings', columns: ['id'], cursor_column: 'id', suffix: '; select 1' });
    await waitFor(() => run.states.length, { what: 'a report' });
    assert.equal(run.states[0]!.state, 'RETRYING');
    assert.match(run.states[0]!.message, /syntax error|multiple commands/);
  });

  it('a refused login is RETRYING without the password in the message; so is an unreachable server', async () => {
    // The test server trusts 127.0.0.1, so no password is ever wrong there: a role that does not exist is refused instead.
    const secret = 'pw-must-not-show-9f3a';
    const login = await start({ table: 'readings', columns: ['id'], user: 'no_such_role', password: secret });
    const port = new URL(database.url);
    port.port = '1';
    const unreachable = await start({ dsn: port.toString(), table: 'readings', columns: ['id'], password: secret });
    await waitFor(() => login.states.length && unreachable.states.length, { what: 'both reported', timeoutMs: 15_000 });
    assert.equal(login.states[0]!.state, 'RETRYING');
    assert.match(login.states[0]!.message, /no_such_role/);
    assert.equal(unreachable.states[0]!.state, 'RETRYING');
    assert.match(unreachable.states[0]!.message, /ECONNREFUSED/);
    for (const state of [...login.states, ...unreachable.states]) assert.ok(!state.message.includes(secret), state.message);
  });

  it('a table that is not a plain or schema-qualified name, or another driver, is reported without being sent', async () => {
    const table = await start({ table: 'readings; drop table readings', columns: ['id'] });
    const driver = await start({ driver: 'mysql', table: 'readings', columns: ['id'] });
    assert.match(table.states[0]?.message ?? '', /configuration.table "readings; drop table readings" is not a table name/);
    assert.match(driver.states[0]?.message ?? '', /only postgres/);
    assert.equal((await admin.query('select count(*)::int as n from readings')).rows[0].n, 2500);
  });
});
