import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { PNG } from 'pngjs';
import type { TestApp } from '../helpers/test-app.js';
import { publishDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { DEBIAN_PYTHON, missing, requireMapServer, requirePostgis, requirePythonModule } from '../helpers/requirements.js';
import { REPOSITORY } from '../helpers/repository.js';
import { listeningOwsApp } from './ows-helpers.js';

const run = promisify(execFile);
type Json = Record<string, any>;

const skip = missing(requireMapServer(), await requirePostgis(), requirePythonModule('owslib', 'python3-owslib'));
const skipQgis = skip || missing(requirePythonModule('qgis.core', 'python3-qgis'));
const clients = path.join(REPOSITORY, 'test', 'ows', 'clients');

const site = (x: number, y: number, properties: Json) => ({ type: 'Feature', geometry: { type: 'Point', coordinates: [x, y] }, properties });

/** 20 points on a 5 × 4 grid spanning 8.60–8.70 E, 50.05–50.20 N: the outermost lie on the data's box. */
const GRID = Array.from({ length: 20 }, (_, i) => site(8.60 + (i % 5) * 0.025, 50.05 + Math.floor(i / 5) * 0.05, { label: `p${i}`, rank: i, height: i / 2 }));

/**
 * The places where GIS clients tripped over our WFS and WMS, each read with the client that
 * tripped: OWSLib's schema reader, QGIS's WFS 1.0.0 axis order, and QGIS's "zoom to layer".
 */
describe('GIS clients at the edges: schemas, WFS 1.0.0 axes, zoom to layer (postgres, real MapServer, OWSLib, QGIS)', { skip }, () => {
  let t: TestApp;
  let dataset: PublishedDataset;
  let dataApiUrl: string;
  let workDir: string;
  before(async () => {
    ({ t, dataApiUrl } = await listeningOwsApp({ OWS_EXTENT_REFRESH_MS: '0' }));
    workDir = await mkdtemp(path.join(tmpdir(), 'gis-edges-'));
    dataset = await publishDataset(t, { standard: 'OWS', slug: 'grid', openDataAccess: true });
    const created = await dataset.request('POST', '/collections', { name: 'points', title: 'Grid points', geometryType: 'Point', properties: { label: 'string', rank: 'integer', height: 'number' } });
    assert.equal(created.statusCode, 201, created.body);
    const added = await dataset.request('POST', '/collections/points/items', { type: 'FeatureCollection', features: GRID });
    assert.equal(added.statusCode, 201, added.body);
  });
  after(async () => {
    await t?.close();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  const python = async (script: string, args: Json) => {
    const { stdout } = await run(DEBIAN_PYTHON, [path.join(clients, script), JSON.stringify(args)], {
      env: { PATH: process.env.PATH, HOME: workDir, QT_QPA_PLATFORM: 'offscreen', XDG_RUNTIME_DIR: workDir, PYTHONDONTWRITEBYTECODE: '1' },
      maxBuffer: 16 * 1024 * 1024, timeout: 180_000,
    });
    return JSON.parse(stdout.trim().split('\n').at(-1)!) as Json;
  };
  const url = () => `${dataApiUrl}${dataset.base}`;

  test("OWSLib's get_schema reads every property with its type, in WFS 1.1.0 and 2.0.0", async () => {
    const schemas = await python('owslib_schema.py', { url: url(), token: null, typenames: { '1.1.0': 'grid:points', '2.0.0': 'grid:points' } });
    for (const version of ['1.1.0', '2.0.0']) {
      assert.deepEqual(schemas[version].properties, { fid: 'long', label: 'string', rank: 'long', height: 'double' }, `${version}: ${JSON.stringify(schemas[version])}`);
      assert.equal(schemas[version].geometry, 'Point', version);
      assert.equal(schemas[version].geometry_column, 'geom', version);
    }
  });

  test('QGIS reads WFS 1.0.0 in longitude/latitude, and its box filter finds the point inside', { skip: skipQgis }, async () => {
    const read = await python('qgis_wfs_axes.py', { url: url(), typename: 'points', version: '1.0.0', rect: [8.59, 50.04, 8.61, 50.06] });
    assert.equal(read.valid, true, read.error);
    assert.equal(Object.keys(read.points).length, 20);
    for (const [i, feature] of GRID.entries()) {
      const [x, y] = read.points[`p${i}`];
      assert.ok(Math.abs(x - feature.geometry.coordinates[0]!) < 1e-9 && Math.abs(y - feature.geometry.coordinates[1]!) < 1e-9, `p${i} read as (${x}, ${y})`);
    }
    assert.deepEqual(read.inRect, ['p0']);
  });

  test('"Zoom to layer" in QGIS, then WMS GetMap of the advertised extent, draws all 20 points (EPSG:4326 and EPSG:3857)', { skip: skipQgis }, async () => {
    const outputs = { 'EPSG:4326': path.join(workDir, 'zoom-4326.png'), 'EPSG:3857': path.join(workDir, 'zoom-3857.png') };
    const read = await python('qgis_zoom_wms.py', { url: url(), layer: 'points', size: 256, outputs });
    assert.equal(read.valid, true, read.error);
    for (const [crs, file] of Object.entries(outputs)) {
      assert.equal(read.drawn[crs], true, crs);
      assert.equal(blobs(PNG.sync.read(await readFile(file)), isPointBlue), 20, `${crs}: points drawn on the layer's extent ${JSON.stringify(read.extent)}`);
    }
  });
});

/** The colour of the default point symbol (mapfile.ts): 51 102 204. */
const isPointBlue = ([r, g, b]: number[]) => Math.abs(r! - 51) < 40 && Math.abs(g! - 102) < 40 && Math.abs(b! - 204) < 40;

/** How many separate patches (4-connected) of matching pixels the image holds. */
function blobs(png: PNG, matches: (rgba: number[]) => boolean): number {
  const { width, height, data } = png;
  const seen = new Uint8Array(width * height);
  const hit = (i: number) => matches([data[i * 4]!, data[i * 4 + 1]!, data[i * 4 + 2]!]);
  let count = 0;
  for (let start = 0; start < width * height; start += 1) {
    if (seen[start] || !hit(start)) continue;
    count += 1;
    const stack = [start];
    seen[start] = 1;
    while (stack.length > 0) {
      const i = stack.pop()!;
      const x = i % width;
      for (const next of [x > 0 ? i - 1 : -1, x < width - 1 ? i + 1 : -1, i - width, i + width]) {
        if (next >= 0 && next < width * height && !seen[next] && hit(next)) { seen[next] = 1; stack.push(next); }
      }
    }
  }
  return count;
}
