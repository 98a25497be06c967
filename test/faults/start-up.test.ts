import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { freshPostgresDatabase } from '../helpers/test-app.js';
import { adminToken, databaseProxy, eventually, request, serverPorts, startServer, type ChildServer } from './harness.js';

/**
 * The real program's start as an orchestrator sees it: probes before the database is there, a
 * schema migrated by a newer release, a database role short of privileges, and the `worker` role
 * that runs the sagas for API processes started with BACKGROUND_WORK=off.
 */

const POSTGRES = process.env['TEST_DATABASE_URL'];

describe('start-up (postgres)', { skip: !POSTGRES && 'needs TEST_DATABASE_URL' }, () => {
  let database: { url: string; drop: () => Promise<void> };
  const children: ChildServer[] = [];
  const start = async (env: Record<string, string>, mode?: 'all' | 'api' | 'worker') => {
    const child = startServer(env, await serverPorts(), mode);
    children.push(child);
    return child;
  };
  const oneFatalLine = (server: ChildServer) => {
    const fatal = server.lines.filter((line) => /"level":60/.test(line));
    assert.equal(fatal.length, 1, server.lines.join('\n'));
    assert.doesNotMatch(fatal[0]!, /"stack"/);
    return JSON.parse(fatal[0]!).msg as string;
  };

  before(async () => {
    database = await freshPostgresDatabase();
  });
  after(async () => {
    await Promise.all(children.map((child) => child.kill()));
    await database.drop();
  });

  it('answers /health/live at once and /health/ready 503 until the database is there and migrated; holds other requests meanwhile (10 s at most)', async () => {
    const late = await databaseProxy(database.url);
    try {
      const server = await start({ DATABASE_URL: late.url });
      await server.waitForLine(/database not reachable/, 30_000);
      // Sent while the database is away: held, then answered 503 once its 10 s are up.
      const heldAt = Date.now();
      const tooLong = request(`${server.apiUrl}/v1/users/me`).then((answer) => ({ answer, waitedMs: Date.now() - heldAt }));
      const live = await request(`${server.apiUrl}/health/live`);
      assert.equal(live.status, 200);
      assert.deepEqual(live.body, { status: 'UP' });
      const ready = await request(`${server.apiUrl}/health/ready`);
      assert.equal(ready.status, 503);
      assert.equal(ready.body.status, 'DOWN');
      const { answer: me, waitedMs } = await tooLong;
      assert.equal(me.status, 503);
      assert.ok(waitedMs >= 9_500, `answered after ${waitedMs} ms`);
      assert.match(String(me.headers['content-type']), /^application\/problem\+json/);
      assert.equal(me.body.type, 'urn:platform:error:SERVICE_UNAVAILABLE');
      assert.equal(me.headers['retry-after'], '1');

      // Sent just before the database comes: held, then served by the application once it is ready.
      const token = await adminToken(server.idpUrl);
      const served = request(`${server.apiUrl}/v1/users/me`, { token });
      await late.listen();
      const answer = await served;
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.equal(answer.body.email, 'admin@example.com');
      assert.equal((await request(`${server.apiUrl}/health/ready`)).status, 200);
      assert.equal(await server.kill('SIGTERM'), 0);
    } finally {
      await late.close();
    }
  });

  it('refuses, with one line, a database that a newer release migrated', async () => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      await client.query(`insert into kysely_migration (name, timestamp) values ('9999_from_a_newer_release', now()::text)`);
      const server = await start({ DATABASE_URL: database.url });
      assert.equal(await server.exited, 1);
      assert.match(oneFatalLine(server), /^database schema is newer than this program: migration 9999_from_a_newer_release was applied by a newer release \(this one knows up to 0\d{3}_\w+\); run that release or a later one$/);
    } finally {
      await client.query(`delete from kysely_migration where name = '9999_from_a_newer_release'`);
      await client.end();
    }
  });

  it('names the privileges a database role lacks, and the statements that grant them', async () => {
    const fresh = await freshPostgresDatabase();
    const role = `limited_${Date.now()}`;
    const admin = new pg.Client({ connectionString: fresh.url });
    await admin.connect();
    try {
      // PostgreSQL 15 grants CREATE on schema public to nobody but its owner.
      await admin.query(`create role ${role} login; revoke create on schema public from public`);
      const url = new URL(fresh.url);
      url.username = role;
      const server = await start({ DATABASE_URL: url.toString() });
      assert.equal(await server.exited, 1);
      const line = oneFatalLine(server);
      const name = url.pathname.slice(1);
      assert.equal(line, `database role "${role}" lacks what the service needs: `
        + `CREATE on the database (a schema per dataset): GRANT CREATE ON DATABASE "${name}" TO "${role}"; `
        + `CREATE on schema public (the service's tables): GRANT CREATE ON SCHEMA public TO "${role}"`);

      // Granted as the line says, the same role starts and migrates.
      await admin.query(`grant create on database ${name} to ${role}; grant create on schema public to ${role}`);
      const granted = await start({ DATABASE_URL: url.toString() });
      await granted.waitForLine(/"msg":"ready: /, 30_000);
      assert.equal(await granted.kill('SIGTERM'), 0);
    } finally {
      await admin.end();
      await fresh.drop();
      const cleanup = new pg.Client({ connectionString: POSTGRES });
      await cleanup.connect();
      await cleanup.query(`drop role if exists ${role}`);
      await cleanup.end();
    }
  });

  it('runs sagas in a worker process for an API started with BACKGROUND_WORK=off', async () => {
    const api = await start({ DATABASE_URL: database.url, BACKGROUND_WORK: 'off' }, 'all');
    await api.waitForLine(/"msg":"ready: .*no sagas or pipelines here \(BACKGROUND_WORK=off\)/);
    const token = await adminToken(api.idpUrl);
    const created = await request(`${api.apiUrl}/v1/datasets`, {
      method: 'POST', token,
      body: { name: `worker-${Date.now()}`, description: 'provisioned by the worker', namedApis: [{ name: 'Payload', slug: 'payload', standard: 'STA' }] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.pendingSagaType, 'CREATE');
    const pending = async () => (await request(`${api.apiUrl}/v1/datasets/${created.body.id}`, { token })).body.pendingSagaType;
    // Nobody runs it: the API process does not (a saga step takes milliseconds when someone does).
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    assert.equal(await pending(), 'CREATE');

    const worker = await start({ DATABASE_URL: database.url, OIDC_ISSUER: `${api.idpUrl}/realms/platform` }, 'worker');
    await worker.waitForLine(/"msg":"ready: worker \(sagas and pipelines; probes on port \d+\)/);
    assert.equal((await request(`${worker.apiUrl}/health/ready`)).status, 200);
    assert.equal((await request(`${worker.apiUrl}/metrics`)).status, 200);
    await eventually('the CREATE saga done by the worker', 15_000, async () => ((await pending()) === null ? true : undefined));
    assert.equal(await worker.kill('SIGTERM'), 0);
  });
});
