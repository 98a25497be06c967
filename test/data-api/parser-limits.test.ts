import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { bearer, expectFieldError, uniqueName } from '../helpers/factories.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { thing } from '../sta/fixtures.js';

/**
 * Issue 16, finding 4: parser blow-ups. Each request that froze the process or answered 500 now
 * answers 400 VALIDATION_FAILED naming the limit it met (the contract's "Limits of the data API"),
 * through the real gateway; and what lies within a limit, however long or flat, still works.
 */

type Json = Record<string, any>;

const filter = (expression: string) => `/Things?$filter=${encodeURIComponent(expression)}`;

/** 400 VALIDATION_FAILED naming `field` and, in the detail and the field's message, the limit. */
function expectLimit(response: LightMyRequestResponse | Json, field: string, limit: string): Json {
  let body: Json;
  if ('statusCode' in response) {
    body = expectFieldError(response as LightMyRequestResponse, field);
  } else {
    // One answer of a $batch: { id, status, headers, body }.
    body = response['body'];
    assert.equal(response['status'], 400, JSON.stringify(body).slice(0, 500));
    assert.equal(body['type'], 'urn:platform:error:VALIDATION_FAILED');
    assert.ok(body['fieldErrors'].some((e: Json) => e['field'] === field), JSON.stringify(body['fieldErrors']));
  }
  assert.match(body['detail'], new RegExp(`\\(limit ${limit}\\)`), body['detail']);
  assert.ok(body['detail'].length < 400, `the detail stays short: ${body['detail'].length} characters`);
  return body;
}

/** `Things($expand=Things($expand=…Datastreams…))`: `levels` nested `$expand`s below the first navigation. */
const nestedExpand = (levels: number) => `Datastreams${'($expand=Thing($expand=Datastreams'.repeat(levels)}${'))'.repeat(levels)}`;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`bounded parsing on the data API (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    let ids: number[];
    const batch = async (requests: Json[]) => {
      const response = await sta.request('POST', '/$batch', { requests });
      assert.equal(response.statusCode, 200, response.body.slice(0, 2000));
      return response.json().responses as Json[];
    };

    before(async () => {
      t = await buildTestApp(kind);
      sta = await publishStaDataset(t);
      ids = [];
      for (const name of ['North', 'South', 'East']) {
        const created = await sta.request('POST', '/Things', thing(name));
        assert.equal(created.statusCode, 201, created.body);
        ids.push(created.json()['@iot.id']);
      }
    });
    after(() => t.close());

    test('a $batch url with a 1.2 MiB nested $expand answers that request 400 (expandMaxBytes) at once; the batch goes on', async () => {
      const levels = 40_000;
      const url = `Things?$expand=${nestedExpand(levels)}`;
      assert.ok(url.length > 1.2 * 1024 * 1024, `${url.length} characters`);
      const started = performance.now();
      const [attack, next] = await batch([{ id: 'attack', method: 'get', url }, { id: 'next', method: 'get', url: 'Things?$top=1' }]);
      const elapsedMs = performance.now() - started;
      expectLimit(attack!, '$expand', 'expandMaxBytes');
      assert.equal(next!.status, 200);
      // The seen freeze was 10–20 s; refusing by length is linear and takes milliseconds.
      assert.ok(elapsedMs < 3000, `answered in ${elapsedMs.toFixed(0)} ms`);
    });

    test('$expand: 8 levels (nested options or a path) answer 200, 9 answer 400 (expandMaxDepth), also inside a $batch', async () => {
      const eight = await sta.request('GET', `/Things?$top=1&$expand=${encodeURIComponent('Datastreams($expand=Thing($expand=Datastreams($expand=Thing($expand=Datastreams($expand=Thing($expand=Datastreams($expand=Thing)))))))')}`);
      assert.equal(eight.statusCode, 200, eight.body);
      assert.equal(eight.json().value.length, 1);
      const nine = 'Datastreams($expand=Thing($expand=Datastreams($expand=Thing($expand=Datastreams($expand=Thing($expand=Datastreams($expand=Thing($expand=Datastreams))))))))';
      expectLimit(await sta.request('GET', `/Things?$expand=${encodeURIComponent(nine)}`), '$expand', 'expandMaxDepth');
      const path = Array.from({ length: 9 }, (_, k) => (k % 2 === 0 ? 'Datastreams' : 'Thing')).join('/');
      expectLimit(await sta.request('GET', `/Things?$expand=${path}`), '$expand', 'expandMaxDepth');
      assert.equal((await sta.request('GET', `/Things?$expand=${path.split('/').slice(0, 8).join('/')}`)).statusCode, 200);
      const [inBatch] = await batch([{ id: 'deep', method: 'get', url: `Things?$expand=${nine}` }]);
      expectLimit(inBatch!, '$expand', 'expandMaxDepth');
    });

    test('deep not, parentheses, unary minus and calls answer 400: expressionMaxBytes when long, expressionMaxDepth within the bytes', async () => {
      expectLimit(await sta.request('GET', filter(`${'not '.repeat(5000)}true`)), '$filter', 'expressionMaxBytes');
      expectLimit(await sta.request('GET', filter(`${'('.repeat(5000)}true${')'.repeat(5000)}`)), '$filter', 'expressionMaxBytes');
      expectLimit(await sta.request('GET', filter(`${'not '.repeat(200)}true`)), '$filter', 'expressionMaxDepth');
      expectLimit(await sta.request('GET', filter(`${'('.repeat(1000)}true${')'.repeat(1000)}`)), '$filter', 'expressionMaxDepth');
      expectLimit(await sta.request('GET', filter(`${'-'.repeat(100)}1 eq id`)), '$filter', 'expressionMaxDepth');
      expectLimit(await sta.request('GET', filter(`${'tolower('.repeat(100)}name${')'.repeat(100)} eq 'north'`)), '$filter', 'expressionMaxDepth');
      expectLimit(await sta.request('GET', `/Things?$orderby=${encodeURIComponent(`${'('.repeat(100)}id${')'.repeat(100)}`)}`), '$orderby', 'expressionMaxDepth');
      expectLimit(await sta.request('GET', `/Things?$select=${'name,'.repeat(2000)}id`), '$select', 'expressionMaxBytes');
      // Inside an $expand, with the position inside the outer value.
      const nested = expectLimit(await sta.request('GET', `/Things?$expand=${encodeURIComponent(`Datastreams($filter=${'not '.repeat(100)}true)`)}`), '$expand', 'expressionMaxDepth');
      assert.match(nested.detail, /at position \d+/);
      // Up to the limit the same shapes work (and not twice is the identity).
      const sixty = await sta.request('GET', filter(`${'not '.repeat(60)}(name eq 'North')`));
      assert.equal(sixty.statusCode, 200, sixty.body);
      assert.deepEqual(sixty.json().value.map((x: Json) => x.name), ['North']);
      const parenthesised = await sta.request('GET', filter(`${'('.repeat(60)}name eq 'South'${')'.repeat(60)}`));
      assert.deepEqual(parenthesised.json().value.map((x: Json) => x.name), ['South']);
    });

    test('100,000 and-ed comparisons answer 400 (expressionMaxBytes), in a GET and in a $batch', async () => {
      const hundredThousand = `${'id eq 1 and '.repeat(99_999)}id eq 1`;
      expectLimit(await sta.request('GET', filter(hundredThousand)), '$filter', 'expressionMaxBytes');
      const [inBatch] = await batch([{ id: 'ands', method: 'get', url: `Things?$filter=${hundredThousand}` }]);
      expectLimit(inBatch!, '$filter', 'expressionMaxBytes');
    });

    test('flat and/or chains up to 8 KiB work, and give the right rows; other operators chained nest and are held to the depth', async () => {
      const [north, south] = ids as [number, number];
      const ors = `${'id eq 0 or '.repeat(740)}id eq ${south}`;
      const ands = `${'id ge 0 and '.repeat(670)}id eq ${north}`;
      for (const expression of [ors, ands]) assert.ok(Buffer.byteLength(expression) > 8000 && Buffer.byteLength(expression) <= 8192, `${Buffer.byteLength(expression)} bytes`);
      const orAnswer = await sta.request('GET', filter(ors));
      assert.equal(orAnswer.statusCode, 200, orAnswer.body.slice(0, 500));
      assert.deepEqual(orAnswer.json().value.map((x: Json) => x['@iot.id']), [south]);
      const andAnswer = await sta.request('GET', `${filter(ands)}&$top=1&$count=true`);
      assert.equal(andAnswer.statusCode, 200, andAnswer.body.slice(0, 500));
      assert.deepEqual(andAnswer.json().value.map((x: Json) => x['@iot.id']), [north]);
      assert.equal(andAnswer.json()['@iot.count'], 1);
      // Alternating and/or without parentheses is an or of ands: two levels, not a thousand.
      const mixed = `${`id eq ${north} and id ge 0 or `.repeat(250)}id eq ${south}`;
      const mixedAnswer = await sta.request('GET', `${filter(mixed)}&$orderby=id`);
      assert.equal(mixedAnswer.statusCode, 200, mixedAnswer.body.slice(0, 500));
      assert.deepEqual(mixedAnswer.json().value.map((x: Json) => x['@iot.id']), [north, south]);
      // The same chains inside a $batch, and the next link of an expansion written back from them.
      const [batched] = await batch([{ id: 'ors', method: 'get', url: `Things?$filter=${encodeURIComponent(ors)}` }]);
      assert.equal(batched!.status, 200, JSON.stringify(batched).slice(0, 500));
      assert.deepEqual(batched!.body.value.map((x: Json) => x['@iot.id']), [south]);
      // Nesting up to the limit, alternating and/or through parentheses: PostgreSQL follows it level by level.
      const alternating = `${`id ge 0 and (id lt 0 or (`.repeat(30)}id eq ${north}${'))'.repeat(30)}`;
      const alternatingAnswer = await sta.request('GET', filter(alternating));
      assert.equal(alternatingAnswer.statusCode, 200, alternatingAnswer.body.slice(0, 500));
      assert.deepEqual(alternatingAnswer.json().value.map((x: Json) => x['@iot.id']), [north]);
      const sum = (n: number) => `id${' add 0'.repeat(n)} eq ${north}`;
      const sixty = await sta.request('GET', filter(sum(60)));
      assert.equal(sixty.statusCode, 200, sixty.body.slice(0, 500));
      assert.deepEqual(sixty.json().value.map((x: Json) => x['@iot.id']), [north]);
      expectLimit(await sta.request('GET', filter(sum(70))), '$filter', 'expressionMaxDepth');
      // $orderby with as many keys as fit.
      const manyKeys = await sta.request('GET', `/Things?$orderby=${`${'name,'.repeat(1600)}id`}`);
      assert.equal(manyKeys.statusCode, 200, manyKeys.body.slice(0, 500));
    });

    test('a JSON body nested 5,000 deep answers 400 (jsonMaxDepth) on the data API, a $batch and the management API; 64 levels are stored', async () => {
      const deep = (levels: number): unknown => {
        let value: unknown = 'bottom';
        for (let k = 0; k < levels; k++) value = { inner: value };
        return value;
      };
      // As text: JSON.stringify itself runs out of stack on 5,000 levels.
      const deepText = (levels: number) => `${'{"inner":'.repeat(levels)}"bottom"${'}'.repeat(levels)}`;
      const json = { 'content-type': 'application/json' };
      const thingText = (properties: string) => `{"name":"Deep","description":"deep","properties":${properties}}`;
      const attack = await sta.request('POST', '/Things', thingText(deepText(5000)), json);
      const body = expectLimit(attack, 'body', 'jsonMaxDepth');
      assert.match(body.detail, /deeper than 64 levels/);
      // Arrays count as levels too.
      expectLimit(await sta.request('POST', '/Things', thingText(`{"x":${'['.repeat(5000)}${']'.repeat(5000)}}`), json), 'body', 'jsonMaxDepth');
      const inBatch = await sta.request('POST', '/$batch', `{"requests":[{"id":"deep","method":"post","url":"Things","body":${thingText(deepText(5000))}}]}`, json);
      expectLimit(inBatch, 'body', 'jsonMaxDepth');
      const management = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: { ...bearer(t.adminToken), ...json }, payload: `{"name":"${uniqueName('deep')}","extra":${deepText(5000)}}` });
      expectLimit(management, 'body', 'jsonMaxDepth');

      // The body itself is level 1, `properties` (the outermost of 63 objects) level 2.
      const fits = thing('Exactly 64', { properties: deep(63), description: `brackets in text do not count: ${'[{'.repeat(3000)} \\" ${'"'.repeat(3)}` });
      const created = await sta.request('POST', '/Things', fits);
      assert.equal(created.statusCode, 201, created.body.slice(0, 500));
      const read = await sta.request('GET', `/Things(${created.json()['@iot.id']})`);
      assert.deepEqual(read.json().properties, deep(63));
      assert.equal(read.json().description, fits.description);
      expectLimit(await sta.request('POST', '/Things', thing('65', { properties: deep(64) })), 'body', 'jsonMaxDepth');
    });

    test('a $batch url with 200,000 slashes in its path is answered at once (no quadratic trimming)', async () => {
      const started = performance.now();
      const [slashes, next] = await batch([
        { id: 'slashes', method: 'get', url: `Things${'/'.repeat(200_000)}x` },
        { id: 'next', method: 'get', url: 'Things?$top=1' },
      ]);
      const elapsedMs = performance.now() - started;
      assert.equal(slashes!.status, 400, JSON.stringify(slashes).slice(0, 300));
      assert.equal(next!.status, 200);
      assert.ok(elapsedMs < 3000, `answered in ${elapsedMs.toFixed(0)} ms`);
    });

    test('a $batch of 1,001 requests answers 400 (batchMaxRequests) before running any', async () => {
      const before = (await sta.request('GET', '/Things?$count=true&$top=0')).json()['@iot.count'];
      const requests = Array.from({ length: 1001 }, (_, k) => ({ id: `r${k}`, method: 'post', url: 'Things', body: thing(`Batch ${k}`) }));
      expectLimit(await sta.request('POST', '/$batch', { requests }), 'requests', 'batchMaxRequests');
      assert.equal((await sta.request('GET', '/Things?$count=true&$top=0')).json()['@iot.count'], before);
    });
  });
}

describe('the limits are settings (config.dataApi.limits), met where they are set', () => {
  let t: TestApp;
  let sta: PublishedDataset;
  before(async () => {
    t = await buildTestApp('pglite', {
      DATA_API_JSON_MAX_DEPTH: '3', STA_EXPRESSION_MAX_BYTES: '64', STA_EXPRESSION_MAX_DEPTH: '3',
      STA_EXPAND_MAX_DEPTH: '1', STA_EXPAND_MAX_BYTES: '80', STA_BATCH_MAX_REQUESTS: '2',
    });
    sta = await publishStaDataset(t);
  });
  after(() => t.close());

  test('each limit answers 400 just past its setting and not at it', async () => {
    const ok = async (path: string) => {
      const response = await sta.request('GET', path);
      assert.equal(response.statusCode, 200, `${path}: ${response.body}`);
    };
    // `id eq 1` is two levels (the comparison and its operands), each `not` one more.
    await ok(filter('not (id eq 1)'));
    expectLimit(await sta.request('GET', filter('not not (id eq 1)')), '$filter', 'expressionMaxDepth');
    await ok(filter(`name eq '${'x'.repeat(64 - 10)}'`));
    expectLimit(await sta.request('GET', filter(`name eq '${'x'.repeat(64 - 9)}'`)), '$filter', 'expressionMaxBytes');
    // Bytes, not characters: 'é' is two.
    expectLimit(await sta.request('GET', filter(`name eq '${'é'.repeat(30)}'`)), '$filter', 'expressionMaxBytes');
    await ok('/Things?$expand=Datastreams');
    expectLimit(await sta.request('GET', '/Things?$expand=Datastreams($expand=Thing)'), '$expand', 'expandMaxDepth');
    expectLimit(await sta.request('GET', `/Things?$expand=Datastreams($select=${'name,'.repeat(20)}id)`), '$expand', 'expandMaxBytes');

    const batchOf = (n: number) => ({ requests: Array.from({ length: n }, (_, k) => ({ id: `r${k}`, method: 'get', url: 'Things' })) });
    assert.equal((await sta.request('POST', '/$batch', batchOf(2))).statusCode, 200);
    expectLimit(await sta.request('POST', '/$batch', batchOf(3)), 'requests', 'batchMaxRequests');

    const three = await sta.request('POST', '/Things', { name: 'a', description: 'b', properties: { level: { three: true } } });
    assert.equal(three.statusCode, 201, three.body);
    expectLimit(await sta.request('POST', '/Things', { name: 'a', description: 'b', properties: { level: { four: [1] } } }), 'body', 'jsonMaxDepth');
    expectLimit(await t.app.inject({ method: 'POST', url: '/v1/groups', headers: bearer(t.adminToken), payload: { name: uniqueName('deep'), x: { y: { z: {} } } } }), 'body', 'jsonMaxDepth');
  });
});

for (const kind of databaseKinds(import.meta.url)) {
  describe(`the largest settings the configuration accepts still answer, never 5xx (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    let id: number;
    before(async () => {
      t = await buildTestApp(kind, { STA_EXPRESSION_MAX_BYTES: '65536', STA_EXPRESSION_MAX_DEPTH: '200', STA_EXPAND_MAX_BYTES: '65536', STA_EXPAND_MAX_DEPTH: '64' });
      sta = await publishStaDataset(t);
      const created = await sta.request('POST', '/Things', thing('Only'));
      assert.equal(created.statusCode, 201, created.body);
      id = created.json()['@iot.id'];
    });
    after(() => t.close());

    test('200 levels of each nesting shape and 64 KiB of a flat chain run on the database', async () => {
      const shapes = {
        not: `${'not '.repeat(198)}(id eq ${id})`,
        parentheses: `${'('.repeat(200)}id eq ${id}${')'.repeat(200)}`,
        alternating: `${'id ge 0 and (id lt 0 or ('.repeat(99)}id eq ${id}${'))'.repeat(99)}`,
        arithmetic: `id${' add 0'.repeat(198)} eq ${id}`,
        calls: `${'tolower('.repeat(198)}name${')'.repeat(198)} eq 'only'`,
        // Two bound parameters every ten bytes: about 13,000, within PostgreSQL's 65,535.
        flat: `${'1 eq 1 and '.repeat(5950)}id eq ${id}`,
      };
      for (const [shape, expression] of Object.entries(shapes)) {
        assert.ok(Buffer.byteLength(expression) <= 65536, `${shape}: ${Buffer.byteLength(expression)} bytes`);
        const answer = await sta.request('GET', filter(expression));
        assert.equal(answer.statusCode, 200, `${shape}: ${answer.body.slice(0, 300)}`);
        assert.deepEqual(answer.json().value.map((x: Json) => x['@iot.id']), [id], shape);
      }
      expectLimit(await sta.request('GET', filter(`${'not '.repeat(200)}(id eq ${id})`)), '$filter', 'expressionMaxDepth');
    });
  });
}
