import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectFieldError } from '../helpers/factories.js';
import { datasetParts } from './dataset-parts.fixture.js';

/**
 * Attack: an SLD whose document type declares entities (external, parameter, nested) sent to the
 * management API's styles answered 500. Every one is a 400 naming sldContent, nothing is fetched,
 * and the dataset's styles are unchanged.
 */
const body = (layer: string) => `<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld"><NamedLayer><Name>${layer}</Name></NamedLayer></StyledLayerDescriptor>`;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`styles: SLD documents with declarations (${kind})`, () => {
    let t: TestApp;
    let canary: http.Server;
    let canaryUrl: string;
    const hits: string[] = [];
    before(async () => {
      t = await buildTestApp(kind);
      canary = http.createServer((request, response) => {
        hits.push(`${request.method} ${request.url}`);
        response.end('<!ENTITY x "y">');
      });
      canary.on('connection', () => hits.push('connection'));
      await new Promise<void>((resolve) => canary.listen(0, '127.0.0.1', resolve));
      canaryUrl = `http://127.0.0.1:${(canary.address() as AddressInfo).port}`;
    });
    after(async () => {
      await t?.close();
      await new Promise((resolve) => canary?.close(resolve));
    });
    const { call, ok, newDataset } = datasetParts(() => t);

    it('an external entity, a parameter entity, an internal entity and a bare DOCTYPE each answer 400 naming sldContent', async () => {
      const dataset = await newDataset();
      const url = `/v1/datasets/${dataset.id}/styles`;
      const documents = [
        `<?xml version="1.0"?>\n<!DOCTYPE StyledLayerDescriptor [<!ENTITY xxe SYSTEM "${canaryUrl}/external">]>\n${body('&xxe;')}`,
        `<!DOCTYPE StyledLayerDescriptor [<!ENTITY % remote SYSTEM "${canaryUrl}/parameter"> %remote;]>${body('roads')}`,
        `<!DOCTYPE StyledLayerDescriptor [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>${body('&b;')}`,
        `<!DOCTYPE StyledLayerDescriptor SYSTEM "${canaryUrl}/dtd">${body('roads')}`,
        `<!DOCTYPE StyledLayerDescriptor>${body('roads')}`,
      ];
      for (const sldContent of documents) {
        const response = await call('POST', url, { name: 'evil', sldContent });
        const problem = expectFieldError(response, 'sldContent');
        assert.match(problem.detail, /DOCTYPE|declaration/i, sldContent);
      }
      assert.deepEqual((await ok('GET', url)).content, []);
      assert.deepEqual(hits, [], 'nothing was fetched');
      // A plain SLD is still taken.
      await ok('POST', url, { name: 'plain', sldContent: body('roads') });
    });
  });
}
