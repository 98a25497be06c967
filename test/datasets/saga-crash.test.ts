import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config.js';
import { createContext } from '../../src/runtime.js';
import { buildApp } from '../../src/app.js';
import { datasetSagas } from '../../src/modules/datasets/index.js';
import { ADMIN_EMAIL, databaseKinds, freshPostgresDatabase, testIdp, DEV_PASSWORD } from '../helpers/test-app.js';
import { migratedPgliteSnapshot } from '../helpers/pglite-snapshot.js';
import { nodeArgumentsFor } from '../helpers/programs.js';

/**
 * The dataset sagas survive kill -9: a real worker process is killed inside each step of the
 * CREATE and the DELETE saga in turn; after the restarts the saga completes, with its storage
 * created (or removed) once and nothing left behind.
 */

const stepsOf = (kind: string) => datasetSagas().find((saga) => saga.kind === kind)!.steps.length;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`dataset sagas under kill -9 (${kind})`, () => {
    let postgres: Awaited<ReturnType<typeof freshPostgresDatabase>> | null = null;
    let dataDir: string | null = null;
    before(async () => {
      if (kind === 'postgres') postgres = await freshPostgresDatabase();
      else dataDir = mkdtempSync(join(tmpdir(), 'saga-crash-'));
    });
    after(async () => {
      await postgres?.drop();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    });

    /** The application in this process, its own saga worker never started: the child processes run the sagas. */
    async function withApp<T>(use: (call: (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) => Promise<{ status: number; body: any }>, db: any) => Promise<T>): Promise<T> {
      const { url: idpUrl } = await testIdp();
      const ctx = await createContext(loadConfig({ IDP_URL: idpUrl, LOG_LEVEL: 'silent' }), { url: postgres?.url ?? null, dataDir, ...(dataDir ? { pgliteSnapshot: await migratedPgliteSnapshot() } : {}) });
      const app = await buildApp(ctx);
      await app.ready();
      await ctx.sagas.stop();
      try {
        const tokenResponse = await fetch(`${idpUrl}/realms/platform/protocol/openid-connect/token`, {
          method: 'POST', body: new URLSearchParams({ grant_type: 'password', client_id: 'api-access', username: ADMIN_EMAIL, password: DEV_PASSWORD }),
        });
        const token = ((await tokenResponse.json()) as { access_token: string }).access_token;
        const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) => {
          const response = await app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });
          return { status: response.statusCode, body: response.body ? JSON.parse(response.body) : null };
        };
        return await use(call, ctx.db);
      } finally {
        await app.close();
        await ctx.db.destroy();
      }
    }

    const worker = (crashKind?: string, crashAt?: number) => spawnSync(process.execPath, nodeArgumentsFor('test/datasets/fixtures/crashing-dataset-saga.ts'), {
      env: {
        ...process.env,
        ...(postgres ? { DATABASE_URL: postgres.url } : { DATA_DIR: dataDir! }),
        ...(crashKind ? { CRASH_KIND: crashKind, CRASH_AT: String(crashAt) } : {}),
      },
      encoding: 'utf8',
      timeout: 60_000,
    });

    /** Kills a worker inside each step of `kind` in turn, then lets one finish. */
    function crashThroughEveryStep(sagaKind: string) {
      for (let step = 0; step < stepsOf(sagaKind); step++) {
        const crashed = worker(sagaKind, step);
        assert.equal(crashed.signal, 'SIGKILL', `the worker should die in step ${step} of ${sagaKind}: ${crashed.stderr}`);
      }
      const finished = worker();
      assert.equal(finished.status, 0, finished.stderr);
    }

    const schemaOf = (id: string) => `ds_${id.replaceAll('-', '')}`;
    const schemaCount = async (db: any, id: string) =>
      Number((await sql<{ n: number }>`select count(*)::int as n from information_schema.schemata where schema_name = ${schemaOf(id)}`.execute(db)).rows[0]!.n);

    it('CREATE, then DELETE: each completes after a kill in every step', async () => {
      const id = await withApp(async (call) => {
        const created = await call('POST', '/v1/datasets', { name: 'Crash test', description: 'killed in every step' });
        assert.equal(created.status, 201);
        assert.equal(created.body.pendingSagaType, 'CREATE');
        return created.body.id as string;
      });
      crashThroughEveryStep('dataset.create');
      await withApp(async (call, db) => {
        const dataset = (await call('GET', `/v1/datasets/${id}`)).body;
        assert.deepEqual([dataset.provisioned, dataset.pendingSagaType, dataset.sagaError], [true, null, null]);
        assert.equal(await schemaCount(db, id), 1);
        assert.equal((await call('DELETE', `/v1/datasets/${id}`)).status, 204);
        assert.equal((await call('GET', `/v1/datasets/${id}`)).body.pendingSagaType, 'DELETE');
      });
      crashThroughEveryStep('dataset.delete');
      await withApp(async (call, db) => {
        assert.equal((await call('GET', `/v1/datasets/${id}`)).status, 404);
        assert.equal(await schemaCount(db, id), 0);
        const { rows } = await sql`select id from jobs where subject_id = ${id}`.execute(db);
        assert.deepEqual(rows, []);
      });
    });
  });
}
