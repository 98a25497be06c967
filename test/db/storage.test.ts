import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { createContext } from '../../src/runtime.js';
import { buildApp } from '../../src/app.js';
import type { AppContext } from '../../src/context.js';
import { ADMIN_EMAIL, DEV_PASSWORD, databaseKinds, freshPostgresDatabase, testIdp, type DatabaseKind } from '../helpers/test-app.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Storage as a running program sees it: data survives a restart on PGlite (DATA_DIR) and on
 * PostgreSQL (DATABASE_URL), the first start bootstraps exactly once, concurrent starts on one
 * PostgreSQL database neither both migrate nor both bootstrap, and TENANT_ID is honoured.
 */

const unique = () => randomUUID().slice(0, 8);

interface Storage {
  /** The environment that names this storage, as the program would get it. */
  env: Record<string, string>;
  drop(): Promise<void>;
}

/** An empty storage of that kind: a fresh temporary DATA_DIR, or a fresh PostgreSQL database. */
async function freshStorage(kind: DatabaseKind): Promise<Storage> {
  if (kind === 'postgres') {
    const database = await freshPostgresDatabase();
    return { env: { DATABASE_URL: database.url }, drop: async () => { await connectionsGone(database.url); await database.drop(); } };
  }
  const dir = await mkdtemp(join(tmpdir(), 'storage-test-'));
  return { env: { DATA_DIR: join(dir, 'data') }, drop: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Waits until no session uses that database. pg's Pool.end() resolves before its sockets have
 * closed; a `drop database ... with (force)` in that moment terminates them, and the closing
 * client then throws "terminating connection due to administrator command" outside any test.
 */
async function connectionsGone(url: string) {
  const name = new URL(url).pathname.slice(1);
  const admin = new pg.Client({ connectionString: process.env['TEST_DATABASE_URL'] });
  await admin.connect();
  try {
    await waitFor(async () => (await admin.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where datname = $1', [name])).rows[0]!.n === 0,
      { what: `every session on ${name} to close` });
  } finally {
    await admin.end();
  }
}

async function tokenFor(email: string): Promise<string> {
  const { url } = await testIdp();
  const response = await fetch(`${url}/realms/platform/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', client_id: 'api-access', username: email, password: DEV_PASSWORD }),
  });
  assert.equal(response.status, 200);
  return ((await response.json()) as { access_token: string }).access_token;
}

/** Starts the way the program does: configuration from the environment, then the shared context. */
async function start(storage: Storage, env: Record<string, string> = {}): Promise<AppContext> {
  const { url } = await testIdp();
  return createContext(loadConfig({ IDP_URL: url, LOG_LEVEL: 'silent', ...storage.env, ...env }));
}

/** Runs `use` against an app on a started context and closes both afterwards, as a stopping program does. */
async function withApp<T>(ctx: AppContext, use: (inject: (method: string, url: string, payload?: object) => Promise<{ statusCode: number; json(): any; body: string }>) => Promise<T>): Promise<T> {
  const app = await buildApp(ctx);
  await app.ready();
  const token = await tokenFor(ADMIN_EMAIL);
  try {
    return await use((method, url, payload) =>
      app.inject({ method: method as 'GET', url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) }));
  } finally {
    await app.close();
  }
}

/** What the bootstrap must have created exactly once, counted in the database itself. */
async function bootstrapCounts(ctx: AppContext) {
  const count = async (query: ReturnType<typeof sql<{ n: number }>>) => Number((await query.execute(ctx.db)).rows[0]!.n);
  return {
    tenants: await count(sql<{ n: number }>`select count(*) as n from tenant`),
    administratorsGroups: await count(sql<{ n: number }>`select count(*) as n from groups where name = 'Administrators'`),
    admins: await count(sql<{ n: number }>`select count(*) as n from users where lower(email) = ${ADMIN_EMAIL}`),
    tenantAssignments: await count(sql<{ n: number }>`select count(*) as n from assignments where scope_type = 'TENANT'`),
    adminMemberships: await count(sql<{ n: number }>`select count(*) as n from group_members gm join groups g on g.id = gm.group_id where g.name = 'Administrators'`),
  };
}

const ONCE = { tenants: 1, administratorsGroups: 1, admins: 1, tenantAssignments: 1, adminMemberships: 1 };

for (const kind of databaseKinds(import.meta.url)) {
  describe(`storage (${kind}, persistent)`, () => {
    let storage: Storage;
    before(async () => { storage = await freshStorage(kind); });
    after(() => storage.drop());

    it('keeps data, the tenant and a single bootstrap across a restart', async () => {
      const name = `persisted-${unique()}`;
      const first = await start(storage);
      let tenantId: string;
      let groupId: string;
      try {
        tenantId = first.tenant.id;
        assert.match(tenantId, /^[0-9a-f-]{36}$/);
        groupId = await withApp(first, async (inject) => {
          const created = await inject('POST', '/v1/groups', { name, description: 'written before the restart' });
          assert.equal(created.statusCode, 201, created.body);
          return created.json().id as string;
        });
        assert.deepEqual(await bootstrapCounts(first), ONCE);
      } finally {
        await first.db.destroy();
      }

      const second = await start(storage);
      try {
        assert.equal(second.tenant.id, tenantId);
        assert.deepEqual(await bootstrapCounts(second), ONCE);
        await withApp(second, async (inject) => {
          const listed = await inject('GET', `/v1/groups?name=${name}`);
          assert.equal(listed.statusCode, 200, listed.body);
          assert.deepEqual(listed.json().content.map((g: { id: string }) => g.id), [groupId]);
          const fetched = await inject('GET', `/v1/groups/${groupId}`);
          assert.equal(fetched.statusCode, 200);
          assert.equal(fetched.json().description, 'written before the restart');
          const administrators = await inject('GET', '/v1/groups?name=Administrators');
          assert.equal(administrators.json().totalElements, 1);
          const tenantAssignments = await inject('GET', '/v1/assignments?scopeType=TENANT');
          assert.equal(tenantAssignments.statusCode, 200, tenantAssignments.body);
          assert.equal(tenantAssignments.json().totalElements, 1);
          assert.equal(tenantAssignments.json().content[0].scope.id, tenantId);
        });
      } finally {
        await second.db.destroy();
      }
    });

    it('refuses to start with a TENANT_ID other than the stored one, and leaves the data alone', async () => {
      const first = await start(storage);
      const stored = first.tenant.id;
      await first.db.destroy();
      const other = randomUUID();
      await assert.rejects(start(storage, { TENANT_ID: other }), (error: Error) => {
        assert.match(error.message, /TENANT_ID/);
        assert.match(error.message, new RegExp(other));
        return true;
      });
      // The stored id given again, even in upper case, is the same tenant.
      const again = await start(storage, { TENANT_ID: stored.toUpperCase() });
      try {
        assert.equal(again.tenant.id, stored);
        assert.deepEqual(await bootstrapCounts(again), ONCE);
      } finally {
        await again.db.destroy();
      }
    });

    it('takes a changed TENANT_NAME on a later start', async () => {
      const renamed = `renamed-${unique()}`;
      const ctx = await start(storage, { TENANT_NAME: renamed });
      try {
        assert.equal(ctx.tenant.name, renamed);
        const row = await ctx.db.selectFrom('tenant').select('name').executeTakeFirstOrThrow();
        assert.equal(row.name, renamed);
      } finally {
        await ctx.db.destroy();
      }
    });
  });

  describe(`storage (${kind}, configured TENANT_ID)`, () => {
    let storage: Storage;
    before(async () => { storage = await freshStorage(kind); });
    after(() => storage.drop());

    it('uses TENANT_ID on the first start and for the TENANT assignment', async () => {
      const tenantId = randomUUID();
      const ctx = await start(storage, { TENANT_ID: tenantId, TENANT_NAME: 'configured' });
      try {
        assert.deepEqual(ctx.tenant, { id: tenantId, name: 'configured' });
        await withApp(ctx, async (inject) => {
          const assignments = await inject('GET', '/v1/assignments?scopeType=TENANT');
          assert.equal(assignments.statusCode, 200, assignments.body);
          assert.equal(assignments.json().content[0].scope.id, tenantId);
        });
      } finally {
        await ctx.db.destroy();
      }
    });
  });

  if (kind === 'postgres') {
    describe('storage (postgres, concurrent first starts)', () => {
      let storage: Storage;
      before(async () => { storage = await freshStorage(kind); });
      after(() => storage.drop());

      it('two processes starting at the same moment on one fresh database both succeed and bootstrap once', async () => {
        const results = await Promise.allSettled([start(storage), start(storage), start(storage)]);
        const contexts = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
        try {
          for (const result of results) {
            if (result.status === 'rejected') assert.fail(`a concurrent start failed: ${(result.reason as Error)?.stack ?? String(result.reason)}`);
          }
          const [a, b, c] = contexts as [AppContext, AppContext, AppContext];
          assert.equal(a.tenant.id, b.tenant.id);
          assert.equal(a.tenant.id, c.tenant.id);
          assert.deepEqual(await bootstrapCounts(a), ONCE);
          const migrations = await sql<{ n: number }>`select count(*) as n from kysely_migration`.execute(a.db);
          const distinct = await sql<{ n: number }>`select count(distinct name) as n from kysely_migration`.execute(a.db);
          assert.equal(Number(migrations.rows[0]!.n), Number(distinct.rows[0]!.n));
        } finally {
          await Promise.all(contexts.map((ctx) => ctx.db.destroy()));
        }
      });
    });
  }
}
