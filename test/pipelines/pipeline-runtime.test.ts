import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { bearer, expectProblem } from '../helpers/factories.js';
import { pipelineDataset, release, releasedDataSource, unrelease } from '../helpers/pipelines.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Issue 17: a released dataset's pipeline runs. An HTTP source polled every second fills an STA
 * API: records mapped with JSONata, a record the filter leaves out skipped, a record its target
 * refuses kept in the rejections, a repeated poll storing nothing twice; restart, unrelease and
 * release stop and start it, and the status follows.
 */

type Json = Record<string, any>;

const MAPPING = {
  fields: {
    'Datastream.name': '"air-" & station',
    'Datastream.Thing.name': 'station',
    'Datastream.unitOfMeasurement': '{"name": "degree Celsius", "symbol": "°C", "definition": "ucum:Cel"}',
    result: 'value',
    phenomenonTime: 'time',
    FeatureOfInterest: '{"name": station, "feature": {"type": "Point", "coordinates": [lon, lat]}}',
    'parameters.source': '$dataSource.name',
  },
  filter: '$exists(value)',
};

for (const kind of databaseKinds(import.meta.url)) {
  describe(`pipelines at run time (${kind})`, () => {
    let t: TestApp;
    let server: http.Server;
    let url = '';
    let polls = 0;
    /** Polls per path: each test's source has a path of its own. */
    const pollsOf = new Map<string, number>();
    let records: Json[] = [];
    before(async () => {
      t = await buildTestApp(kind, { PIPELINE_RECONCILE_MS: '200' });
      server = http.createServer((request, response) => {
        polls++;
        pollsOf.set(request.url!, (pollsOf.get(request.url!) ?? 0) + 1);
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify({ data: records }));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/feed`;
    });
    after(async () => {
      await t.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });

    it('fills an STA API from an HTTP source: written, skipped, rejected, and nothing twice over repeated polls', async () => {
      records = [
        { station: 'north', time: '2026-01-01T10:00:00Z', value: 3.5, lon: 8.4, lat: 49 },
        { station: 'north', time: '2026-01-01T10:05:00Z', value: 3.75, lon: 8.4, lat: 49 },
        { station: 'south', time: '2026-01-01T10:00:00Z', lon: 8.5, lat: 48.9 }, // no value: the filter skips it
        { station: 'south', time: 'yesterday', value: 1, lon: 8.5, lat: 48.9 }, // not a time: rejected
      ];
      const source = await releasedDataSource(t, 'HTTP', { url, interval: '1s', records_pointer: '/data' });
      const dataset = await pipelineDataset(t, { dataSourceIds: [source.id], mapping: MAPPING });

      const running = await dataset.statusUntil((s) => s?.state === 'RUNNING' && s.written === 2 && s.rejected === 1, 'the first poll to be written');
      assert.equal(running!.skipped >= 1, true);
      assert.equal(running!.received >= 4, true);
      assert.equal(running!.source, 'CONNECTOR');

      const observations = await dataset.request('GET', '/Observations?$orderby=phenomenonTime&$expand=Datastream($select=name,unitOfMeasurement)');
      assert.equal(observations.statusCode, 200, observations.body);
      assert.deepEqual(observations.json().value.map((o: Json) => [o.result, o.phenomenonTime, o.Datastream.name, o.parameters]), [
        [3.5, '2026-01-01T10:00:00.000Z', 'air-north', { source: source.name }],
        [3.75, '2026-01-01T10:05:00.000Z', 'air-north', { source: source.name }],
      ]);
      assert.equal(observations.json().value[0].Datastream.unitOfMeasurement.symbol, '°C');

      const [rejection, ...more] = await dataset.rejections();
      assert.equal(more.length, 0, 'one rejection when the status first counts one');
      assert.equal(rejection.field, 'phenomenonTime');
      assert.equal(rejection.dataSourceId, source.id);
      assert.deepEqual(rejection.record, records[3]);

      // Three more polls of the same answer store nothing again.
      const seen = polls;
      await waitFor(async () => (polls >= seen + 3 ? true : undefined), { what: 'three more polls' });
      await dataset.statusUntil((s) => (s?.received ?? 0) >= 16, 'the repeated polls to be counted');
      const again = await dataset.request('GET', '/Observations?$count=true&$top=0');
      assert.equal(again.json()['@iot.count'], 2);

      // The process's metrics count the records of the pipelines it runs.
      const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
      assert.match(metrics.body, new RegExp(`pipeline_records_total\\{pipeline="${dataset.pipelineId}",outcome="written"\\} 2\\n`));
      assert.match(metrics.body, new RegExp(`pipeline_records_total\\{pipeline="${dataset.pipelineId}",outcome="rejected"\\} [1-9]`));
      assert.match(metrics.body, new RegExp(`pipeline_last_record_age_seconds\\{pipeline="${dataset.pipelineId}"\\} \\d`));
    });

    it('a running pipeline has every outcome series in /metrics from its start, at 0 before its first record', async () => {
      records = []; // polled, but nothing to count yet
      const source = await releasedDataSource(t, 'HTTP', { url: `${url}/silent`, interval: '1h', records_pointer: '/data' });
      const dataset = await pipelineDataset(t, { dataSourceIds: [source.id], mapping: MAPPING });
      await dataset.statusUntil((s) => s?.state === 'RUNNING', 'the pipeline to run');
      const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      for (const outcome of ['received', 'written', 'rejected', 'skipped']) {
        assert.match(metrics, new RegExp(`pipeline_records_total\\{pipeline="${dataset.pipelineId}",outcome="${outcome}"\\} 0\\n`));
      }
    });

    it('restart starts it again with fresh counters; unrelease stops it (status null, no more polls), release starts it again', async () => {
      records = [{ station: 'east', time: '2026-02-01T00:00:00Z', value: 7, lon: 8.6, lat: 49.1 }];
      const source = await releasedDataSource(t, 'HTTP', { url: `${url}/east`, interval: '1s', records_pointer: '/data' });
      const dataset = await pipelineDataset(t, { dataSourceIds: [source.id], mapping: MAPPING });
      const first = await dataset.statusUntil((s) => s?.state === 'RUNNING' && s.received >= 2, 'two polls');
      const restartUrl = `/v1/datasets/${dataset.datasetId}/pipelines/${dataset.pipelineId}/restart`;

      const restarted = await t.app.inject({ method: 'POST', url: restartUrl, headers: bearer(t.adminToken) });
      assert.equal(restarted.statusCode, 202, restarted.body);
      assert.equal(restarted.json().id, dataset.pipelineId);
      await dataset.statusUntil((s) => s !== null && s.lastEventId !== first!.lastEventId && s.state === 'RUNNING' && s.received < first!.received + 2 && s.received >= 1,
        'the restarted run to count from zero');

      await unrelease(t, dataset.datasetId);
      assert.equal((await dataset.pipeline()).runtimeStatus, null);
      expectProblem(await t.app.inject({ method: 'POST', url: restartUrl, headers: bearer(t.adminToken) }), 409, 'INVALID_STATE');
      // The runtime stops it at its next pass; after that, no poll reaches the source.
      await new Promise((resolve) => setTimeout(resolve, 600));
      const quiet = pollsOf.get('/feed/east');
      await new Promise((resolve) => setTimeout(resolve, 2500));
      assert.equal(pollsOf.get('/feed/east'), quiet, 'the pipeline of an unreleased dataset does not poll');
      assert.equal((await dataset.pipeline()).runtimeStatus, null);

      await release(t, dataset.datasetId);
      await dataset.statusUntil((s) => s?.state === 'RUNNING' && s.received >= 1, 'the pipeline to run again after release');
      const observations = await dataset.request('GET', '/Observations?$count=true&$top=0');
      assert.equal(observations.json()['@iot.count'], 1, 'the record polled in every run is stored once');
      assert.equal(t.ctx.pipelines.running.includes(dataset.pipelineId), true);
    });
  });
}
