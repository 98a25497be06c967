import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { freshPostgresDatabase } from '../helpers/test-app.js';
import { missing, requirePostgis } from '../helpers/requirements.js';
import { enablePostgis } from '../../src/db/postgis.js';
import type { Database } from '../../src/db/client.js';

// Replicas started together on a new database all create PostGIS at once. `create extension if not
// exists` lets only one of them succeed; the others failed on the catalogue's unique index and
// served every geospatial filter with 400 "needs PostGIS" for as long as they ran.
const postgis = await requirePostgis();

describe('PostGIS at start (postgres)', { skip: missing(process.env['TEST_DATABASE_URL'] ? null : 'needs TEST_DATABASE_URL', postgis) }, () => {
  test('processes enabling PostGIS at the same moment on a new database all find it enabled', async () => {
    for (let round = 0; round < 3; round++) {
      const database = await freshPostgresDatabase();
      const handles = Array.from({ length: 4 }, () => new Kysely<any>({
        dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: database.url, max: 1 }) }),
      }) as unknown as Database);
      const warnings: string[] = [];
      const log = { warn: (details: { err?: { message?: string } }) => warnings.push(details.err?.message ?? ''), info: () => {}, error: () => {}, debug: () => {} };
      try {
        // Every handle connected first, so that the four creates start as close together as they can.
        await Promise.all(handles.map((db) => db.selectNoFrom((eb) => eb.val(1).as('one')).execute()));
        const enabled = await Promise.all(handles.map((db) => enablePostgis(db, true, log)));
        assert.deepEqual(enabled, [true, true, true, true], `round ${round}: ${warnings.join(' | ')}`);
        assert.deepEqual(warnings, []);
      } finally {
        await Promise.all(handles.map((db) => db.destroy()));
        await database.drop();
      }
    }
  });
});
