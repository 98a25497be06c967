import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { bearer } from '../helpers/factories.js';
import { publishDataset } from '../helpers/sta-dataset.js';
import { DEBIAN_PYTHON, missing, requirePythonModule } from '../helpers/requirements.js';
import { REPOSITORY } from '../helpers/repository.js';
import { freePort } from '../faults/harness.js';

const run = promisify(execFile);
const HARVEST = path.join(REPOSITORY, 'test', 'catalogue', 'clients', 'harvest.py');

/**
 * A harvester as ckanext-dcat (CKAN, which GovData and many portals run) is one: rdflib reads the
 * catalogue over HTTP and follows hydra:nextPage. Every released open dataset is harvested once, in
 * each of the three formats, and the harvest ends on the last page.
 */
describe('a harvester (rdflib, as ckanext-dcat) follows the catalogue\'s pages', { skip: missing(requirePythonModule('rdflib', 'python3-rdflib')) }, () => {
  let t: TestApp;
  let dataApiUrl: string;
  const ids: string[] = [];
  before(async () => {
    const port = await freePort();
    dataApiUrl = `http://127.0.0.1:${port}`;
    t = await buildTestApp('pglite', { DATA_API_URL: dataApiUrl, CATALOGUE_PAGE_SIZE: '3' });
    await (await t.dataApi()).listen({ host: '127.0.0.1', port });
    for (let i = 0; i < 7; i++) ids.push((await publishDataset(t, { standard: 'STA', openDataAccess: true })).datasetId);
    // Released but closed: never harvested.
    await publishDataset(t, { standard: 'STA', openDataAccess: false });
    const titled = await t.app.inject({ method: 'PATCH', url: `/v1/datasets/${ids[0]}/released/meta`, headers: bearer(t.adminToken), payload: { name: 'Parken – Belegung "live" <jetzt>' } });
    assert.equal(titled.statusCode, 200, titled.body);
  });
  after(() => t?.close());

  for (const [format, suffix] of [['turtle', ''], ['json-ld', '.jsonld'], ['xml', '.rdf']] as const) {
    it(`harvests every open dataset once in ${format}, page by page, and stops at the last`, async () => {
      const { stdout } = await run(DEBIAN_PYTHON, [HARVEST, JSON.stringify({ url: `${dataApiUrl}/v1/catalogue${suffix}`, format })], { timeout: 120_000, env: { PATH: process.env.PATH, PYTHONDONTWRITEBYTECODE: '1' } });
      const harvest = JSON.parse(stdout.trim().split('\n').at(-1)!);
      assert.equal(harvest.stopped, 'no next page');
      assert.deepEqual(harvest.pages.map((page: { datasets: string[] }) => page.datasets.length), [3, 3, 1]);
      const harvested = harvest.pages.flatMap((page: { datasets: string[] }) => page.datasets);
      assert.deepEqual([...harvested].sort(), ids.map((id) => `${dataApiUrl}/v1/datasets/${id}`).sort());
      const titles = Object.assign({}, ...harvest.pages.map((page: { titles: Record<string, string> }) => page.titles));
      assert.equal(titles[`${dataApiUrl}/v1/datasets/${ids[0]}`], 'Parken – Belegung "live" <jetzt>');
    });
  }
});
