// The FastCGI client reads records as they come, in whatever pieces the socket delivers them: a
// fake responder on a unix socket checks the request's encoding and answers in awkward pieces.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setImmediate as tick } from 'node:timers/promises';
import { FastCgiConnection } from '../../src/ows/fastcgi.js';

function record(type: number, content: Buffer, padding = (8 - (content.length % 8)) % 8): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt8(1, 0);
  header.writeUInt8(type, 1);
  header.writeUInt16BE(1, 2);
  header.writeUInt16BE(content.length, 4);
  header.writeUInt8(padding, 6);
  return Buffer.concat([header, content, Buffer.alloc(padding)]);
}

/** The records of a request as the responder reads them: type and content, in order. */
function readRecords(bytes: Buffer): Array<{ type: number; content: Buffer }> {
  const records = [];
  for (let at = 0; at + 8 <= bytes.length;) {
    const length = bytes.readUInt16BE(at + 4);
    records.push({ type: bytes.readUInt8(at + 1), content: bytes.subarray(at + 8, at + 8 + length) });
    at += 8 + length + bytes.readUInt8(at + 6);
  }
  return records;
}

function readParams(content: Buffer): Record<string, string> {
  const params: Record<string, string> = {};
  const length = (at: number): [number, number] => (content[at]! < 128 ? [content[at]!, at + 1] : [content.readUInt32BE(at) & 0x7fffffff, at + 4]);
  for (let at = 0; at < content.length;) {
    const [n, afterName] = length(at);
    const [v, afterValue] = length(afterName);
    params[content.subarray(afterValue, afterValue + n).toString('utf8')] = content.subarray(afterValue + n, afterValue + n + v).toString('utf8');
    at = afterValue + n + v;
  }
  return params;
}

describe('FastCGI client: records in any pieces', () => {
  let dir: string;
  let socketPath: string;
  let server: net.Server;
  let pieces = 1;
  let received: Buffer = Buffer.alloc(0);
  let answer: Buffer = Buffer.alloc(0);

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fcgi-'));
    socketPath = path.join(dir, 's.sock');
    server = net.createServer((socket) => {
      const chunks: Buffer[] = [];
      socket.on('data', async (chunk) => {
        chunks.push(chunk);
        const all = Buffer.concat(chunks);
        // The request ends with an empty STDIN record.
        const records = readRecords(all);
        if (!records.some((r) => r.type === 5 && r.content.length === 0)) return;
        received = all;
        // The answer in pieces of 1, 2, … `pieces` bytes, each written on its own turn.
        for (let at = 0, size = 1; at < answer.length; at += size, size = (size % pieces) + 1) {
          socket.write(answer.subarray(at, at + size));
          await tick();
        }
        socket.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  });
  after(async () => {
    await new Promise((resolve) => server.close(resolve));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a request is BEGIN_REQUEST, PARAMS and STDIN records, long values and bodies included', async () => {
    const body = Buffer.alloc(70_000, 'x');
    const long = 'v'.repeat(300);
    answer = Buffer.concat([record(6, Buffer.from('Status: 200 OK\r\nContent-Type: text/plain\r\n\r\nok')), record(3, Buffer.alloc(8))]);
    const response = await new FastCgiConnection(socketPath, false).request({ QUERY_STRING: 'a=1', LONG: long, 'Ü': 'ü' }, body);
    assert.equal(response.body.toString(), 'ok');
    const records = readRecords(received);
    assert.equal(records[0]!.type, 1);
    assert.equal(records[0]!.content.readUInt16BE(0), 1, 'the responder role');
    assert.equal(records[0]!.content.readUInt8(2), 0, 'the connection is not kept');
    const params = readParams(Buffer.concat(records.filter((r) => r.type === 4).map((r) => r.content)));
    assert.deepEqual(params, { QUERY_STRING: 'a=1', LONG: long, 'Ü': 'ü' });
    const stdin = records.filter((r) => r.type === 5);
    assert.ok(stdin.length >= 3, 'a body over 65,535 bytes spans records');
    assert.ok(Buffer.concat(stdin.map((r) => r.content)).equals(body));
    for (let at = 0; at < received.length;) {
      assert.equal(at % 8, 0, 'records are padded to 8 bytes');
      at += 8 + received.readUInt16BE(at + 4) + received.readUInt8(at + 6);
    }
  });

  test('headers, contents, paddings and END_REQUEST cut anywhere: the same answer, STDERR apart', async () => {
    const text = `Content-Type: application/json\r\n\r\n${JSON.stringify({ features: Array.from({ length: 300 }, (_, n) => ({ n, name: `Tree ${n} – ü` })) })}`;
    const bytes = Buffer.from(text);
    const records: Buffer[] = [];
    for (let at = 0, size = 1; at < bytes.length; at += size, size = (size * 7) % 8191 + 1) records.push(record(6, bytes.subarray(at, at + size)));
    records.splice(3, 0, record(7, Buffer.from('a warning')));
    records.push(record(6, Buffer.alloc(0)), record(3, Buffer.alloc(8)));
    answer = Buffer.concat(records);
    for (pieces of [1, 3, 8, 13, 4096]) {
      const response = await new FastCgiConnection(socketPath, false).request({ QUERY_STRING: '' });
      assert.equal(response.status, 200);
      assert.equal(response.headers['content-type'], 'application/json');
      assert.equal(response.body.toString('utf8'), text.slice(text.indexOf('\r\n\r\n') + 4), `in pieces up to ${pieces} bytes`);
      assert.equal(response.stderr, 'a warning');
    }
  });

  test('a connection opened ahead carries the request written to it; one closed before END_REQUEST fails it', async () => {
    answer = Buffer.concat([record(6, Buffer.from('Content-Type: text/plain\r\n\r\nahead')), record(3, Buffer.alloc(8))]);
    pieces = 8;
    const ahead = new FastCgiConnection(socketPath, false);
    ahead.preconnect();
    assert.equal((await ahead.request({ QUERY_STRING: '' })).body.toString(), 'ahead');
    assert.equal(ahead.connects, 1, 'one socket, the one opened ahead');
    answer = record(6, Buffer.from('Content-Type: text/plain\r\n\r\ncut'));
    await assert.rejects(new FastCgiConnection(socketPath, false).request({ QUERY_STRING: '' }), /closed before END_REQUEST/);
  });
});
