import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '../helpers/ports.js';
import { after, before, describe, it } from 'node:test';
import { httpConnector } from '../../src/ingest/connectors/http.js';
import type { Connector } from '../../src/ingest/types.js';
import { waitFor } from '../helpers/wait.js';
import { recordingContext } from './connector-context.js';

/** The HTTP polling connector against a real HTTP server of the test's own (node:http). */

type Handler = (request: IncomingMessage, response: ServerResponse, count: number) => void;

describe('HTTP polling connector', () => {
  let server: Server;
  let base: string;
  const handlers = new Map<string, Handler>();
  const seen = new Map<string, IncomingHttpHeaders[]>();
  const connectors: Connector[] = [];

  before(async () => {
    server = createServer((request, response) => {
      const path = new URL(request.url!, 'http://x').pathname;
      const requests = seen.get(path) ?? [];
      requests.push(request.headers);
      seen.set(path, requests);
      const handler = handlers.get(path);
      if (!handler) return void response.writeHead(404).end();
      handler(request, response, requests.length);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await Promise.all(connectors.map((connector) => connector.stop()));
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const start = async (path: string, configuration: Record<string, unknown> = {}) => {
    const recording = recordingContext('HTTP', { url: `${base}${path}`, interval: '1s', ...configuration });
    const connector = await httpConnector(recording.context);
    connectors.push(connector);
    return { ...recording, connector };
  };
  const json = (response: ServerResponse, body: unknown, headers: Record<string, string> = {}) =>
    response.writeHead(200, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

  it('delivers the elements of the array at records_pointer, one record each, with when the answer arrived', async () => {
    handlers.set('/pointer', (_request, response) => json(response, { data: { 'a/b': [{ n: 1 }, { n: 2 }, { n: 3 }] } }));
    const before = new Date();
    const run = await start('/pointer', { records_pointer: '/data/a~1b' });
    await waitFor(() => run.batches.length >= 1, { what: 'a first batch' });
    assert.deepEqual(run.batches[0]!.records.map((record) => record.value), [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const receivedAt = run.batches[0]!.records[0]!.receivedAt;
    assert.ok(receivedAt >= before && receivedAt <= new Date(), 'receivedAt is when the answer came');
    assert.deepEqual(run.states[0], { state: 'RUNNING', message: `polling ${base}/pointer every 1 s` });
    await run.connector.stop();
  });

  it('an object at the pointer is one record; a scalar or nothing there is one unreadable record saying why', async () => {
    handlers.set('/shapes', (_request, response) => json(response, { one: { n: 1 }, scalar: 5 }));
    const object = await start('/shapes', { records_pointer: '/one' });
    const scalar = await start('/shapes', { records_pointer: '/scalar' });
    const absent = await start('/shapes', { records_pointer: '/nowhere' });
    await waitFor(() => object.batches.length && scalar.batches.length && absent.batches.length, { what: 'a batch of each' });
    assert.deepEqual(object.batches[0]!.records.map((record) => [record.value, record.unreadable]), [[{ n: 1 }, undefined]]);
    assert.equal(scalar.batches[0]!.records.length, 1);
    assert.match(scalar.batches[0]!.records[0]!.unreadable ?? '', /number at records_pointer "\/scalar", not an array or object/);
    assert.equal(absent.batches[0]!.records.length, 1);
    assert.match(absent.batches[0]!.records[0]!.unreadable ?? '', /no value at records_pointer \/nowhere/);
    await Promise.all([object.connector.stop(), scalar.connector.stop(), absent.connector.stop()]);
  });

  it('sends If-None-Match with the last ETag: a 304 delivers nothing, a changed answer is delivered', async () => {
    let version = 1;
    handlers.set('/etag', (request, response) => {
      const etag = `"v${version}"`;
      if (request.headers['if-none-match'] === etag) return void response.writeHead(304, { etag }).end();
      json(response, [{ version }], { etag });
    });
    const run = await start('/etag');
    await waitFor(() => (seen.get('/etag')?.length ?? 0) >= 3, { what: 'three polls', timeoutMs: 8_000 });
    const headers = seen.get('/etag')!;
    assert.equal(headers[0]!['if-none-match'], undefined, 'the first poll is unconditional');
    assert.equal(headers[1]!['if-none-match'], '"v1"');
    assert.deepEqual(run.values(), [{ version: 1 }], 'the 304s delivered nothing');
    version = 2;
    await waitFor(() => run.values().length === 2, { what: 'the changed answer', timeoutMs: 5_000 });
    assert.deepEqual(run.values(), [{ version: 1 }, { version: 2 }]);
    await run.connector.stop();
  });

  it('sends If-Modified-Since with the last Last-Modified', async () => {
    const stamp = 'Wed, 21 Oct 2015 07:28:00 GMT';
    handlers.set('/modified', (request, response) => {
      if (request.headers['if-modified-since'] === stamp) return void response.writeHead(304).end();
      json(response, [{ a: 1 }], { 'last-modified': stamp });
    });
    const run = await start('/modified');
    await waitFor(() => (seen.get('/modified')?.length ?? 0) >= 2, { what: 'two polls', timeoutMs: 5_000 });
    assert.equal(seen.get('/modified')![1]!['if-modified-since'], stamp);
    assert.equal(run.batches.length, 1);
    await run.connector.stop();
  });

  it('sends Basic authentication from user and password, and the configured headers', async () => {
    handlers.set('/auth', (_request, response) => json(response, []));
    const run = await start('/auth', { user: 'reader', password: 'pä:ss', headers: { 'X-Api-Token': 't0k3n' } });
    await waitFor(() => seen.get('/auth')?.length, { what: 'a poll' });
    const headers = seen.get('/auth')![0]!;
    assert.equal(headers.authorization, `Basic ${Buffer.from('reader:pä:ss').toString('base64')}`);
    assert.equal(headers['x-api-token'], 't0k3n');
    await run.connector.stop();
  });

  it('an error answer is RETRYING (naming the URL and status, without credentials or query), the next good poll RUNNING', async () => {
    handlers.set('/flaky', (_request, response, count) => {
      if (count === 1) return void response.writeHead(500, 'Internal Server Error').end('boom');
      json(response, [{ ok: true }]);
    });
    const secret = 'hunter2-secret';
    const run = await start('/flaky', { url: `http://user:${secret}@127.0.0.1:${new URL(base).port}/flaky?api_key=${secret}` });
    await waitFor(() => run.states.some((state) => state.state === 'RUNNING'), { what: 'RUNNING after the retry', timeoutMs: 5_000 });
    assert.deepEqual(run.states.map((state) => state.state), ['RETRYING', 'RUNNING']);
    assert.match(run.states[0]!.message, new RegExp(`^${base}/flaky answered 500 Internal Server Error`));
    for (const state of run.states) assert.ok(!state.message.includes(secret) && !state.message.includes('user:'), state.message);
    assert.equal(seen.get('/flaky')![0]!.authorization, `Basic ${Buffer.from(`user:${secret}`).toString('base64')}`, 'URL credentials are sent as Basic');
    assert.deepEqual(run.values(), [{ ok: true }]);
    await run.connector.stop();
  });

  it('a refused connection and a body that is not JSON are RETRYING', async () => {
    // A port nothing listens on (one of this process's own: no other test binds it meanwhile).
    const port = await freePort();
    const refused = await start('/', { url: `http://127.0.0.1:${port}/gone` });
    handlers.set('/text', (_request, response) => void response.writeHead(200, { 'content-type': 'text/plain' }).end('not json'));
    const text = await start('/text');
    await waitFor(() => refused.states.length && text.states.length, { what: 'both reported' });
    assert.equal(refused.states[0]!.state, 'RETRYING');
    assert.match(refused.states[0]!.message, /ECONNREFUSED/);
    assert.equal(text.states[0]!.state, 'RETRYING');
    assert.match(text.states[0]!.message, /the answer is not JSON/);
    assert.equal(text.batches.length, 0);
    await Promise.all([refused.connector.stop(), text.connector.stop()]);
  });

  it('an answer larger than 16 MiB is refused while it streams, declared or not', async () => {
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    let sentBytes = 0;
    handlers.set('/large', (_request, response) => {
      // Chunked, without Content-Length: only counting while reading can refuse it.
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('[');
      let chunks = 0;
      const more = () => {
        while (chunks < 64) {
          chunks++;
          sentBytes += chunk.length;
          if (!response.write(chunk)) return void response.once('drain', more);
        }
        response.end(']');
      };
      response.on('error', () => {});
      more();
    });
    handlers.set('/declared', (_request, response) => void response.writeHead(200, { 'content-length': String(17 * 1024 * 1024) }).end());
    const large = await start('/large');
    const declared = await start('/declared');
    await waitFor(() => large.states.length && declared.states.length, { what: 'both refused', timeoutMs: 10_000 });
    for (const run of [large, declared]) {
      assert.equal(run.states[0]!.state, 'RETRYING');
      assert.match(run.states[0]!.message, /larger than 16777216 bytes, refused/);
      assert.equal(run.batches.length, 0);
    }
    await Promise.all([large.connector.stop(), declared.connector.stop()]);
    assert.ok(sentBytes < 64 * chunk.length, `the server did not get to send all of it (${sentBytes} bytes)`);
  });

  it('stop() ends the polling: no request after it', async () => {
    handlers.set('/stop', (_request, response) => json(response, [{ a: 1 }]));
    const run = await start('/stop');
    await waitFor(() => (seen.get('/stop')?.length ?? 0) >= 2, { what: 'two polls', timeoutMs: 5_000 });
    await run.connector.stop();
    const count = seen.get('/stop')!.length;
    // Another connector polling every second shows time passing by two of its polls.
    handlers.set('/clock', (_request, response) => json(response, []));
    const clock = await start('/clock');
    await waitFor(() => (seen.get('/clock')?.length ?? 0) >= 3, { what: 'three polls of another connector', timeoutMs: 5_000 });
    await clock.connector.stop();
    assert.equal(seen.get('/stop')!.length, count);
  });

  it('stop() aborts a request in flight', async () => {
    let closedEarly = false;
    handlers.set('/slow', (request) => {
      request.socket.on('close', () => { closedEarly = true; });
    });
    const run = await start('/slow', { interval: '30s' });
    await waitFor(() => seen.get('/slow')?.length, { what: 'the request to arrive' });
    await run.connector.stop();
    await waitFor(() => closedEarly, { what: 'the connection to be closed by the stop' });
    assert.equal(run.batches.length, 0);
    assert.equal(run.states.length, 0, 'a stop is not a failure to report');
  });
});
