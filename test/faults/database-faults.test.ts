import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { freshPostgresDatabase } from '../helpers/test-app.js';
import { adminToken, databaseProxy, eventually, request, serverPorts, startServer, type Answer, type ChildServer, type DatabaseProxy } from './harness.js';

/**
 * The real program as a child process, with PostgreSQL behind a TCP proxy: terminated backends, a
 * database that goes away and comes back, and one that is not there at start. The process must
 * stay up, answer 503 SERVICE_UNAVAILABLE with Retry-After meanwhile, and recover by itself.
 */

const POSTGRES = process.env['TEST_DATABASE_URL'];

/** A 503 for an unreachable database, as the contract's error table says. */
function assertUnavailable(answer: Answer) {
  assert.equal(answer.status, 503, JSON.stringify(answer.body));
  assert.match(String(answer.headers['content-type']), /^application\/problem\+json/);
  assert.equal(answer.body.type, 'urn:platform:error:SERVICE_UNAVAILABLE');
  assert.match(String(answer.headers['retry-after']), /^\d+$/);
}

describe('database faults (postgres)', { skip: !POSTGRES && 'needs TEST_DATABASE_URL' }, () => {
  let database: { url: string; drop: () => Promise<void> };
  let proxy: DatabaseProxy;
  const children: ChildServer[] = [];
  const start = async (env: Record<string, string>) => {
    const child = startServer(env, await serverPorts());
    children.push(child);
    return child;
  };

  before(async () => {
    database = await freshPostgresDatabase();
    proxy = await databaseProxy(database.url);
    await proxy.listen();
  });
  after(async () => {
    await Promise.all(children.map((child) => child.kill()));
    await proxy.close();
    await database.drop();
  });

  it('stays up while its backends are terminated under load, answering 2xx or 503, then recovers', async () => {
    const server = await start({ DATABASE_URL: database.url });
    await server.waitForLine(/"msg":"ready: /);
    const token = await adminToken(server.idpUrl);
    const me = await request(`${server.apiUrl}/v1/users/me`, { token });
    assert.equal(me.status, 200);
    const databaseName = new URL(database.url).pathname.slice(1);

    const answers: Answer[] = [];
    let writing = true;
    const client = async () => {
      while (writing) {
        const body = { name: `fault-${randomUUID()}`, memberIds: [me.body.id] };
        answers.push(await request(`${server.apiUrl}/v1/groups`, { method: 'POST', token, body }));
      }
    };
    const clients = Array.from({ length: 12 }, client);
    // Each round catches writes inside the database: a lock the test holds makes the server's inserts
    // wait, and the backends running them are terminated while they wait. So every round terminates
    // backends in the middle of a request, not only idle ones the pool might quietly replace.
    const locker = new pg.Client({ connectionString: database.url });
    await locker.connect();
    const lockerPid: number = (await locker.query('select pg_backend_pid() as pid')).rows[0].pid;
    const admin = new pg.Client({ connectionString: POSTGRES });
    await admin.connect();
    let terminated = 0;
    try {
      for (let round = 0; round < 4; round++) {
        await locker.query('begin');
        await locker.query('lock table groups in share mode');
        const waiting = await eventually(`round ${round}: a write waiting on the lock`, 10_000, async () => {
          const { rows } = await admin.query<{ pid: number }>(
            `select pid from pg_stat_activity where datname = $1 and wait_event_type = 'Lock' and pid <> $2`, [databaseName, lockerPid]);
          return rows.length > 0 ? rows.map((row) => row.pid) : undefined;
        });
        const { rows } = await admin.query<{ done: boolean }>('select pg_terminate_backend(pid) as done from unnest($1::int[]) as pid', [waiting]);
        terminated += rows.filter((row) => row.done).length;
        await locker.query('rollback');
        // The next round starts once the server writes again (its pool has replaced the terminated backends).
        const before = answers.length;
        await eventually(`round ${round}: writes answered 201 again`, 10_000, () => (answers.slice(before).some((answer) => answer.status === 201) ? true : undefined));
      }
    } finally {
      await locker.end();
      await admin.end();
    }
    writing = false;
    await Promise.all(clients);

    assert.equal(server.process.exitCode, null, 'the process is still running');
    assert.ok(terminated >= 4, `backends terminated mid-request: ${terminated}`);
    const unavailable = answers.filter((answer) => answer.status !== 201);
    for (const answer of unavailable) assertUnavailable(answer);
    assert.ok(unavailable.length >= 1, `a write whose backend was terminated answers 503; answers: ${answers.length}, all 201`);
    assert.ok(answers.length > unavailable.length, 'writes succeeded between the terminations');
    const after = await request(`${server.apiUrl}/v1/groups`, { method: 'POST', token, body: { name: `after-${randomUUID()}`, memberIds: [me.body.id] } });
    assert.equal(after.status, 201, JSON.stringify(after.body));
    await server.kill();
  });

  it('answers 503 while the database is unreachable and recovers when it is back', async () => {
    const server = await start({ DATABASE_URL: proxy.url });
    await server.waitForLine(/"msg":"ready: /);
    const token = await adminToken(server.idpUrl);
    assert.equal((await request(`${server.apiUrl}/health/ready`)).status, 200);

    await proxy.cut();
    try {
      const ready = await request(`${server.apiUrl}/health/ready`);
      assert.equal(ready.status, 503);
      assert.equal(ready.body.status, 'DOWN');
      assertUnavailable(await request(`${server.apiUrl}/v1/groups`, { token }));
      assertUnavailable(await request(`${server.apiUrl}/v1/groups`, { method: 'POST', token, body: { name: `down-${randomUUID()}` } }));
    } finally {
      await proxy.listen();
    }

    await eventually('ready again', 5_000, async () => ((await request(`${server.apiUrl}/health/ready`)).status === 200 ? true : undefined));
    const created = await request(`${server.apiUrl}/v1/groups`, { method: 'POST', token, body: { name: `back-${randomUUID()}` } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(server.process.exitCode, null);
    await server.kill();
  });

  it('waits for a database that is not there at start, and becomes ready once it is', async () => {
    const late = await databaseProxy(database.url);
    try {
      const server = await start({ DATABASE_URL: late.url });
      // Generous: under a loaded machine the child compiles its sources (tsx) before it tries.
      const line = await server.waitForLine(/database not reachable/, 30_000);
      assert.match(line, new RegExp(`database not reachable \\(ECONNREFUSED at 127\\.0\\.0\\.1:${late.port}\\); retrying in \\d+ s, giving up after 60 s`));
      await late.listen();
      await server.waitForLine(/"msg":"ready: /, 15_000);
      assert.equal((await request(`${server.apiUrl}/health/ready`)).status, 200);
      await server.kill();
    } finally {
      await late.close();
    }
  });

  it('gives up after DATABASE_STARTUP_TIMEOUT with one clear line and exit code 1', async () => {
    const nowhere = await databaseProxy(database.url); // never listens
    const server = await start({ DATABASE_URL: nowhere.url, DATABASE_STARTUP_TIMEOUT: '2' });
    assert.equal(await server.exited, 1);
    const fatal = server.lines.filter((line) => /"level":60/.test(line));
    assert.equal(fatal.length, 1, server.lines.join('\n'));
    assert.match(fatal[0]!, /database not reachable \(ECONNREFUSED at 127\.0\.0\.1:\d+\); gave up after 2 s \(DATABASE_STARTUP_TIMEOUT\)/);
  });
});
