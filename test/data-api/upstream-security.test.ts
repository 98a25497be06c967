import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { expectFieldError, expectProblem, grant, uniqueEmail } from '../helpers/factories.js';
import { publishDataset, type PublishedDataset } from '../helpers/sta-dataset.js';

// Upstream mode under attack (issue 16, findings 2, 7 and 8): the upstream trusts the gateway, so
// what it receives must be only what the caller may do. The upstream here is a real HTTP server in
// FROST-Server's shapes that records every request it receives, headers included.

type Json = Record<string, any>;
interface Seen { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }

const ROOT = '/FROST-Server/v1.1';
const STORED = { name: 'stored name', description: 'stored description', properties: { secret: 'only readers may see this' } };

async function recordingFrost() {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const root = `http://${req.headers.host}${ROOT}`;
      res.setHeader('content-type', 'application/json; charset=utf-8');
      res.setHeader('set-cookie', 'JSESSIONID=upstream-session; Path=/');
      if (/\/\$batch$/i.test(req.url!.split('?')[0]!)) {
        // Answers each request of the batch it got, in FROST's shapes.
        const requests = (JSON.parse(body) as { requests: Json[] }).requests;
        return void res.end(JSON.stringify({ responses: requests.map((r) => answerOf(r['method'].toUpperCase(), root, r)) }));
      }
      const answer = answerOf(req.method!, root, body === '' ? {} : { body: JSON.parse(body) });
      res.statusCode = answer.status;
      if (answer.headers?.location) res.setHeader('location', answer.headers.location);
      res.end(answer.body === undefined ? undefined : JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { seen, origin, close: () => new Promise((resolve) => server.close(resolve)) };
}

function answerOf(method: string, root: string, request: Json): { id?: string; status: number; headers?: Json; body?: Json } {
  const id = request['id'] === undefined ? {} : { id: request['id'] };
  if (method === 'POST') return { ...id, status: 201, headers: { location: `${root}/Things(7)` }, body: { '@iot.id': 7, '@iot.selfLink': `${root}/Things(7)`, ...(request['body'] ?? {}) } };
  if (method === 'DELETE') return { ...id, status: 204 };
  // GET, PATCH and PUT answer the stored entity, as FROST-Server does.
  return { ...id, status: 200, body: { '@iot.id': 1, '@iot.selfLink': `${root}/Things(1)`, ...STORED } };
}

const batchOf = (...requests: Json[]) => ({ requests });

describe('upstream mode under attack', () => {
  let t: TestApp;
  let frost: Awaited<ReturnType<typeof recordingFrost>>;
  let closed: PublishedDataset;
  let open: PublishedDataset;
  let reader: string;
  let writer: string;
  let readerWriter: string;
  before(async () => {
    frost = await recordingFrost();
    t = await buildTestApp('pglite', { STA_UPSTREAM_ORIGINS: frost.origin, STA_BATCH_MAX_REQUESTS: '5' });
    closed = await publishDataset(t, { slug: 'closed', upstreamUrl: `${frost.origin}${ROOT}` });
    open = await publishDataset(t, { slug: 'open', openDataAccess: true, upstreamUrl: `${frost.origin}${ROOT}` });
    const scope = { scopeType: 'DATASET' as const, scopeId: closed.datasetId };
    reader = await grant(t, uniqueEmail('reader'), ['DATASET_PAYLOAD_READ'], scope);
    writer = await grant(t, uniqueEmail('writer'), ['DATASET_PAYLOAD_WRITE'], scope);
    readerWriter = await grant(t, uniqueEmail('reader-writer'), ['DATASET_PAYLOAD_READ', 'DATASET_PAYLOAD_WRITE'], scope);
  });
  after(async () => {
    await t.close();
    await frost.close();
  });

  const as = (token: string | null, extra: Record<string, string> = {}) => ({ authorization: token === null ? null : `Bearer ${token}`, ...extra });
  /** The requests the upstream received while `work` ran. */
  async function received(work: () => Promise<unknown>): Promise<Seen[]> {
    const before = frost.seen.length;
    await work();
    return frost.seen.slice(before);
  }
  const statuses = (response: LightMyRequestResponse) => response.json().responses.map((r: Json) => [r.id, r.status]);

  describe('$batch, authorized request by request', () => {
    test('a reader\'s batch: only its reads reach the upstream; its writes answer 403 in the batch, what depends on them 424, in order', async () => {
      let answer!: LightMyRequestResponse;
      const upstream = await received(async () => {
        answer = await closed.request('POST', '/$batch', batchOf(
          { id: 'r1', method: 'get', url: 'Things(1)' },
          { id: 'w1', method: 'post', url: 'Things', body: { name: 'injected', description: 'd' } },
          { id: 'w2', method: 'delete', url: 'Things(1)' },
          { id: 'd1', method: 'get', url: '$w1/Datastreams' },
          { id: 'd2', method: 'get', url: 'Things(2)', dependsOn: ['w2'] },
        ), as(reader));
      });
      assert.equal(answer.statusCode, 200, answer.body);
      assert.deepEqual(statuses(answer), [['r1', 200], ['w1', 403], ['w2', 403], ['d1', 424], ['d2', 424]]);
      const [read, write] = answer.json().responses;
      assert.equal(read.body['@iot.selfLink'], `${closed.publicBase}/Things(1)`);
      assert.equal(write.body.type, 'urn:platform:error:ACCESS_DENIED');
      assert.match(write.body.detail, /DATASET_PAYLOAD_WRITE/);
      // The upstream got one batch, rebuilt by the gateway, holding the read only.
      assert.deepEqual(upstream.map((s) => [s.method, s.url]), [['POST', `${ROOT}/$batch`]]);
      assert.deepEqual(JSON.parse(upstream[0]!.body), { requests: [{ id: 'r1', method: 'get', url: 'Things(1)' }] });
    });

    test('anonymous on open data: a batch of writes reaches nothing upstream; each write answers 403', async () => {
      let answer!: LightMyRequestResponse;
      const upstream = await received(async () => {
        answer = await open.request('POST', '/$batch', batchOf(
          { id: 'create', method: 'post', url: 'Things', body: { name: 'x', description: 'y' } },
          { id: 'remove', method: 'delete', url: `${open.publicBase}/Things(1)` },
          { id: 'change', method: 'patch', url: 'v1.1/Things(1)', body: { name: 'z' } },
        ), as(null));
      });
      assert.equal(answer.statusCode, 200, answer.body);
      assert.deepEqual(statuses(answer), [['create', 403], ['remove', 403], ['change', 403]]);
      assert.deepEqual(upstream, []);
    });

    test('a write-only caller\'s batch: reads answer 403, an atomicity group holding one never reaches the upstream, an update answers 204 without a body', async () => {
      let answer!: LightMyRequestResponse;
      const upstream = await received(async () => {
        // `/v1.1/$Batch`: the alias and another case are still a batch, authorized request by request.
        answer = await closed.request('POST', '/v1.1/$Batch', batchOf(
          { id: 'g1', atomicityGroup: 'g', method: 'post', url: 'Things', body: { name: 'n', description: 'd' } },
          { id: 'g2', atomicityGroup: 'g', method: 'get', url: 'Things(1)' },
          { id: 'p1', method: 'patch', url: 'Things(1)', body: {} },
          { id: 'c1', method: 'post', url: 'Datastreams', body: { name: 'ds', Thing: { '@iot.id': '$g1' } } },
          { id: 'c2', method: 'post', url: 'Things', body: { name: 'm', description: 'd' }, dependsOn: ['g'] },
        ), as(writer));
      });
      assert.equal(answer.statusCode, 200, answer.body);
      assert.deepEqual(statuses(answer), [['g1', 424], ['g2', 403], ['p1', 204], ['c1', 424], ['c2', 424]]);
      const patched = answer.json().responses[2];
      assert.deepEqual(patched, { id: 'p1', status: 204 });
      assert.doesNotMatch(answer.body, /stored/);
      assert.deepEqual(upstream.length, 1);
      assert.deepEqual(JSON.parse(upstream[0]!.body), { requests: [{ id: 'p1', method: 'patch', url: 'Things(1)', body: {} }] });
    });

    test('a multipart batch: authorized request by request, the upstream gets the rebuilt JSON batch, the caller a multipart answer', async () => {
      const http = (request: string, contentId?: string) =>
        `Content-Type: application/http\r\n${contentId ? `Content-ID: ${contentId}\r\n` : ''}\r\n${request}`;
      const body = [
        '--b', http('GET /v1.1/Things(1) HTTP/1.1\r\nHost: x'),
        '--b', 'Content-Type: multipart/mixed; boundary=cs', '',
        '--cs', http('POST Things HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"name":"n","description":"d"}', '1'),
        '--cs', http('POST $1/Datastreams HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"name":"ds"}', '2'),
        '--cs--',
        '--b--', '',
      ].join('\r\n');
      let answer!: LightMyRequestResponse;
      const upstream = await received(async () => {
        answer = await closed.request('POST', '/$batch', body, as(reader, { 'content-type': 'multipart/mixed; boundary=b' }));
      });
      assert.equal(answer.statusCode, 200, answer.body);
      const boundary = /^multipart\/mixed; boundary=(.+)$/.exec(String(answer.headers['content-type']))?.[1];
      assert.ok(boundary, String(answer.headers['content-type']));
      const parts = answer.body.split(`--${boundary}`).slice(1, -1);
      assert.equal(parts.length, 2);
      assert.match(parts[0]!, /HTTP\/1\.1 200 OK/);
      assert.ok(parts[0]!.includes(`${closed.publicBase}/Things(1)`), parts[0]);
      // The change set failed as a whole: its one answer is the refused write, with its Content-ID.
      assert.match(parts[1]!, /Content-ID: 1\r\n\r\nHTTP\/1\.1 403 Forbidden/);
      assert.deepEqual(upstream.map((s) => [s.method, s.url]), [['POST', `${ROOT}/$batch`]]);
      assert.equal(upstream[0]!.headers['content-type'], 'application/json');
      assert.deepEqual(JSON.parse(upstream[0]!.body), { requests: [{ id: 'part1', method: 'get', url: 'Things(1)' }] });
    });

    test('a batch the gateway cannot parse, or whose urls leave the API, never reaches the upstream', async () => {
      const gateway = closed.gateway;
      const raw = (payload: string, contentType: string) => gateway.inject({
        method: 'POST', url: `${closed.base}/$batch`, headers: { authorization: `Bearer ${readerWriter}`, 'content-type': contentType }, payload,
      });
      // A multipart batch that is malformed, or that names a url off the API, is refused like a JSON one.
      const part = (line: string) => `Content-Type: application/http\r\n\r\n${line}\r\nContent-Type: application/json\r\n\r\n{"name":"x"}`;
      const unclosed = `--b\r\n${part('POST Things HTTP/1.1')}\r\n`;
      const offTheApi = `--b\r\n${part(`POST ${open.publicBase}/Things HTTP/1.1`)}\r\n--b--\r\n`;
      const upstream = await received(async () => {
        expectFieldError(await raw(unclosed, 'multipart/mixed; boundary=b'), 'body');
        expectFieldError(await raw(offTheApi, 'multipart/mixed; boundary=b'), 'requests[0].url');
        for (const response of [await raw('<requests/>', 'text/xml'), await raw('requests=1', 'application/x-www-form-urlencoded')]) {
          assert.equal(response.statusCode, 415, response.body);
          assert.equal(response.json().type, 'urn:platform:error:UNSUPPORTED_MEDIA_TYPE');
        }
        expectFieldError(await closed.request('POST', '/$batch', { requests: 'all of them' }, as(readerWriter)), 'requests');
        expectFieldError(await closed.request('POST', '/$batch', batchOf({ id: 'a', method: 'get', url: '../../other/Things' }), as(readerWriter)), 'requests[0].url');
        expectFieldError(await closed.request('POST', '/$batch', batchOf({ id: 'a', method: 'get', url: 'Things/%2E%2E/%2e%2e/x' }), as(readerWriter)), 'requests[0].url');
        expectFieldError(await closed.request('POST', '/$batch', batchOf({ id: 'a', method: 'post', url: '%24batch', body: {} }), as(readerWriter)), 'requests[0].url');
        expectFieldError(await closed.request('POST', '/$batch', batchOf({ id: 'a', method: 'get', url: `${open.publicBase}/Things` }), as(readerWriter)), 'requests[0].url');
        const tooMany = batchOf(...Array.from({ length: 6 }, (_, i) => ({ id: `r${i}`, method: 'get', url: 'Things' })));
        assert.match(expectFieldError(await closed.request('POST', '/$batch', tooMany, as(readerWriter)), 'requests').detail, /at most 5/);
        expectProblem(await closed.request('PATCH', '/$batch', batchOf({ id: 'a', method: 'get', url: 'Things' }), as(readerWriter)), 405, 'MALFORMED_REQUEST');
      });
      assert.deepEqual(upstream, []);
    });
  });

  describe('paths and queries, rebuilt by the gateway', () => {
    let port: number;
    before(async () => {
      await closed.gateway.listen({ port: 0, host: '127.0.0.1' });
      port = (closed.gateway.server.address() as AddressInfo).port;
    });
    /** A request whose path is sent byte for byte as written (no client-side normalisation). */
    const rawRequest = (method: string, path: string, token: string, body?: string) => new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = http.request({
        host: '127.0.0.1', port, method, path: `${closed.base}${path}`,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => { text += chunk; });
        response.on('end', () => resolve({ status: response.statusCode!, body: text }));
      });
      request.on('error', reject);
      request.end(body);
    });

    test('dot segments in every spelling stay inside the API or answer 400, never 5xx; the upstream only sees paths below its root', async () => {
      const inside: Array<[string, string]> = [
        ['/Things/%2e%2e/Sensors', `${ROOT}/Sensors`],
        ['/Things/./%2E%2E/Sensors(1)', `${ROOT}/Sensors(1)`],
        ['/v1.1/Things/.%2E/Observations', `${ROOT}/Observations`],
        ['/Things;jsessionid=x', `${ROOT}/Things%3Bjsessionid=x`],
      ];
      for (const [path, expected] of inside) {
        const upstream = await received(async () => {
          const answer = await rawRequest('GET', path, readerWriter);
          assert.equal(answer.status, 200, `${path}: ${answer.body}`);
        });
        assert.deepEqual(upstream.map((s) => s.url), [expected], path);
      }
      const outside = [
        '/..', '/../other/Things', '/%2e%2e', '/%2E%2E/%2e%2e/x', '/.%2E/x', '/%2e./x', '/Things/%2e%2e/%2e%2e/%2e%2e',
        '/Things%2f..%2f..%2fx', '/Things%2F%2E%2E', '/Things%5c..%5cx', '/Things\\..\\..\\x', '/..;/..;/x', '/Things/..%3B/..%3B/x', '/%zz',
      ];
      const upstream = await received(async () => {
        for (const path of outside) {
          const answer = await rawRequest('GET', path, readerWriter);
          assert.ok(answer.status === 400, `${path}: ${answer.status} ${answer.body}`);
          assert.match(JSON.parse(answer.body).type, /urn:platform:error:(VALIDATION_FAILED|MALFORMED_REQUEST)/, path);
        }
        const escape = await rawRequest('GET', '/Things/%2e%2e/%2e%2e/x', readerWriter);
        assert.equal(JSON.parse(escape.body).fieldErrors[0].field, 'path');
      });
      assert.deepEqual(upstream, []);
    });

    test('every path of up to three tricky pieces: never 5xx, and what reaches the upstream stays below its root for a lenient server too', async () => {
      const pieces = ['..', '.', '%2e%2e', '.%2E', '%2F', '%5C', '\\', '..;', '%252e%252e', 'Things(1)'];
      const paths = new Set<string>();
      const walk = (prefix: string, depth: number) => {
        if (depth > 0) paths.add(prefix);
        if (depth === 3) return;
        for (const piece of pieces) walk(`${prefix}/${piece}`, depth + 1);
      };
      walk('', 0);
      const statuses = new Set<number>();
      const upstream = await received(async () => {
        for (const path of paths) {
          const answer = await rawRequest('GET', path, readerWriter);
          statuses.add(answer.status);
          assert.ok(answer.status < 500, `${path}: ${answer.status} ${answer.body}`);
        }
      });
      // Both outcomes happened: some paths were refused, some forwarded.
      assert.ok(statuses.has(400) && statuses.has(200), [...statuses].join());
      assert.ok(upstream.length > 0);
      for (const { url } of upstream) {
        assert.ok(url === ROOT || url.startsWith(`${ROOT}/`), url);
        // As the most lenient server would read it: path parameters cut, decoded twice, both slashes.
        const segments = url.slice(ROOT.length).split('/').map((s) => decodeURIComponent(decodeURIComponent(s.split(';')[0]!))).flatMap((s) => s.split(/[/\\]/));
        assert.ok(!segments.includes('..'), url);
      }
    });

    test('a batch spelled with dot segments is still a batch: a write-only caller cannot read through it', async () => {
      let answer!: { status: number; body: string };
      const upstream = await received(async () => {
        answer = await rawRequest('POST', '/Things/%2e%2e/$batch', writer, JSON.stringify(batchOf({ id: 'r', method: 'get', url: 'Things(1)' })));
      });
      assert.equal(answer.status, 200, answer.body);
      assert.deepEqual(JSON.parse(answer.body).responses.map((r: Json) => [r.id, r.status]), [['r', 403]]);
      assert.deepEqual(upstream, []);
    });

    test('the query is rebuilt with the same meaning and bounded like our own options', async () => {
      const upstream = await received(async () => {
        const answer = await closed.request('GET', `/Things?$filter=name%20eq%20'a+b%2Bc'&$top=1&$filter2=..%2F..%2Fx&flag`, undefined, as(reader));
        assert.equal(answer.statusCode, 200, answer.body);
      });
      assert.equal(upstream[0]!.url, `${ROOT}/Things?$filter=name%20eq%20%27a+b%2Bc%27&$top=1&$filter2=../../x&flag`);
      const refused = await received(async () => {
        const long = `name eq '${'x'.repeat(8200)}'`;
        assert.match(expectFieldError(await closed.request('GET', `/Things?$filter=${encodeURIComponent(long)}`, undefined, as(reader)), '$filter').detail, /8192/);
        expectFieldError(await closed.request('GET', `/Things?$expand=${'Datastreams/'.repeat(700)}Sensor`, undefined, as(reader)), '$expand');
        expectProblem(await closed.request('GET', '/Things?$filter=%zz', undefined, as(reader)), 400, 'MALFORMED_REQUEST');
      });
      assert.deepEqual(refused, []);
    });
  });

  test('headers: an allowlist reaches the upstream; credentials, hop-by-hop and the client\'s proxy headers never do', async () => {
    const upstream = await received(async () => {
      const answer = await closed.request('POST', '/Things', { name: 'n', description: 'd' }, {
        authorization: `Bearer ${readerWriter}`,
        accept: 'application/json',
        prefer: 'return=representation',
        'if-none-match': '*',
        'x-request-id': 'request-4711',
        connection: 'keep-alive, prefer, x-hop',
        'x-hop': 'named by Connection',
        'keep-alive': 'timeout=5',
        te: 'trailers',
        trailer: 'expires',
        'proxy-authorization': 'Basic c2VjcmV0OnNlY3JldA==',
        cookie: 'session=secret',
        forwarded: 'for=10.0.0.1;host=internal.example;proto=https',
        'x-real-ip': '10.0.0.1',
        'x-forwarded-for': '10.0.0.1',
        'x-forwarded-host': 'internal.example',
        'x-forwarded-proto': 'https',
        'x-forwarded-port': '8443',
        'x-allowed-scope-ids': '*',
        'x-internal-secret': 'not for the upstream',
      });
      assert.equal(answer.statusCode, 201, answer.body);
      // The upstream's cookie is not set on our domain.
      assert.equal(answer.headers['set-cookie'], undefined);
    });
    const headers = upstream[0]!.headers;
    const publicUrl = new URL(closed.publicBase);
    for (const name of ['authorization', 'proxy-authorization', 'cookie', 'x-real-ip', 'x-forwarded-port', 'x-allowed-scope-ids', 'x-internal-secret', 'x-hop', 'prefer', 'keep-alive', 'te', 'trailer']) {
      assert.equal(headers[name], undefined, `${name} reached the upstream`);
    }
    assert.deepEqual(
      [headers['accept'], headers['if-none-match'], headers['x-request-id'], headers['content-type']],
      ['application/json', '*', 'request-4711', 'application/json'],
    );
    assert.deepEqual(
      [headers['x-forwarded-for'], headers['x-forwarded-host'], headers['x-forwarded-proto'], headers['forwarded']],
      ['127.0.0.1', publicUrl.host, publicUrl.protocol.replace(':', ''), `for=127.0.0.1;proto=${publicUrl.protocol.replace(':', '')};host="${publicUrl.host}"`],
    );
    assert.deepEqual(JSON.parse(upstream[0]!.body), { name: 'n', description: 'd' });
  });

  test('a write-only caller\'s update answers 204 without the upstream\'s body; a create answers as usual; a reader-writer gets the entity', async () => {
    for (const method of ['PATCH', 'PUT'] as const) {
      const upstream = await received(async () => {
        const answer = await closed.request(method, '/Things(1)', method === 'PATCH' ? {} : { name: 'n', description: 'd' }, as(writer));
        assert.equal(answer.statusCode, 204, answer.body);
        assert.equal(answer.body, '');
        assert.equal(answer.headers['content-type'], undefined);
      });
      // It did reach the upstream, which answered the stored entity.
      assert.deepEqual(upstream.map((s) => [s.method, s.url]), [[method, `${ROOT}/Things(1)`]]);
    }
    const control = await closed.request('PATCH', '/Things(1)', {}, as(readerWriter));
    assert.equal(control.statusCode, 200);
    assert.equal(control.json().properties.secret, STORED.properties.secret);
    const created = await closed.request('POST', '/Things', { name: 'mine', description: 'd' }, as(writer));
    assert.equal(created.statusCode, 201, created.body);
    assert.equal(created.json()['@iot.selfLink'], `${closed.publicBase}/Things(7)`);
    assert.equal(created.json().name, 'mine');
    // A body that is not JSON never reaches the upstream as raw bytes.
    const upstream = await received(async () => {
      const xml = await closed.gateway.inject({ method: 'POST', url: `${closed.base}/Things`, headers: { authorization: `Bearer ${writer}`, 'content-type': 'text/xml' }, payload: '<Thing/>' });
      expectProblem(xml, 415, 'UNSUPPORTED_MEDIA_TYPE');
    });
    assert.deepEqual(upstream, []);
  });
});
