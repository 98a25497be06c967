import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { expectFieldError, expectProblem, grant, uniqueEmail } from '../helpers/factories.js';
import { publishDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { eventually } from '../faults/harness.js';
import { decodePng, isRed, ogc, plantTrees, squareStyle } from './ows-helpers.js';
import { missing, requireMapServer, requirePostgis } from '../helpers/requirements.js';

// Issue 16, finding 5: one reader's concurrent large GetMaps held every dataset's maps. Map work
// is now shared per caller (at most OWS_MAX_PER_CALLER running, the rest in the caller's own line,
// lines served round-robin); a request waiting longer than OWS_QUEUE_TIMEOUT_MS answers 503 with
// Retry-After; WIDTH/HEIGHT above OWS_MAX_IMAGE_SIZE are refused before MapServer.
const skip = missing(requireMapServer(), await requirePostgis());

const map = (size: number, layer = 'dots') => ({
  SERVICE: 'WMS', VERSION: '1.3.0', REQUEST: 'GetMap', LAYERS: layer, STYLES: '', CRS: 'EPSG:4326', BBOX: '-90,-180,90,180',
  WIDTH: String(size), HEIGHT: String(size), FORMAT: 'image/png',
});

/** A collection of 10,000 points spread over the world: what makes a 4096² map slow to draw. */
async function plantDots(dataset: PublishedDataset): Promise<void> {
  const created = await dataset.request('POST', '/collections', { name: 'dots', geometryType: 'Point', properties: { n: 'integer' } });
  assert.equal(created.statusCode, 201, created.body);
  const features = Array.from({ length: 10_000 }, (_, n) => ({
    type: 'Feature', geometry: { type: 'Point', coordinates: [-179 + ((n * 37) % 358), -89 + ((n * 53) % 178)] }, properties: { n },
  }));
  const added = await dataset.request('POST', '/collections/dots/items', { type: 'FeatureCollection', features });
  assert.equal(added.statusCode, 201, added.body.slice(0, 300));
}

describe('OWS: fair map work between callers (real MapServer)', { skip }, () => {
  let t: TestApp;
  let heavyData: PublishedDataset;
  let lightData: PublishedDataset;
  let heavy: string;
  before(async () => {
    // The contract's defaults: 2 running per caller, 10 s in line, 4096 pixels; two MapServer workers.
    t = await buildTestApp('postgres', { OWS_WORKERS: '2' });
    assert.equal(t.ctx.config.ows.maxPerCaller, 2);
    heavyData = await publishDataset(t, { standard: 'OWS', slug: 'heavy' });
    lightData = await publishDataset(t, { standard: 'OWS', slug: 'light', openDataAccess: true, styles: [{ name: 'red', sldContent: squareStyle('trees', '#ff0000') }] });
    await plantDots(heavyData);
    await plantTrees(lightData);
    heavy = await grant(t, uniqueEmail('heavy'), ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: heavyData.datasetId });
    // Both maps written and MapServer started before the race.
    assert.equal((await ogc(heavyData, map(64), { authorization: `Bearer ${heavy}` })).statusCode, 200);
    assert.equal((await ogc(lightData, map(64, 'trees'), { authorization: null })).statusCode, 200);
  });
  after(() => t?.close());

  test('a reader\'s ten 4096² maps do not hold an anonymous caller\'s small map of another dataset behind them', async () => {
    let heavyDone = 0;
    const heavyRuns = Array.from({ length: 10 }, () => ogc(heavyData, map(4096), { authorization: `Bearer ${heavy}` }).then((response) => {
      heavyDone += 1;
      return response;
    }));
    // The heavy caller's backlog is in its line (two of its requests run) before the light one comes.
    await eventually('the heavy backlog to queue', 20_000, () => (t.ctx.ows.waitingRequests() >= 6 ? true : undefined));
    const light = await ogc(lightData, { ...map(64, 'trees'), BBOX: '50.0,8.55,50.25,8.75' }, { authorization: null });
    const doneWhenLightAnswered = heavyDone;
    assert.ok(decodePng(light).count(isRed) > 0);
    // At most the heavy requests running when it came finished first (two; a FIFO would make it wait for 6 or more).
    assert.ok(doneWhenLightAnswered <= 3, `${doneWhenLightAnswered} heavy maps were drawn before the light one`);
    const answers = await Promise.all(heavyRuns);
    // Every heavy one is answered: drawn, or (if its line was longer than the queue timeout) 503 with Retry-After.
    for (const response of answers) {
      if (response.statusCode === 200) continue;
      expectProblem(response, 503, 'SERVICE_UNAVAILABLE');
      assert.ok(Number(response.headers['retry-after']) >= 1);
    }
    assert.ok(answers.filter((response) => response.statusCode === 200).length >= 2);
  });

  test('WIDTH or HEIGHT above OWS_MAX_IMAGE_SIZE (4096), or not a whole number, answers 400 VALIDATION_FAILED naming it, before MapServer', async () => {
    const auth = { authorization: `Bearer ${heavy}` };
    for (const [params, field] of [
      [{ ...map(64), WIDTH: '4097' }, 'WIDTH'],
      [{ ...map(64), HEIGHT: '100000' }, 'HEIGHT'],
      [{ ...map(64), WIDTH: '4097abc' }, 'WIDTH'],
      [{ ...map(64), HEIGHT: '-1' }, 'HEIGHT'],
      [{ ...map(64), WIDTH: '0' }, 'WIDTH'],
      [{ SERVICE: 'WMS', VERSION: '1.3.0', REQUEST: 'GetLegendGraphic', LAYER: 'dots', FORMAT: 'image/png', WIDTH: '5000' }, 'WIDTH'],
    ] as const) {
      const problem = expectFieldError(await ogc(heavyData, params, auth), field);
      assert.match(problem.detail, /4096/);
      assert.match(problem.detail, /OWS_MAX_IMAGE_SIZE/);
    }
    // A name hidden in an encoded pair is read as MapServer reads it, and limited the same.
    expectFieldError(await heavyData.request('GET', `?${new URLSearchParams({ ...map(64) })}&${encodeURIComponent('WIDTH=99999')}`.replace('WIDTH=64&', ''), undefined, auth), 'WIDTH');
    assert.equal((await ogc(heavyData, map(4096), auth)).statusCode, 200);
  });
});

describe('OWS: a request that waited OWS_QUEUE_TIMEOUT_MS answers 503 with Retry-After', { skip }, () => {
  let t: TestApp;
  let data: PublishedDataset;
  before(async () => {
    t = await buildTestApp('postgres', { OWS_WORKERS: '1', OWS_MAX_PER_CALLER: '1', OWS_QUEUE_TIMEOUT_MS: '100' });
    data = await publishDataset(t, { standard: 'OWS', slug: 'slow', openDataAccess: true });
    await plantDots(data);
    assert.equal((await ogc(data, map(64))).statusCode, 200);
  });
  after(() => t?.close());

  test('one caller\'s 4096² maps beyond its one running wait in its line and time out; the one running is drawn; the line empties', async () => {
    const answers = await Promise.all(Array.from({ length: 3 }, () => ogc(data, map(4096))));
    assert.ok(answers.some((response) => response.statusCode === 200), `statuses ${answers.map((a) => a.statusCode)}`);
    const timedOut = answers.filter((response) => response.statusCode === 503);
    assert.ok(timedOut.length >= 1, `statuses ${answers.map((a) => a.statusCode)}`);
    for (const response of timedOut) {
      const problem = expectProblem(response, 503, 'SERVICE_UNAVAILABLE');
      assert.match(problem.detail, /waited 100 ms/);
      assert.equal(response.headers['retry-after'], '1');
    }
    assert.equal(t.ctx.ows.waitingRequests(), 0);
    assert.equal((await ogc(data, map(64))).statusCode, 200);
  });
});
