import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { PNG } from 'pngjs';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { freePort } from '../faults/harness.js';
import { publishDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { missing, requireMapServer, requirePostgis } from '../helpers/requirements.js';
import { isRed, squareStyle, TREES } from './ows-helpers.js';

const run = promisify(execFile);
const DRAW_WMS = fileURLToPath(new URL('./clients/qgis-draw-wms.py', import.meta.url));
const skip = missing(requireMapServer(), await requirePostgis());

describe('QGIS draws a WMS layer through the gateway (postgres, real MapServer, QGIS headless)', { skip }, () => {
  let t: TestApp;
  let open: PublishedDataset;
  let dataApiUrl: string;
  let workDir: string;
  before(async () => {
    const port = await freePort();
    dataApiUrl = `http://127.0.0.1:${port}`;
    t = await buildTestApp('postgres', { DATA_API_URL: dataApiUrl });
    await (await t.dataApi()).listen({ host: '127.0.0.1', port });
    workDir = await mkdtemp(path.join(tmpdir(), 'qgis-'));
    open = await publishDataset(t, { standard: 'OWS', slug: 'open', openDataAccess: true, styles: [{ name: 'red', sldContent: squareStyle('trees', '#ff0000', 16) }] });
    assert.equal((await open.request('POST', '/collections', { name: 'trees', geometryType: 'Point', properties: { name: 'string' } })).statusCode, 201);
    assert.equal((await open.request('POST', '/collections/trees/items', { type: 'FeatureCollection', features: TREES.map((f) => ({ ...f, properties: { name: f.properties.name } })) })).statusCode, 201);
  });
  after(async () => {
    await t?.close();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  async function draw(dataset: PublishedDataset, credentials: [string, string] | []) {
    const output = path.join(workDir, `${dataset.slug}-${Date.now()}.png`);
    const { stdout } = await run('/usr/bin/python3', [DRAW_WMS, `${dataApiUrl}${dataset.base}`, 'trees', '8.5,50,8.8,50.3', output, ...credentials], {
      env: { PATH: process.env.PATH, HOME: workDir, QT_QPA_PLATFORM: 'offscreen', XDG_RUNTIME_DIR: workDir },
      maxBuffer: 8 * 1024 * 1024, timeout: 120_000,
    });
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!);
    let red = 0;
    if (result.rendered) {
      const png = PNG.sync.read(await readFile(output));
      for (let i = 0; i < png.data.length; i += 4) if (isRed([...png.data.subarray(i, i + 4)])) red += 1;
    }
    return { ...result, red };
  }

  test('an open layer is drawn anonymously', async () => {
    const drawn = await draw(open, []);
    assert.equal(drawn.valid, true, drawn.error);
    assert.ok(drawn.red > 100, JSON.stringify(drawn));
  });
});
