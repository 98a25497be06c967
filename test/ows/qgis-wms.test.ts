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
import { bearer } from '../helpers/factories.js';
import { isRed, listeningOwsApp, squareStyle, TREES } from './ows-helpers.js';
import { REPOSITORY } from '../helpers/repository.js';

const run = promisify(execFile);
const DRAW_WMS = path.join(REPOSITORY, 'test', 'ows', 'clients', 'qgis_draw_wms.py');
const skip = missing(requireMapServer(), await requirePostgis(), requirePythonModule('qgis.core', 'python3-qgis'));

/**
 * QGIS 3.22 (Debian's, headless) as the desktop GIS user runs it: its WMS provider can send only
 * HTTP Basic credentials, so a protected layer is drawn with a personal access token as the password.
 */
describe('QGIS draws a WMS layer through the gateway (postgres, real MapServer, QGIS headless)', { skip }, () => {
  let t: TestApp;
  let open: PublishedDataset;
  let closed: PublishedDataset;
  let dataApiUrl: string;
  let workDir: string;
  before(async () => {
    ({ t, dataApiUrl } = await listeningOwsApp());
    workDir = await mkdtemp(path.join(tmpdir(), 'qgis-'));
    const styles = [{ name: 'red', sldContent: squareStyle('trees', '#ff0000', 16) }];
    open = await publishDataset(t, { standard: 'OWS', slug: 'open', openDataAccess: true, styles });
    closed = await publishDataset(t, { standard: 'OWS', slug: 'closed', styles });
    // Three trees span the data's box, and one stands in its centre.
    for (const dataset of [open, closed]) {
      assert.equal((await dataset.request('POST', '/collections', { name: 'trees', geometryType: 'Point', properties: { name: 'string' } })).statusCode, 201);
      assert.equal((await dataset.request('POST', '/collections/trees/items', { type: 'FeatureCollection', features: [...TREES.map((f) => ({ ...f, properties: { name: f.properties.name } })), { type: 'Feature', geometry: { type: 'Point', coordinates: [8.65, 50.125] }, properties: { name: 'centre' } }] })).statusCode, 201);
    }
  });

  async function personalAccessToken(payload: Record<string, unknown> = {}): Promise<{ id: string; token: string }> {
    const created = await t.app.inject({ method: 'POST', url: '/v1/users/me/tokens', headers: bearer(t.adminToken), payload: { name: 'QGIS', ...payload } });
    assert.equal(created.statusCode, 201, created.body);
    return created.json();
  }
  after(async () => {
    await t?.close();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  /**
   * One QGIS run drawing `dataset`'s trees. `profile` is the QGIS home: runs that share one share
   * QGIS's disk cache of network answers, as one desktop user's QGIS does from session to session.
   */
  async function draw(dataset: PublishedDataset, credentials: [string, string] | [], profile: string) {
    const output = path.join(workDir, `${dataset.slug}-${Date.now()}.png`);
    const { stdout } = await run(DEBIAN_PYTHON, [DRAW_WMS, `${dataApiUrl}${dataset.base}`, 'trees', '8.5,50,8.8,50.3', output, ...credentials], {
      env: { PATH: process.env.PATH, HOME: profile, QT_QPA_PLATFORM: 'offscreen', XDG_RUNTIME_DIR: profile },
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
    const drawn = await draw(open, [], await mkdtemp(path.join(workDir, 'profile-')));
    assert.equal(drawn.valid, true, drawn.error);
    assert.ok(drawn.red > 100, JSON.stringify(drawn));
  });

  test('a protected layer is drawn with a personal access token as the Basic password, and not without one', async () => {
    const pat = await personalAccessToken();
    // One profile throughout: QGIS's disk cache must not serve the protected answers to the later
    // runs without a valid token (the contract's caching rule: private, no-store).
    const profile = await mkdtemp(path.join(workDir, 'profile-'));
    const drawn = await draw(closed, ['qgis-user', pat.token], profile);
    assert.equal(drawn.valid, true, drawn.error);
    assert.ok(drawn.red > 100, JSON.stringify(drawn));

    const anonymous = await draw(closed, [], profile);
    assert.equal(anonymous.valid, false, 'QGIS must not load the protected layer without credentials');
    assert.equal(anonymous.red, 0);

    // Deleted: the same connection settings load nothing any more.
    const deleted = await t.app.inject({ method: 'DELETE', url: `/v1/users/me/tokens/${pat.id}`, headers: bearer(t.adminToken) });
    assert.equal(deleted.statusCode, 204);
    const afterDeletion = await draw(closed, ['qgis-user', pat.token], profile);
    assert.equal(afterDeletion.valid, false, 'a deleted token must not load the layer');
  });

  test('a token narrowed to another dataset does not load the layer', async () => {
    const pat = await personalAccessToken({ datasetIds: [open.datasetId] });
    const drawn = await draw(closed, ['qgis-user', pat.token], await mkdtemp(path.join(workDir, 'profile-')));
    assert.equal(drawn.valid, false);
    assert.equal(drawn.red, 0);
  });
});
