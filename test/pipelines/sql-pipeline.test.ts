import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { bearer } from '../helpers/factories.js';
import { pipelineDataset, releasedDataSource } from '../helpers/pipelines.js';

/**
 * Issue 17: an SQL source (a PostgreSQL table) fills an STA API through the runtime. The cursor
 * position is committed with the writes, so a restart reads only rows added since; a source
 * without a cursor column re-reads every row at every poll and stores nothing twice.
 */

const MAPPING = {
  fields: {
    'Datastream.name': '"level-" & gauge',
    result: '$number(level)',
    phenomenonTime: 'measured_at',
    FeatureOfInterest: '{"name": gauge, "feature": {"type": "Point", "coordinates": [8.4, 49]}}',
  },
};

describe('SQL sources at run time (postgres)', { skip: process.env['TEST_DATABASE_URL'] ? false : 'needs TEST_DATABASE_URL' }, () => {
  let t: TestApp;
  let source: pg.Client;
  before(async () => {
    t = await buildTestApp('postgres', { PIPELINE_RECONCILE_MS: '200' });
    source = new pg.Client({ connectionString: t.ctx.databaseUrl! });
    await source.connect();
    await source.query(`create schema gauges;
      create table gauges.levels (id bigserial primary key, gauge text not null, level numeric not null, measured_at timestamptz not null)`);
    await source.query(`insert into gauges.levels (gauge, level, measured_at)
      select 'g' || (n % 5), n / 10.0, timestamptz '2026-03-01T00:00:00Z' + make_interval(mins => n) from generate_series(1, 2500) n`);
  });
  after(async () => {
    await source?.end();
    await t?.close();
  });

  const count = async (dataset: { request: (m: 'GET', p: string) => Promise<{ json(): any }> }) =>
    (await dataset.request('GET', '/Observations?$count=true&$top=0')).json()['@iot.count'] as number;

  it('reads in cursor order with the position committed with the writes: a restart reads only what was added', async () => {
    const dataSource = await releasedDataSource(t, 'SQL', {
      driver: 'postgres', dsn: t.ctx.databaseUrl, table: 'gauges.levels', columns: ['id', 'gauge', 'level', 'measured_at'], cursor_column: 'id',
    });
    const dataset = await pipelineDataset(t, { dataSourceIds: [dataSource.id], mapping: MAPPING, schedule: '*/1 * * * * *' });
    const first = await dataset.statusUntil((s) => s?.written === 2500, 'every row to be written', 30_000);
    assert.equal(first!.received, 2500);
    assert.equal(await count(dataset), 2500);

    const restarted = await t.app.inject({ method: 'POST', url: `/v1/datasets/${dataset.datasetId}/pipelines/${dataset.pipelineId}/restart`, headers: bearer(t.adminToken) });
    assert.equal(restarted.statusCode, 202);
    await dataset.statusUntil((s) => s?.lastEventId !== first!.lastEventId && s?.state === 'RUNNING', 'the restarted run');
    await source.query(`insert into gauges.levels (gauge, level, measured_at) values ('g9', 1, '2026-04-01T00:00:00Z'), ('g9', 2, '2026-04-01T00:01:00Z')`);
    const after = await dataset.statusUntil((s) => s?.written === 2, 'the two new rows, and only them, to be written after the restart');
    assert.equal(after!.received, 2, 'the restart resumed from the committed position');
    assert.equal(await count(dataset), 2502);
  });

  it('without a cursor column every poll reads every row, and nothing is stored twice', async () => {
    await source.query('create table gauges.few (gauge text, level numeric, measured_at timestamptz)');
    await source.query(`insert into gauges.few values ('a', 1, '2026-05-01T00:00:00Z'), ('a', 2, '2026-05-01T00:10:00Z'), ('b', 3, '2026-05-01T00:00:00Z')`);
    const dataSource = await releasedDataSource(t, 'SQL', { driver: 'postgres', dsn: t.ctx.databaseUrl, table: 'gauges.few', columns: ['gauge', 'level', 'measured_at'] });
    const dataset = await pipelineDataset(t, { dataSourceIds: [dataSource.id], mapping: MAPPING, schedule: '*/1 * * * * *' });
    const status = await dataset.statusUntil((s) => (s?.received ?? 0) >= 9, 'three polls', 20_000);
    assert.equal(status!.written, 3);
    assert.equal(status!.skipped, status!.received - 3, 'the rows read again are counted as skipped');
    assert.equal(await count(dataset), 3);
  });
});
