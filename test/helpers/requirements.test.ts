// The machine checks the test files skip by: the MQTT probe against a real mosquitto and against
// listeners that are not brokers, the joined reasons, and TEST_PRETEND_MISSING.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../faults/harness.js';
import { waitFor } from './wait.js';
import { locateMosquitto, missing, probeMqtt, requireGdal, requireMapServer, requireMosquittoBinary } from './requirements.js';

/** A TCP listener on the loopback that answers every connection with `answer` (given what the client sent first). */
async function fakeListener(answer: (socket: net.Socket, first: Buffer) => void): Promise<{ port: number; received: Buffer[]; close: () => Promise<void> }> {
  const received: Buffer[] = [];
  const server = net.createServer((socket) => {
    socket.once('data', (first) => {
      received.push(first);
      answer(socket, first);
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return { port, received, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('the MQTT probe', () => {
  test('nothing listening, a listener that hangs up, one that speaks HTTP, and a broker refusing the connection are told apart', async () => {
    assert.equal(await probeMqtt('127.0.0.1', await freePort()), 'nothing listens');

    const hangsUp = await fakeListener((socket) => socket.destroy());
    assert.equal(await probeMqtt('127.0.0.1', hangsUp.port), 'it closed the connection without a CONNACK');
    await hangsUp.close();

    const http = await fakeListener((socket) => socket.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
    assert.equal(await probeMqtt('127.0.0.1', http.port), 'it answered something other than MQTT');
    await http.close();

    // A broker that wants credentials: CONNACK with return code 5 (not authorized).
    const refusing = await fakeListener((socket) => socket.write(Buffer.from([0x20, 0x02, 0x00, 0x05])));
    assert.equal(await probeMqtt('127.0.0.1', refusing.port), 'it refused an anonymous MQTT connection (return code 5)');
    // What it was sent is an MQTT 3.1.1 CONNECT: packet type 1, protocol name "MQTT", level 4.
    const [connect] = refusing.received;
    assert.equal(connect![0], 0x10);
    assert.equal(connect!.subarray(4, 8).toString(), 'MQTT');
    assert.equal(connect![8], 4);
    await refusing.close();
  });

  describe('against a mosquitto of its own', { skip: missing(requireMosquittoBinary()) }, () => {
    let broker: ChildProcess;
    let port: number;
    let dir: string;
    before(async () => {
      port = await freePort();
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'probe-mosquitto-'));
      const config = path.join(dir, 'mosquitto.conf');
      fs.writeFileSync(config, `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\n`);
      broker = spawn(locateMosquitto()!, ['-c', config], { stdio: 'ignore' });
      await waitFor(async () => (await probeMqtt('127.0.0.1', port)) !== 'nothing listens', { what: 'mosquitto to listen' });
    });
    after(async () => {
      if (broker?.exitCode === null) {
        const exited = new Promise((resolve) => broker.once('exit', resolve));
        broker.kill('SIGTERM');
        await exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    });

    test('an anonymous connection is accepted', async () => {
      assert.equal(await probeMqtt('127.0.0.1', port), 'accepted');
    });
  });
});

describe('skip reasons', () => {
  const saved = process.env['TEST_PRETEND_MISSING'];
  // The quick loop's checks answer "left out" before anything else: these tests ask them as npm test does.
  const savedQuick = process.env['TEST_QUICK'];
  before(() => {
    delete process.env['TEST_QUICK'];
  });
  after(() => {
    if (saved === undefined) delete process.env['TEST_PRETEND_MISSING'];
    else process.env['TEST_PRETEND_MISSING'] = saved;
    if (savedQuick !== undefined) process.env['TEST_QUICK'] = savedQuick;
  });

  test('missing() joins the reasons given and is false when there are none', () => {
    assert.equal(missing(null, null), false);
    assert.equal(missing('a (Debian packages: x)', null, 'b'), 'a (Debian packages: x); b');
  });

  test('TEST_PRETEND_MISSING makes a check answer as without the thing, naming its packages; an unknown name throws', () => {
    process.env['TEST_PRETEND_MISSING'] = 'mapserver, GDAL';
    assert.match(requireMapServer()!, /^MapServer is not installed \(Debian packages: cgi-mapserver mapserver-bin spawn-fcgi\) \[pretended/);
    assert.match(requireGdal()!, /\(Debian packages: gdal-bin\) \[pretended/);
    process.env['TEST_PRETEND_MISSING'] = 'mosquito';
    assert.throws(() => requireMapServer(), /TEST_PRETEND_MISSING: unknown mosquito \(known: mapserver, gdal, postgis, mosquitto\)/);
  });
});
