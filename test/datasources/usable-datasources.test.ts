import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { requestsOf } from '../helpers/requests.js';
import { createDatapool, expectFieldError, expectProblem, grant, uniqueEmail, uniqueName } from '../helpers/factories.js';

/** GET /v1/datasets/{dataSetId}/usable-datasources: what a pipeline of that dataset may read. */

type Json = Record<string, any>;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`usable data sources of a dataset (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(() => t.close());

    const { call, ok } = requestsOf(() => t);

    /** An AVAILABLE version of an AVAILABLE data structure, which a release of a data source needs. */
    let versionId: string;
    const availableVersionId = async () => {
      if (versionId) return versionId;
      const structure = await ok('POST', '/v1/datastructures', { name: uniqueName('Structure') });
      const version = await ok('POST', `/v1/datastructures/${structure.id}/versions`, { dataStructureVersionSource: 'OWN', model: { type: 'object' } });
      await ok('POST', `/v1/datastructures/${structure.id}/versions/${version.id}/release`);
      await ok('POST', `/v1/datastructures/${structure.id}/release`);
      versionId = version.id;
      return versionId;
    };

    /** A complete MQTT data source named `${prefix}-${label}` with that scope, released unless `draft`. */
    const source = async (prefix: string, label: string, datapoolScope: Json, draft = false): Promise<string> => {
      const created = await ok('POST', '/v1/datasources', {
        name: `${prefix}-${label}`, connectorType: 'MQTT', datapoolScope, dataStructureVersionId: await availableVersionId(),
        configuration: { urls: ['tcp://broker:1883'], topics: [`city/${label}`], qos: 1 },
      });
      if (!draft) assert.equal((await ok('POST', `/v1/datasources/${created.id}/release`)).dataSourceStatus, 'AVAILABLE');
      return created.id;
    };

    const dataset = async (datapoolId?: string): Promise<string> =>
      (await ok('POST', '/v1/datasets', { name: uniqueName('Dataset'), description: 'pipelines read data sources', ...(datapoolId ? { datapoolId } : {}) })).id;

    /**
     * Two datapools A and B, a dataset in A and one in none, and a data source of each kind under
     * one name prefix (other tests' data sources never match it).
     */
    const world = async () => {
      const prefix = uniqueName('usable');
      const [poolA, poolB] = [await createDatapool(t), await createDatapool(t)];
      const ids = {
        all: await source(prefix, 'all', { type: 'ALL' }),
        inA: await source(prefix, 'in-a', { type: 'SPECIFIC', datapoolIds: [poolA.id] }),
        inBAndA: await source(prefix, 'in-b-and-a', { type: 'SPECIFIC', datapoolIds: [poolB.id, poolA.id] }),
        inB: await source(prefix, 'in-b', { type: 'SPECIFIC', datapoolIds: [poolB.id] }),
        none: await source(prefix, 'none', { type: 'NONE' }),
        allDraft: await source(prefix, 'all-draft', { type: 'ALL' }, true),
        inADraft: await source(prefix, 'in-a-draft', { type: 'SPECIFIC', datapoolIds: [poolA.id] }, true),
      };
      return { prefix, poolA, poolB, ids, inA: await dataset(poolA.id), inNoPool: await dataset() };
    };

    const usable = async (datasetId: string, query: string, token = t.adminToken) => {
      const response = await call('GET', `/v1/datasets/${datasetId}/usable-datasources?${query}`, undefined, token);
      assert.equal(response.statusCode, 200, response.body);
      return response.json();
    };
    const usableIds = async (datasetId: string, prefix: string, token = t.adminToken) =>
      new Set((await usable(datasetId, `name=${prefix}&size=100`, token)).content.map((s: Json) => s.id));

    it('lists the AVAILABLE data sources scoped to ALL or naming the dataset\'s datapool; another pool\'s, NONE and DRAFT ones are left out', async () => {
      const w = await world();
      assert.deepEqual(await usableIds(w.inA, w.prefix), new Set([w.ids.all, w.ids.inA, w.ids.inBAndA]));
      const page = await usable(w.inA, `name=${w.prefix}&sort=name,asc`);
      assert.deepEqual(page.content.map((s: Json) => s.name), [`${w.prefix}-all`, `${w.prefix}-in-a`, `${w.prefix}-in-b-and-a`]);
      assert.equal(page.totalElements, 3);
      // Data sources as GET /v1/datasources/{id} answers them (secrets masked the same way).
      assert.deepEqual(page.content[1], await ok('GET', `/v1/datasources/${w.ids.inA}`));
      // A dataset in no datapool may use the ALL ones only.
      assert.deepEqual(await usableIds(w.inNoPool, w.prefix), new Set([w.ids.all]));
      // A data source released later shows up; one returned to DRAFT leaves.
      await ok('POST', `/v1/datasources/${w.ids.inADraft}/release`);
      await ok('POST', `/v1/datasources/${w.ids.all}/unrelease`);
      assert.deepEqual(await usableIds(w.inA, w.prefix), new Set([w.ids.inA, w.ids.inBAndA, w.ids.inADraft]));
    });

    it('leaves out the data sources the caller may not read, counting only the readable ones', async () => {
      const w = await world();
      // DATASET_READ and DATASOURCE_READ on datapool A: the dataset in A, the data sources lying in A, not the ALL one.
      const poolReader = await grant(t, uniqueEmail('pool-reader'), ['DATASET_READ', 'DATASOURCE_READ'], { scopeType: 'DATAPOOL', scopeId: w.poolA.id });
      const page = await usable(w.inA, `name=${w.prefix}`, poolReader);
      assert.deepEqual(new Set(page.content.map((s: Json) => s.id)), new Set([w.ids.inA, w.ids.inBAndA]));
      assert.equal(page.totalElements, 2);
      // The dataset readable without any data source: an empty page.
      const datasetOnly = await grant(t, uniqueEmail('dataset-only'), ['DATASET_READ'], { scopeType: 'DATASET', scopeId: w.inA });
      const empty = await usable(w.inA, `name=${w.prefix}`, datasetOnly);
      assert.deepEqual([empty.content, empty.totalElements], [[], 0]);
    });

    it('pages in the query: no item twice or missed, totalElements and totalPages right', async () => {
      const w = await world();
      const first = await usable(w.inA, `name=${w.prefix}&size=2&page=0&sort=name,desc`);
      const second = await usable(w.inA, `name=${w.prefix}&size=2&page=1&sort=name,desc`);
      assert.deepEqual([first.totalElements, first.totalPages, first.size, first.number], [3, 2, 2, 0]);
      assert.deepEqual([second.content.length, second.number, second.last], [1, 1, true]);
      assert.deepEqual([...first.content, ...second.content].map((s: Json) => s.name), [`${w.prefix}-in-b-and-a`, `${w.prefix}-in-a`, `${w.prefix}-all`]);
      // The list's other filters apply on top.
      assert.equal((await usable(w.inA, `name=${w.prefix}&connectorType=HTTP`)).totalElements, 0);
      expectFieldError(await call('GET', `/v1/datasets/${w.inA}/usable-datasources?sort=colour,asc`), 'sort');
      expectFieldError(await call('GET', `/v1/datasets/${w.inA}/usable-datasources?size=0`), 'size');
      // The status and the scope are the route's: the list's parameters for them change nothing here.
      assert.equal((await usable(w.inA, `name=${w.prefix}&dataSourceStatus=DRAFT&datapoolId=${w.poolB.id}&datapoolScopeType=NONE`)).totalElements, 3);
    });

    it('answers 404 for an unknown dataset or one the caller may not read, 400 for a malformed id', async () => {
      const w = await world();
      expectProblem(await call('GET', `/v1/datasets/${randomUUID()}/usable-datasources`), 404, 'NOT_FOUND');
      // Reading every data source does not make the dataset readable.
      const sourcesOnly = await grant(t, uniqueEmail('sources-only'), ['DATASOURCE_READ']);
      expectProblem(await call('GET', `/v1/datasets/${w.inA}/usable-datasources`, undefined, sourcesOnly), 404, 'NOT_FOUND');
      // Readable in datapool A only: the dataset in no pool is not theirs.
      const poolReader = await grant(t, uniqueEmail('pool-reader'), ['DATASET_READ', 'DATASOURCE_READ'], { scopeType: 'DATAPOOL', scopeId: w.poolA.id });
      expectProblem(await call('GET', `/v1/datasets/${w.inNoPool}/usable-datasources`, undefined, poolReader), 404, 'NOT_FOUND');
      expectFieldError(await call('GET', '/v1/datasets/not-a-uuid/usable-datasources'), 'dataSetId');
    });
  });
}
