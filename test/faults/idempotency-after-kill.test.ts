import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { decodeJwt } from 'jose';
import { freshPostgresDatabase } from '../helpers/test-app.js';
import { openDatabase } from '../../src/db/client.js';
import { adminToken, eventually, request, serverPorts, startServer, type ChildServer } from './harness.js';
import { prefilledPgliteDirectory } from '../helpers/pglite-snapshot.js';

/**
 * An Idempotency-Key whose first request died with its process (kill -9) must not block the retry:
 * on PostgreSQL the placeholder's lease runs out within seconds; on PGlite a start clears it.
 */

const POSTGRES = process.env['TEST_DATABASE_URL'];
const LEASE_SECONDS = 5;

const children: ChildServer[] = [];
after(() => Promise.all(children.map((child) => child.kill())));

function start(env: Record<string, string>, ports: Awaited<ReturnType<typeof serverPorts>>) {
  const child = startServer(env, ports);
  children.push(child);
  return child;
}

describe('idempotency after kill -9 (postgres)', { skip: !POSTGRES && 'needs TEST_DATABASE_URL' }, () => {
  let database: { url: string; drop: () => Promise<void> };
  after(() => database?.drop());

  it('answers 409 while the dead request\'s lease holds, then lets the retry run once it has run out, creating exactly one group', async () => {
    database = await freshPostgresDatabase();
    const first = start({ DATABASE_URL: database.url }, await serverPorts());
    await first.waitForLine(/"msg":"ready: /);
    // The process that takes the retry is up before the kill, so that the retry comes while the lease still holds.
    const second = start({ DATABASE_URL: database.url }, await serverPorts());
    await second.waitForLine(/"msg":"ready: /);
    const token = await adminToken(first.idpUrl);
    const secondToken = await adminToken(second.idpUrl); // each development IdP signs with keys of its own
    const key = randomUUID();
    const body = { name: `kill-${randomUUID()}` };

    // The insert waits behind a lock the test holds, so the request is in flight when the process dies.
    const locker = new pg.Client({ connectionString: database.url });
    await locker.connect();
    const watcher = new pg.Client({ connectionString: database.url });
    await watcher.connect();
    let leaseEnd: number;
    try {
      await locker.query('begin');
      await locker.query('lock table groups in share mode');
      request(`${first.apiUrl}/v1/groups`, { method: 'POST', token, body, headers: { 'idempotency-key': key } }).catch(() => undefined);
      await eventually('the placeholder', 5_000, async () => {
        const { rows } = await watcher.query('select count(*)::int as n from idempotency_keys where key = $1 and status = 0', [key]);
        return rows[0].n === 1 ? true : undefined;
      });
      await first.kill('SIGKILL');
      await locker.query('rollback');
      // Nobody renews the lease any more: this is when it runs out.
      const { rows } = await watcher.query('select lease_expires_at from idempotency_keys where key = $1', [key]);
      leaseEnd = new Date(rows[0].lease_expires_at).getTime();
    } finally {
      await locker.end();
    }

    // While the lease holds, the retry is refused: the first request might still be running somewhere.
    const retry = () => request(`${second.apiUrl}/v1/groups`, { method: 'POST', token: secondToken, body, headers: { 'idempotency-key': key } });
    const refused = await retry();
    assert.ok(Date.now() < leaseEnd, 'the retry was sent before the lease ran out');
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.equal(refused.body.type, 'urn:platform:error:IDEMPOTENCY_KEY_REUSED');
    const retryAfter = Number(refused.headers['retry-after']);
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= LEASE_SECONDS, `Retry-After: ${refused.headers['retry-after']}`);

    // Once it has run out, the retry runs (a 409 meanwhile is the same refusal).
    const created = await eventually('the retry to run', (LEASE_SECONDS + 5) * 1000, async () => {
      const answer = await retry();
      if (answer.status !== 409) return answer;
      assert.equal(answer.body.type, 'urn:platform:error:IDEMPOTENCY_KEY_REUSED');
      return undefined;
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.ok(Date.now() >= leaseEnd, 'the retry ran only after the lease ran out');
    assert.ok(Date.now() < leaseEnd + 3_000, `the retry ran ${Date.now() - leaseEnd} ms after the lease ran out`);
    const { rows } = await watcher.query('select count(*)::int as n from groups where name = $1', [body.name]);
    assert.equal(rows[0].n, 1);
    await watcher.end();

    // The same key again is now a replay of that answer.
    const replay = await retry();
    assert.equal(replay.status, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body.id, created.body.id);
    await second.kill();
  });
});

describe('idempotency after kill -9 (pglite)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'idempotency-'));
  before(() => prefilledPgliteDirectory(dataDir));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('clears the placeholder a killed process left, so the retry runs at once', async () => {
    const ports = await serverPorts();
    const first = start({ DATA_DIR: dataDir }, ports);
    await first.waitForLine(/"msg":"ready: /);
    let token = await adminToken(first.idpUrl);
    const key = randomUUID();
    const body = { name: `kill-${randomUUID()}` };
    await first.kill('SIGKILL');

    // What the process left when it died in the middle of the request: the key's placeholder, with
    // a lease that has not run out. (PGlite runs in the server's process, so the test cannot hold
    // a lock to catch it mid-request; it writes what such a kill leaves behind.)
    const db = openDatabase({ url: null, dataDir });
    await db.insertInto('idempotency_keys').values({
      caller: decodeJwt(token).sub!,
      key,
      request_hash: createHash('sha256').update(`POST /v1/groups\n${JSON.stringify(body)}`).digest('hex'),
      status: 0,
      headers: '{}',
      body: '',
      lease_expires_at: new Date(Date.now() + 60_000),
    }).execute();
    await db.destroy();

    const second = start({ DATA_DIR: dataDir }, ports);
    await second.waitForLine(/"msg":"ready: /);
    token = await adminToken(second.idpUrl); // the development IdP's keys live as long as its process
    const retry = await request(`${second.apiUrl}/v1/groups`, { method: 'POST', token, body, headers: { 'idempotency-key': key } });
    assert.equal(retry.status, 201, JSON.stringify(retry.body));
    const list = await request(`${second.apiUrl}/v1/groups?name=${encodeURIComponent(body.name)}`, { token });
    assert.equal(list.status, 200);
    assert.equal(list.body.content.filter((group: { name: string }) => group.name === body.name).length, 1);
    await second.kill();
  });
});
