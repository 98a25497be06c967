import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { STATUS_CODES } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { buildApp } from '../../src/app.js';
import { buildDataApiApp } from '../../src/data-api/gateway.app.js';
import { createLogger } from '../../src/logger.js';
import { waitFor } from '../helpers/wait.js';

// What the router and the HTTP parser refuse, before any route runs, still answers a problem
// object on both listeners. Over a real socket: inject would bypass Node's HTTP parser.

interface RawResponse { status: number; headers: Record<string, string>; body: string }

/** Writes raw bytes on a fresh connection and reads everything the server sends until it closes. */
function exchange(port: number, request: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    // A server that closes while the client still writes may reset; what arrived before counts.
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' || error.code === 'EPIPE' ? undefined : reject(error)));
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = head.split('\r\n');
      const headers = Object.fromEntries(headerLines.map((line) => {
        const colon = line.indexOf(':');
        return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
      }));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
    socket.write(request);
  });
}

function assertProblem(response: RawResponse, status: number, code: string) {
  assert.equal(response.status, status, response.body);
  assert.match(response.headers['content-type'] ?? '', /^application\/problem\+json/);
  const problem = JSON.parse(response.body);
  assert.equal(problem.type, `urn:platform:error:${code}`);
  assert.equal(problem.title, STATUS_CODES[status]);
  assert.equal(problem.status, status);
  assert.equal(typeof problem.detail, 'string');
  assert.equal(typeof problem.instance, 'string');
  return problem as { detail: string; instance: string; fieldErrors?: Array<{ field: string; message: string }> };
}

describe('framework-level refusals over a real socket', () => {
  let t: TestApp;
  const lines: Array<Record<string, unknown>> = [];
  const listeners: Array<{ name: string; app: FastifyInstance; port: number }> = [];
  before(async () => {
    t = await buildTestApp('pglite');
    const sink = new Writable({ write(chunk, _encoding, done) { lines.push(...String(chunk).split('\n').filter(Boolean).map((line) => JSON.parse(line))); done(); } });
    for (const [name, build] of [['management API', buildApp], ['data API', buildDataApiApp]] as const) {
      const app = await build(t.ctx, createLogger('info', sink));
      await app.listen({ port: 0, host: '127.0.0.1' });
      listeners.push({ name, app, port: (app.server.address() as AddressInfo).port });
    }
  });
  after(async () => {
    for (const { app } of listeners) await app.close();
    await t.close();
  });

  const get = (path: string, extra = '') => `GET ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${t.adminToken}\r\n${extra}Connection: close\r\n\r\n`;

  test('a malformed percent-encoding in the path answers 400 MALFORMED_REQUEST', async () => {
    for (const { name, port } of listeners) {
      const response = await exchange(port, get('/v1/groups/%E0%A4%A'));
      const problem = assertProblem(response, 400, 'MALFORMED_REQUEST');
      assert.equal(problem.instance, '/v1/groups/%E0%A4%A', name);
      assert.ok(response.headers['x-request-id'], `${name}: request id header`);
    }
  });

  test('a path parameter over the router limit answers 400 VALIDATION_FAILED; under it, the parameter is named', async () => {
    const longPaths = [`/v1/groups/${'a'.repeat(101)}`, `/v1/datasets/${'a'.repeat(101)}/weather`];
    for (const [index, { port }] of listeners.entries()) {
      const problem = assertProblem(await exchange(port, get(longPaths[index]!)), 400, 'VALIDATION_FAILED');
      assert.deepEqual(problem.fieldErrors?.map((error) => error.field), ['path']);
    }
    const management = listeners[0]!.port;
    const problem = assertProblem(await exchange(management, get(`/v1/groups/${'a'.repeat(100)}`)), 400, 'VALIDATION_FAILED');
    assert.deepEqual(problem.fieldErrors, [{ field: 'id', message: 'must be a valid uuid' }]);
  });

  test('a malformed Content-Length answers 400 MALFORMED_REQUEST and closes the connection', async () => {
    for (const { port } of listeners) {
      const response = await exchange(port, 'POST /v1/groups?secret=x HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 12abc\r\n\r\n{"name":"x"}');
      const problem = assertProblem(response, 400, 'MALFORMED_REQUEST');
      assert.equal(response.headers['connection'], 'close');
      assert.equal(problem.instance, '/v1/groups');
      assert.equal(Number(response.headers['content-length']), Buffer.byteLength(response.body));
    }
  });

  test('other parser errors (a bad header line, a bad chunk) answer 400 MALFORMED_REQUEST', async () => {
    for (const { port } of listeners) {
      assertProblem(await exchange(port, 'GET /v1/groups HTTP/1.1\r\nHost: localhost\r\nBad Header\r\n\r\n'), 400, 'MALFORMED_REQUEST');
      assertProblem(await exchange(port, 'POST /v1/groups HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n'), 400, 'MALFORMED_REQUEST');
    }
  });

  test('headers over 16 KiB answer 431 with a problem body', async () => {
    for (const { port } of listeners) {
      const response = await exchange(port, get('/v1/groups', `X-Padding: ${'p'.repeat(17 * 1024)}\r\n`));
      const problem = assertProblem(response, 431, 'MALFORMED_REQUEST');
      assert.equal(problem.instance, '/v1/groups');
      assert.equal(response.headers['connection'], 'close');
    }
  });

  test('a well-formed request on the same listeners still works', async () => {
    const response = await exchange(listeners[0]!.port, get('/v1/groups'));
    assert.equal(response.status, 200);
  });

  test('a client that disconnects mid-body is logged at info, not as an error', async () => {
    const { port } = listeners[0]!;
    const before = lines.length;
    await new Promise<void>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.write(`POST /v1/groups HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${t.adminToken}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":"half`);
        setTimeout(() => socket.destroy(), 100);
      });
      socket.on('close', () => resolve());
    });
    // The server notices the closed connection a moment later: wait for its log line.
    const noticed = () => lines.slice(before).some((line) => line['level'] === 30 && /closed the connection/.test(String(line['msg'])));
    await waitFor(noticed, { what: 'the info line about the closed connection', last: () => JSON.stringify(lines.slice(before)) });
    const logged = lines.slice(before);
    assert.deepEqual(logged.filter((line) => Number(line['level']) >= 50), []);
  });

  test('none of the refusals above was logged as an error', () => {
    assert.deepEqual(lines.filter((line) => Number(line['level']) >= 50), []);
  });
});
