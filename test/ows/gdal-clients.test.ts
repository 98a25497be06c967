import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { TestApp } from '../helpers/test-app.js';
import { listeningOwsApp } from './ows-helpers.js';
import { publishDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { missing, requireGdal, requireMapServer, requirePostgis } from '../helpers/requirements.js';

const run = promisify(execFile);
type Json = Record<string, any>;

const skip = missing(requireMapServer(), requireGdal(), await requirePostgis());

const FEATURES = 250;

/** GDAL as a real WFS client: it follows the URLs the capabilities advertise, so the gateway listens where DATA_API_URL says. */
describe('GDAL reads the WFS through the gateway (postgres, real MapServer)', { skip }, () => {
  let t: TestApp;
  let closed: PublishedDataset;
  let open: PublishedDataset;
  let dataApiUrl: string;
  let workDir: string;
  before(async () => {
    ({ t, dataApiUrl } = await listeningOwsApp());
    workDir = await mkdtemp(path.join(tmpdir(), 'gdal-'));
    closed = await publishDataset(t, { standard: 'OWS', slug: 'closed' });
    open = await publishDataset(t, { standard: 'OWS', slug: 'open', openDataAccess: true });
    const features = Array.from({ length: FEATURES }, (_, i) => ({
      type: 'Feature', geometry: { type: 'Point', coordinates: [8 + (i % 25) * 0.01, 50 + Math.floor(i / 25) * 0.01] }, properties: { label: `lamp ${i}`, watts: i },
    }));
    for (const dataset of [closed, open]) {
      assert.equal((await dataset.request('POST', '/collections', { name: 'lamps', geometryType: 'Point', properties: { label: 'string', watts: 'integer' } })).statusCode, 201);
      assert.equal((await dataset.request('POST', '/collections/lamps/items', { type: 'FeatureCollection', features })).statusCode, 201);
    }
  });
  after(async () => {
    await t?.close();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  /**
   * A GDAL command with the token as a bearer header (or none; `basicPassword`: HTTP Basic with it as
   * the password, as for a personal access token), never reading a local GDAL config.
   */
  const gdal = (command: string, args: string[], token: string | null, basicPassword?: string) => run(command, args, {
    env: {
      PATH: process.env.PATH, HOME: workDir, GDAL_HTTP_TIMEOUT: '30', CPL_DEBUG: 'OFF',
      ...(token ? { GDAL_HTTP_HEADERS: `Authorization: Bearer ${token}` } : {}),
      ...(basicPassword ? { GDAL_HTTP_AUTH: 'BASIC', GDAL_HTTP_USERPWD: `gdal:${basicPassword}` } : {}),
    },
    maxBuffer: 32 * 1024 * 1024,
  });

  const wfsSource = (dataset: PublishedDataset) => `WFS:${dataApiUrl}${dataset.base}?SERVICE=WFS&VERSION=2.0.0`;

  test('ogrinfo with a bearer token lists the layer and counts every feature', async () => {
    const { stdout } = await gdal('ogrinfo', ['-ro', '-so', '-al', wfsSource(closed)], t.adminToken);
    assert.match(stdout, /Layer name: closed:lamps/);
    assert.match(stdout, new RegExp(`Feature Count: ${FEATURES}\\b`));
    assert.match(stdout, /label: String/);
    assert.doesNotMatch(stdout, /postgres|5432/);
  });

  test('ogr2ogr copies every feature with its attributes, with a token and anonymously on open data', async () => {
    for (const [dataset, token] of [[closed, t.adminToken], [open, null]] as const) {
      const out = path.join(workDir, `${dataset.slug}.geojson`);
      await gdal('ogr2ogr', ['-f', 'GeoJSON', out, wfsSource(dataset), `${dataset.slug}:lamps`], token);
      const copied = JSON.parse(await readFile(out, 'utf8')) as Json;
      assert.equal(copied.features.length, FEATURES, dataset.slug);
      const labels = new Set(copied.features.map((feature: Json) => feature.properties.label));
      assert.equal(labels.size, FEATURES);
      const lamp7 = copied.features.find((feature: Json) => feature.properties.label === 'lamp 7');
      assert.equal(lamp7.properties.watts, 7);
      assert.deepEqual(lamp7.geometry.coordinates.map((c: number) => Math.round(c * 100) / 100), [8.07, 50]);
    }
  });

  test('ogrinfo with a personal access token as the Basic password reads the closed dataset', async () => {
    const created = await t.app.inject({ method: 'POST', url: '/v1/users/me/tokens', headers: { authorization: `Bearer ${t.adminToken}` }, payload: { name: 'GDAL', datasetIds: [closed.datasetId] } });
    assert.equal(created.statusCode, 201, created.body);
    const { stdout } = await gdal('ogrinfo', ['-ro', '-so', '-al', wfsSource(closed)], null, created.json().token);
    assert.match(stdout, new RegExp(`Feature Count: ${FEATURES}\\b`));
  });

  test('without a token GDAL cannot open the closed dataset', async () => {
    await assert.rejects(gdal('ogrinfo', ['-ro', '-so', '-al', wfsSource(closed)], null), (error: Error & { stderr?: string }) => {
      assert.match(String(error.stderr), /401|Unauthorized|HTTP error/i);
      return true;
    });
  });
});
