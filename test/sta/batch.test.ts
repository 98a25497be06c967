import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectFieldError, expectProblem, grant, uniqueEmail } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { datastream, location, thing } from './fixtures.js';

/** `$batch` in the JSON batch format of OData 4.01, through the data API gateway. */

type Json = Record<string, any>;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`SensorThings $batch (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    const batch = async (requests: Json[], headers?: Record<string, string | null>) => {
      const response = await sta.request('POST', '/$batch', { requests }, headers);
      assert.equal(response.statusCode, 200, response.body);
      const responses: Json[] = response.json().responses;
      assert.equal(responses.length, requests.length);
      return new Map(responses.map((r) => [r.id as string, r]));
    };
    const count = async (path: string) => (await sta.request('GET', `${path}${path.includes('?') ? '&' : '?'}$count=true&$top=0`)).json()['@iot.count'];

    before(async () => {
      t = await buildTestApp(kind);
      sta = await publishStaDataset(t);
    });
    after(() => t.close());

    test('a create, then $1 in a later url and in a body, a GET with options, every url form', async () => {
      const answers = await batch([
        { id: 'thing', method: 'post', url: 'Things', body: thing('Batch thing', { Locations: [location()] }) },
        { id: 'stream', method: 'post', url: '$thing/Datastreams', body: datastream('Batch stream') },
        { id: 'obs', method: 'post', url: `${sta.publicBase}/Observations`, body: { result: 7, phenomenonTime: '2024-01-01T00:00:00Z', Datastream: { '@iot.id': '$stream' } } },
        { id: 'read', method: 'get', url: '/Things?$filter=name%20eq%20%27Batch%20thing%27&$expand=Datastreams/Observations' },
        { id: 'alias', method: 'get', url: `${sta.publicBase}/v1.1/Things?$filter=name%20eq%20'Batch%20thing'` },
        { id: 'minimal', method: 'post', url: 'Things', body: thing('Minimal'), headers: { Prefer: 'return=minimal' } },
      ]);
      const created = answers.get('thing')!;
      assert.equal(created.status, 201);
      const thingId = created.body['@iot.id'];
      assert.equal(created.headers.location, `${sta.publicBase}/Things(${thingId})`);
      const stream = answers.get('stream')!;
      assert.equal(stream.status, 201, JSON.stringify(stream));
      assert.equal((await sta.request('GET', `/Datastreams(${stream.body['@iot.id']})/Thing`)).json()['@iot.id'], thingId);
      assert.equal(answers.get('obs')!.status, 201, JSON.stringify(answers.get('obs')));
      const read = answers.get('read')!;
      assert.equal(read.status, 200);
      assert.equal(read.body.value.length, 1);
      assert.equal(read.body.value[0].Datastreams[0].Observations[0].result, 7);
      assert.equal(answers.get('alias')!.body.value[0].name, 'Batch thing');
      const minimal = answers.get('minimal')!;
      assert.equal(minimal.status, 204);
      assert.equal(minimal.body, undefined);
      assert.match(minimal.headers.location, /\/Things\(\d+\)$/);
    });

    test("the example of docs/data-api.md: a Location posted below $t joins the Thing; a GET of $t with options", async () => {
      const answers = await batch([
        { id: 't', atomicityGroup: 'g', method: 'post', url: 'Things', body: { name: 'Station 2', description: 'harbour' } },
        { id: 'l', atomicityGroup: 'g', method: 'post', url: '$t/Locations', body: location('Pier') },
        { id: 'r', method: 'get', url: '$t?$expand=Locations', dependsOn: ['g'] },
      ]);
      assert.deepEqual([...answers.values()].map((r) => r.status), [201, 201, 200]);
      assert.equal(answers.get('r')!.body.Locations[0].name, 'Pier');
    });

    test('an error is the problem the request alone would have answered; the others still run', async () => {
      const answers = await batch([
        { id: 'bad', method: 'post', url: 'Things', body: thing('x', { color: 'red' }) },
        { id: 'missing', method: 'get', url: 'Things(987654)' },
        { id: 'fine', method: 'post', url: 'Things', body: thing('After errors') },
      ]);
      const bad = answers.get('bad')!;
      assert.equal(bad.status, 400);
      assert.equal(bad.body.type, 'urn:platform:error:VALIDATION_FAILED');
      assert.equal(bad.body.fieldErrors[0].field, 'color');
      assert.equal(answers.get('missing')!.status, 404);
      assert.equal(answers.get('missing')!.body.status, 404);
      assert.equal(answers.get('fine')!.status, 201);
    });

    test('an atomicity group with a bad member stores nothing of it; its members answer the error or 424', async () => {
      const before = await count('/Things');
      const answers = await batch([
        { id: 'a', atomicityGroup: 'g1', method: 'post', url: 'Things', body: thing('Grouped A') },
        { id: 'b', atomicityGroup: 'g1', method: 'post', url: '$a/Datastreams', body: datastream('Grouped stream') },
        { id: 'c', atomicityGroup: 'g1', method: 'post', url: 'Things', body: thing('Grouped C', { color: 'red' }) },
        { id: 'd', atomicityGroup: 'g1', method: 'post', url: 'Things', body: thing('Grouped D') },
        { id: 'after', method: 'get', url: 'Things', dependsOn: ['g1'] },
        { id: 'independent', method: 'post', url: 'Things', body: thing('Outside the group') },
      ]);
      assert.deepEqual(['a', 'b', 'c', 'd', 'after', 'independent'].map((id) => answers.get(id)!.status), [424, 424, 400, 424, 424, 201]);
      assert.equal(answers.get('a')!.atomicityGroup, 'g1');
      assert.equal(answers.get('a')!.body.status, 424);
      assert.equal(await count('/Things'), before + 1);
      assert.equal(await count(`/Things?$filter=startswith(name,'Grouped')`), 0);
      assert.equal(await count(`/Datastreams?$filter=name eq 'Grouped stream'`), 0);

      const committed = await batch([
        { id: 'x', atomicityGroup: 'g2', method: 'post', url: 'Things', body: thing('Committed A') },
        { id: 'y', atomicityGroup: 'g2', method: 'post', url: '$x/Datastreams', body: datastream('Committed stream') },
        { id: 'z', atomicityGroup: 'g2', method: 'get', url: '$x/Datastreams' },
      ]);
      assert.deepEqual([...committed.values()].map((r) => r.status), [201, 201, 200]);
      assert.equal(committed.get('z')!.body.value[0].name, 'Committed stream');
      assert.equal((await sta.request('GET', `/Things(${committed.get('x')!.body['@iot.id']})/Datastreams`)).json().value.length, 1);
    });

    test('dependsOn a failed request, or $ref to one, answers 424; dependsOn a success runs', async () => {
      const answers = await batch([
        { id: '1', method: 'post', url: 'Things', body: { name: 'no description' } },
        { id: '2', method: 'post', url: 'Things', body: thing('Depends'), dependsOn: ['1'] },
        { id: '3', method: 'post', url: '$1/Datastreams', body: datastream() },
        { id: '4', method: 'post', url: 'Things', body: thing('Fine') },
        { id: '5', method: 'get', url: '$4', dependsOn: ['4'] },
      ]);
      assert.deepEqual([...answers.values()].map((r) => r.status), [400, 424, 424, 201, 200]);
      assert.equal(answers.get('2')!.body.type, 'urn:platform:error:FAILED_DEPENDENCY');
      assert.match(answers.get('2')!.body.detail, /depends on 1/);
      assert.equal(await count(`/Things?$filter=name eq 'Depends'`), 0);
    });

    test('each request is authorized on its own: a reader gets its GETs and 403 for its writes', async () => {
      const reader = await grant(t, uniqueEmail('batch-reader'), ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: sta.datasetId });
      const answers = await batch([
        { id: 'r', method: 'get', url: 'Things' },
        { id: 'w', method: 'post', url: 'Things', body: thing('Reader write') },
        { id: 'd', method: 'delete', url: 'Things(1)' },
      ], { authorization: `Bearer ${reader}` });
      assert.equal(answers.get('r')!.status, 200);
      for (const id of ['w', 'd']) {
        const denied = answers.get(id)!;
        assert.equal(denied.status, 403);
        assert.equal(denied.body.type, 'urn:platform:error:ACCESS_DENIED');
        assert.match(denied.body.detail, /DATASET_PAYLOAD_WRITE/);
      }
      assert.equal(await count(`/Things?$filter=name eq 'Reader write'`), 0);
      const writer = await grant(t, uniqueEmail('batch-writer'), ['DATASET_PAYLOAD_WRITE'], { scopeType: 'DATASET', scopeId: sta.datasetId });
      const written = await batch([
        { id: 'w', method: 'post', url: 'Things', body: thing('Writer write') },
        { id: 'r', method: 'get', url: '$w' },
      ], { authorization: `Bearer ${writer}` });
      assert.equal(written.get('w')!.status, 201);
      assert.equal(written.get('r')!.status, 403);
      assert.match(written.get('r')!.body.detail, /DATASET_PAYLOAD_READ/);
    });

    test('an anonymous batch on open data reads but does not write; on closed data it is refused', async () => {
      const open = await publishStaDataset(t, { openDataAccess: true, slug: 'open-batch' });
      const response = await open.request('POST', '/$batch', { requests: [
        { id: 'r', method: 'get', url: 'Things' },
        { id: 'w', method: 'post', url: 'Things', body: thing('Anonymous') },
      ] }, { authorization: null });
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(response.json().responses.map((r: Json) => r.status), [200, 403]);
      assert.equal((await sta.request('POST', '/$batch', { requests: [] }, { authorization: null })).statusCode, 401);
    });

    test('a malformed envelope is a 400 naming the field, and nothing of it runs', async () => {
      const before = await count('/Things');
      const ok = { id: '1', method: 'post', url: 'Things', body: thing('Never') };
      const cases: [unknown, string][] = [
        [{}, 'requests'],
        [{ requests: {} }, 'requests'],
        [{ requests: [ok, { id: '2', method: 'fetch', url: 'Things' }] }, 'requests[1].method'],
        [{ requests: [ok, { id: '1', method: 'get', url: 'Things' }] }, 'requests[1].id'],
        [{ requests: [ok, { method: 'get', url: 'Things' }] }, 'requests[1].id'],
        [{ requests: [ok, { id: '2', method: 'get' }] }, 'requests[1].url'],
        [{ requests: [ok, { id: '2', method: 'get', url: 'Things', dependsOn: ['9'] }] }, 'requests[1].dependsOn[0]'],
        [{ requests: [ok, { id: '2', method: 'get', url: '$9/Datastreams' }] }, 'requests[1].url'],
        [{ requests: [ok, { id: '2', method: 'post', url: '$batch', body: { requests: [] } }] }, 'requests[1].url'],
        [{ requests: [ok, { id: '2', method: 'get', url: 'https://elsewhere.example/Things' }] }, 'requests[1].url'],
        [{ requests: [ok, { id: '2', method: 'get', url: 'Things', headers: { prefer: 1 } }] }, 'requests[1].headers.prefer'],
        [{ requests: [{ ...ok, atomicityGroup: 'g' }, { id: '2', method: 'get', url: 'Things' }, { id: '3', method: 'get', url: 'Things', atomicityGroup: 'g' }] }, 'requests[2].atomicityGroup'],
        [{ requests: Array.from({ length: 1001 }, (_, i) => ({ id: `r${i}`, method: 'get', url: 'Things' })) }, 'requests'],
      ];
      cases.push([{ requests: [{ ...ok, atomicityGroup: 'g' }, { id: 'g', method: 'get', url: 'Things' }] }, 'requests[1].id']);
      cases.push([{ requests: [ok, { id: '2', method: 'get', url: `${sta.publicBase}2/Things` }] }, 'requests[1].url']);
      for (const [body, field] of cases) expectFieldError(await sta.request('POST', '/$batch', body), field);
      const encoded = await batch([{ id: 'nested', method: 'post', url: '%24batch', body: { requests: [] } }]);
      assert.equal(encoded.get('nested')!.status, 400);
      assert.equal(await count('/Things'), before);
      const exactlyMax = Array.from({ length: 1000 }, (_, i) => ({ id: `r${i}`, method: 'get', url: 'Things(1)/name' }));
      assert.equal((await sta.request('POST', '/$batch', { requests: exactlyMax })).statusCode, 200);
    });

    test('the multipart format is served beside JSON (test/sta/batch-multipart.test.ts); another body type: 415; GET on $batch: 405', async () => {
      const multipart = await sta.gateway.inject({
        method: 'POST', url: `${sta.base}/$batch`,
        headers: { authorization: `Bearer ${t.adminToken}`, 'content-type': 'multipart/mixed; boundary=batch_1' },
        payload: '--batch_1\r\nContent-Type: application/http\r\n\r\nGET Things HTTP/1.1\r\n\r\n--batch_1--\r\n',
      });
      assert.equal(multipart.statusCode, 200, multipart.body);
      assert.match(String(multipart.headers['content-type']), /^multipart\/mixed; boundary=/);
      const text = await sta.gateway.inject({
        method: 'POST', url: `${sta.base}/$batch`,
        headers: { authorization: `Bearer ${t.adminToken}`, 'content-type': 'text/plain' }, payload: 'requests',
      });
      expectProblem(text, 415, 'UNSUPPORTED_MEDIA_TYPE');
      expectProblem(await sta.request('GET', '/$batch'), 405, 'MALFORMED_REQUEST');
    });
  });
}
