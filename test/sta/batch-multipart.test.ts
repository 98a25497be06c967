import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { expectFieldError, expectProblem, grant, uniqueEmail } from '../helpers/factories.js';
import { publishDataset, publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { datastream, location, thing } from './fixtures.js';

/**
 * `$batch` in the multipart format of the SensorThings 1.1 standard (OData 4.0 §11.7.7), through
 * the data API gateway: written here by hand as a client would, its answer read back by hand.
 */


interface Request { method: string; url: string; body?: unknown; contentId?: string; headers?: Record<string, string> }

/** One `application/http` part of a request batch (CRLF line breaks unless `lf`). */
function httpPart(request: Request, lf = false): string {
  const lines = [
    'Content-Type: application/http',
    'Content-Transfer-Encoding: binary',
    ...(request.contentId ? [`Content-ID: ${request.contentId}`] : []),
    '',
    `${request.method} ${request.url} HTTP/1.1`,
    'Host: example.org',
    ...Object.entries(request.headers ?? {}).map(([name, value]) => `${name}: ${value}`),
    ...(request.body === undefined ? [] : ['Content-Type: application/json']),
    '',
    request.body === undefined ? '' : JSON.stringify(request.body),
  ];
  return lines.join(lf ? '\n' : '\r\n');
}

const changeSet = (boundary: string, requests: Request[]) =>
  `Content-Type: multipart/mixed; boundary=${boundary}\r\n\r\n${requests.map((r) => `--${boundary}\r\n${httpPart(r)}\r\n`).join('')}--${boundary}--`;

const multipart = (boundary: string, parts: string[]) => `preamble, ignored\r\n${parts.map((p) => `--${boundary}\r\n${p}\r\n`).join('')}--${boundary}--\r\nepilogue, ignored`;

interface AnswerPart { contentId?: string; status: number; headers: Record<string, string>; body: any; changeSet?: AnswerPart[] }

/** Reads a multipart answer: each part an HTTP response, or a change set of them. */
function readAnswer(response: LightMyRequestResponse): AnswerPart[] {
  assert.equal(response.statusCode, 200, response.body);
  const type = String(response.headers['content-type']);
  const boundary = /^multipart\/mixed;\s*boundary=(.+)$/.exec(type)?.[1];
  assert.ok(boundary, `a multipart answer, got ${type}`);
  return readParts(response.body, boundary);
}

function readParts(text: string, boundary: string): AnswerPart[] {
  const sections = text.split(`--${boundary}`);
  assert.match(sections.at(-1)!, /^--/, 'the answer ends with the closing delimiter');
  return sections.slice(1, -1).map((section) => {
    const content = section.replace(/^\r\n/, '').replace(/\r\n$/, '');
    const [mimeHeaders, ...rest] = content.split('\r\n\r\n');
    const mime = headersOf(mimeHeaders!.split('\r\n'));
    const nested = /^multipart\/mixed;\s*boundary=(.+)$/.exec(mime['content-type'] ?? '')?.[1];
    if (nested) return { status: 0, headers: mime, body: undefined, changeSet: readParts(rest.join('\r\n\r\n'), nested) };
    assert.equal(mime['content-type'], 'application/http');
    const [head, ...body] = rest.join('\r\n\r\n').split('\r\n\r\n');
    const [statusLine, ...headerLines] = head!.split('\r\n');
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine!)?.[1]);
    const headers = headersOf(headerLines);
    const text = body.join('\r\n\r\n');
    if (text !== '') assert.equal(Number(headers['content-length']), Buffer.byteLength(text));
    return {
      ...(mime['content-id'] ? { contentId: mime['content-id'] } : {}),
      status, headers, body: text === '' ? undefined : /json/.test(headers['content-type'] ?? '') ? JSON.parse(text) : text,
    };
  });
}

const headersOf = (lines: string[]) => Object.fromEntries(lines.map((line) => {
  const colon = line.indexOf(':');
  return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
}));

for (const kind of databaseKinds(import.meta.url)) {
  describe(`SensorThings multipart $batch (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    const post = (body: string, boundary: string | null = 'batch_1', headers: Record<string, string | null> = {}, path = '/$batch') =>
      sta.request('POST', path, body, { 'content-type': boundary === null ? 'multipart/mixed' : `multipart/mixed; boundary=${boundary}`, ...headers });
    const count = async (path: string) => (await sta.request('GET', `${path}${path.includes('?') ? '&' : '?'}$count=true&$top=0`)).json()['@iot.count'];

    before(async () => {
      t = await buildTestApp(kind, { STA_BATCH_MAX_REQUESTS: '20' });
      sta = await publishStaDataset(t);
    });
    after(() => t.close());

    test('a GET, then a change set whose later requests use $<Content-ID> in url and body; answered in the same format', async () => {
      const existing = (await sta.request('POST', '/Things', thing('Before the batch'))).json()['@iot.id'];
      const answer = readAnswer(await post(multipart('batch_1', [
        httpPart({ method: 'GET', url: `Things(${existing})?$select=name` }),
        changeSet('changeset_1', [
          { method: 'POST', url: '/v1.1/Things', body: thing('Multipart thing', { Locations: [location()] }), contentId: '1' },
          { method: 'POST', url: '$1/Datastreams', body: datastream('Multipart stream'), contentId: '2' },
          { method: 'POST', url: `${sta.base}/Observations`, body: { result: 3, phenomenonTime: '2024-01-01T00:00:00Z', Datastream: { '@iot.id': '$2' } }, contentId: 'obs' },
        ]),
        httpPart({ method: 'GET', url: `${sta.publicBase}/Things?$filter=name%20eq%20'Multipart%20thing'&$expand=Datastreams/Observations` }),
        httpPart({ method: 'POST', url: 'Things', body: thing('Minimal'), headers: { Prefer: 'return=minimal' } }),
      ])));
      assert.equal(answer.length, 4);
      assert.equal(answer[0]!.status, 200);
      assert.deepEqual(answer[0]!.body, { name: 'Before the batch' });
      const members = answer[1]!.changeSet!;
      assert.ok(members, JSON.stringify(answer[1]));
      assert.deepEqual(members.map((m) => [m.contentId, m.status]), [['1', 201], ['2', 201], ['obs', 201]]);
      const thingId = members[0]!.body['@iot.id'];
      assert.equal(members[0]!.headers['location'], `${sta.publicBase}/Things(${thingId})`);
      assert.equal((await sta.request('GET', `/Datastreams(${members[1]!.body['@iot.id']})/Thing`)).json()['@iot.id'], thingId);
      const read = answer[2]!;
      assert.equal(read.status, 200);
      assert.equal(read.body.value[0]['@iot.id'], thingId);
      assert.equal(read.body.value[0].Datastreams[0].Observations[0].result, 3);
      assert.equal(answer[3]!.status, 204);
      assert.equal(answer[3]!.body, undefined);
      assert.match(answer[3]!.headers['location']!, /\/Things\(\d+\)$/);
    });

    test('a change set is atomic: one failure rolls back the others and is the change set\'s only answer', async () => {
      const things = await count('/Things');
      const answer = readAnswer(await post(multipart('b', [
        changeSet('cs', [
          { method: 'POST', url: 'Things', body: thing('Rolled back'), contentId: 'a' },
          { method: 'POST', url: 'Things', body: thing('Bad', { colour: 'red' }), contentId: 'b' },
          { method: 'POST', url: 'Things', body: thing('Never run'), contentId: 'c' },
        ]),
        httpPart({ method: 'GET', url: 'Things(987654)' }),
        httpPart({ method: 'POST', url: 'Things', body: thing('After the failures') }),
      // The spelling of many OData clients: no space, another case.
      ]), 'b', { 'content-type': 'Multipart/Mixed;boundary=b' }));
      assert.deepEqual(answer.map((part) => [part.contentId, part.status]), [['b', 400], [undefined, 404], [undefined, 201]]);
      assert.equal(answer[0]!.headers['content-type'], 'application/problem+json');
      assert.equal(answer[0]!.body.type, 'urn:platform:error:VALIDATION_FAILED');
      assert.equal(answer[0]!.body.fieldErrors[0].field, 'colour');
      assert.equal(answer[1]!.body.status, 404);
      assert.equal(await count('/Things'), things + 1);
      assert.equal(await count("/Things?$filter=name eq 'Rolled back'"), 0);
    });

    test('each request is authorized on its own: a reader\'s writes answer 403 in their parts, its reads run', async () => {
      const reader = await grant(t, uniqueEmail('reader'), ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: sta.datasetId });
      const things = await count('/Things');
      const answer = readAnswer(await post(multipart('b', [
        httpPart({ method: 'GET', url: 'Things?$top=1' }),
        httpPart({ method: 'POST', url: 'Things', body: thing('Not by a reader') }),
        changeSet('cs', [{ method: 'DELETE', url: 'Things(1)', contentId: 'x' }]),
      ]), 'b', { authorization: `Bearer ${reader}` }));
      assert.deepEqual(answer.map((part) => part.status), [200, 403, 403]);
      assert.equal(answer[1]!.body.type, 'urn:platform:error:ACCESS_DENIED');
      assert.equal(answer[2]!.contentId, 'x');
      assert.equal(await count('/Things'), things);
    });

    test('LF line breaks, a quoted boundary, Content-ID in angle brackets and transport padding are read too', async () => {
      const body = [
        '--q b  ',
        httpPart({ method: 'POST', url: 'Things', body: thing('Lf thing'), contentId: '<lf>' }, true),
        '--q b',
        httpPart({ method: 'GET', url: '$lf/name' }, true),
        '--q b--',
      ].join('\n');
      const answer = readAnswer(await post(body, '"q b"'));
      assert.deepEqual(answer.map((part) => [part.contentId, part.status]), [['lf', 201], [undefined, 200]]);
      assert.deepEqual(answer[1]!.body, { name: 'Lf thing' });
    });

    test('a malformed batch answers 400 VALIDATION_FAILED naming what is wrong, and runs nothing', async () => {
      const things = await count('/Things');
      const create = httpPart({ method: 'POST', url: 'Things', body: thing('Must not exist') });
      const cases: Array<[string, string | null, string]> = [
        [multipart('b', [create]), null, 'Content-Type'],
        [multipart('b', [create]), 'x'.repeat(71), 'Content-Type'],
        [`--b\r\n${create}\r\n`, 'b', 'body'],
        ['no delimiter at all', 'b', 'body'],
        [multipart('b', [create, 'Content-Type: text/plain\r\n\r\nGET Things HTTP/1.1']), 'b', 'body'],
        [multipart('b', [create, 'Content-Type: application/http\r\n\r\nFETCH Things HTTP/1.1']), 'b', 'body'],
        [multipart('b', [create, 'Content-Type: application/http\r\n\r\nnot a request line']), 'b', 'body'],
        [multipart('b', [create, `Content-Type: application/http\r\nX-Long: ${'y'.repeat(17_000)}\r\n\r\nGET Things HTTP/1.1`]), 'b', 'body'],
        [multipart('b', [create, `Content-Type: application/http\r\n${'X-Many: 1\r\n'.repeat(101)}\r\nGET Things HTTP/1.1`]), 'b', 'body'],
        [multipart('b', [create, 'Content-Type: application/http\r\nContent-Transfer-Encoding: base64\r\n\r\nR0VU']), 'b', 'body'],
        [multipart('b', [create, changeSet('cs', [{ method: 'GET', url: 'Things' }])]), 'b', 'body'],
        [multipart('b', [create, `Content-Type: multipart/mixed; boundary=outer\r\n\r\n--outer\r\n${changeSet('inner', [{ method: 'POST', url: 'Things', body: thing() }])}\r\n--outer--`]), 'b', 'body'],
        [multipart('b', [create, 'Content-Type: application/http\r\n\r\nPOST Things HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"name": ']), 'b', 'requests[1].body'],
        [multipart('b', [create, `Content-Type: application/http\r\n\r\nPOST Things HTTP/1.1\r\n\r\n${'['.repeat(200)}${']'.repeat(200)}`]), 'b', 'requests[1].body'],
        [multipart('b', [create, 'Content-Type: application/http\r\n\r\nPOST Things HTTP/1.1\r\nContent-Type: text/plain\r\n\r\nhello']), 'b', 'requests[1].body'],
        // The envelope's own checks, on what the parts became: a reference to no earlier request, a repeated Content-ID.
        [multipart('b', [create, httpPart({ method: 'POST', url: '$9/Datastreams', body: datastream() })]), 'b', 'requests[1].url'],
        [multipart('b', [httpPart({ method: 'POST', url: 'Things', body: thing(), contentId: '1' }), httpPart({ method: 'GET', url: 'Things', contentId: '1' })]), 'b', 'requests[1].id'],
        [multipart('b', [create, httpPart({ method: 'POST', url: '$batch', body: {} })]), 'b', 'requests[1].url'],
        [multipart('b', [create, httpPart({ method: 'GET', url: 'https://elsewhere.example/Things' })]), 'b', 'requests[1].url'],
      ];
      for (const [body, boundary, field] of cases) {
        const response = await post(body, boundary);
        expectFieldError(response, field);
        assert.doesNotMatch(response.body, /yyyyyyyy/, 'a header value is not echoed');
      }
      assert.equal(await count('/Things'), things);
    });

    test('at most STA_BATCH_MAX_REQUESTS requests, change set members included; multipart elsewhere than $batch is 415', async () => {
      const get = httpPart({ method: 'GET', url: 'Things?$top=1' });
      const twenty = multipart('b', [...Array.from({ length: 18 }, () => get), changeSet('cs', [
        { method: 'POST', url: 'Things', body: thing('Twentieth') }, { method: 'POST', url: 'Things', body: thing('Twentieth') },
      ])]);
      assert.equal(readAnswer(await post(twenty, 'b')).length, 19);
      const tooMany = multipart('b', [...Array.from({ length: 19 }, () => get), changeSet('cs', [
        { method: 'POST', url: 'Things', body: thing('Twenty-first') }, { method: 'POST', url: 'Things', body: thing('Twenty-first') },
      ])]);
      const refused = expectFieldError(await post(tooMany, 'b'), 'body');
      assert.match(refused.detail, /at most 20/);
      // A million tiny parts stop at the limit, long before the end of the body.
      const started = Date.now();
      expectFieldError(await post(`--b\r\n${'\r\n--b\r\n'.repeat(200_000)}--b--`, 'b'), 'body');
      assert.ok(Date.now() - started < 5_000);
      expectProblem(await post(multipart('b', [get]), 'b', {}, '/Things'), 415, 'UNSUPPORTED_MEDIA_TYPE');
      // An OWS API never takes it either (its XML reader would otherwise see the body).
      const ows = await publishDataset(t, { standard: 'OWS', slug: 'maps' });
      expectProblem(await ows.request('POST', '', multipart('b', [get]), { 'content-type': 'multipart/mixed; boundary=b' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
      assert.equal(await count("/Things?$filter=name eq 'Twenty-first'"), 0);
    });
  });
}
