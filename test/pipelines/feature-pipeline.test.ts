import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { pipelineDataset, releasedDataSource } from '../helpers/pipelines.js';
import { missing, requirePostgis } from '../helpers/requirements.js';

/**
 * Issue 17: a JSON HTTP endpoint fills an OWS API's feature collection. Records that name a
 * collection not created yet are rejected (and kept); once it exists, the next poll writes them,
 * upserted by id, so a repeated poll changes nothing.
 */

const postgis = await requirePostgis();

describe('HTTP source into a feature collection (postgres)', { skip: missing(postgis) }, () => {
  let t: TestApp;
  let server: http.Server;
  let url = '';
  const stops = [
    { id: 1, name: 'Marktplatz', lon: 8.4037, lat: 49.0094 },
    { id: 2, name: 'Europaplatz', lon: 8.3946, lat: 49.0096 },
    { id: 3, name: 'Hauptbahnhof', lon: 8.4017, lat: 48.9937 },
  ];
  before(async () => {
    t = await buildTestApp('postgres', { PIPELINE_RECONCILE_MS: '200' });
    server = http.createServer((_request, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ stops }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/stops`;
  });
  after(async () => {
    await t?.close();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('rejects records of a missing collection, then writes them once it exists; repeated polls store nothing twice', async () => {
    const source = await releasedDataSource(t, 'HTTP', { url, interval: '1s', records_pointer: '/stops' });
    const dataset = await pipelineDataset(t, {
      standard: 'OWS', dataSourceIds: [source.id],
      mapping: { fields: { collection: '"stops"', id: 'id', geometry: '{"type": "Point", "coordinates": [lon, lat]}', 'properties.name': 'name' } },
    });
    await dataset.statusUntil((s) => (s?.rejected ?? 0) >= 3, 'records for a collection that does not exist yet to be rejected');
    const [rejection] = await dataset.rejections();
    assert.equal(rejection.field, 'collection');

    const created = await dataset.request('POST', '/collections', { name: 'stops', geometryType: 'Point', properties: { name: 'string' } });
    assert.equal(created.statusCode, 201, created.body);
    await dataset.statusUntil((s) => s?.written === 3, 'the three stops to be written');
    const before = await dataset.statusUntil((s) => (s?.skipped ?? 0) >= 3, 'a repeated poll (upserts that change nothing)');
    assert.equal(before!.written, 3);

    const items = await dataset.request('GET', '/collections/stops/items');
    assert.equal(items.statusCode, 200, items.body);
    const features = items.json().features as Array<{ id: number; properties: { name: string }; geometry: { coordinates: number[] } }>;
    assert.deepEqual(features.map((f) => [f.id, f.properties.name, f.geometry.coordinates]).sort((a, b) => (a[0] as number) - (b[0] as number)),
      stops.map((s) => [s.id, s.name, [s.lon, s.lat]]));
  });
});
