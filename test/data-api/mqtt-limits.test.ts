import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { eventually } from '../faults/harness.js';
import { mqttGateway } from './mqtt-helpers.js';
import { connectPacket, flood, isConnack, rawConnection, remainingLength, subscribePacket, type RawConnection } from './mqtt-raw.js';

// The contract's MQTT limits (issue 16, finding 3): packet sizes before and after CONNACK, the
// CONNECT deadline, connection caps. Raw sockets, because a client library never sends these.
const MiB = 1024 * 1024;
const growthOf = (before: NodeJS.MemoryUsage) => {
  const now = process.memoryUsage();
  return { rss: now.rss - before.rss, arrayBuffers: now.arrayBuffers - before.arrayBuffers };
};

let t: TestApp;
before(async () => { t = await buildTestApp('pglite'); });
after(async () => { await t.close(); });

describe('MQTT packet size limits', () => {
  let gateway: { app: FastifyInstance; port: number };
  let wsUrl: string;
  const connections: RawConnection[] = [];
  const open = async () => {
    const connection = await rawConnection(gateway.port);
    connections.push(connection);
    return connection;
  };

  before(async () => {
    gateway = await mqttGateway(t);
    await gateway.app.listen({ host: '127.0.0.1', port: 0 });
    wsUrl = `ws://127.0.0.1:${(gateway.app.server.address() as AddressInfo).port}/mqtt`;
  });
  after(async () => {
    for (const connection of connections) connection.socket.destroy();
    await gateway.app.close();
  });

  test('three CONNECTs announcing 150 MiB are closed after their header; memory does not grow with what they send', async () => {
    const before = process.memoryUsage();
    const attackers = await Promise.all([open(), open(), open()]);
    const header = Buffer.concat([Buffer.from([0x10]), remainingLength(150 * MiB)]);
    // Each tries to send 40 MiB of its CONNECT; the old broker buffered all of it, waiting for the rest.
    const written = await Promise.all(attackers.map((attacker) => flood(attacker, header, 40 * MiB)));
    await Promise.all(attackers.map((attacker) => attacker.closed()));
    const growth = growthOf(before);
    assert.ok(growth.arrayBuffers < 16 * MiB, `array buffers grew by ${growth.arrayBuffers} bytes (written: ${written.join(', ')})`);
    assert.ok(growth.rss < 64 * MiB, `RSS grew by ${growth.rss} bytes`);
  });

  test('a PUBLISH announcing 100 MiB after CONNACK is closed after its header', async () => {
    const client = await open();
    client.socket.write(connectPacket({ clientId: 'big-publisher' }));
    await client.receivedWhen(isConnack(0));
    const before = process.memoryUsage();
    const header = Buffer.concat([Buffer.from([0x30]), remainingLength(100 * MiB)]);
    await flood(client, header, 40 * MiB);
    await client.closed();
    const growth = growthOf(before);
    assert.ok(growth.arrayBuffers < 16 * MiB, `array buffers grew by ${growth.arrayBuffers} bytes`);
  });

  test('the limits are the settings: a 60 KiB CONNECT and a 900 KiB SUBSCRIBE pass, a 70 KiB CONNECT does not', async () => {
    const within = await open();
    within.socket.write(connectPacket({ clientId: 'large-but-allowed', username: 'u'.repeat(60 * 1024) }));
    await within.receivedWhen(isConnack(0));
    // Fifteen topic filters of 60 KiB: refused one by one (0x80), the connection stays.
    within.socket.write(subscribePacket(Array.from({ length: 15 }, (_, i) => `${i}`.padEnd(60 * 1024, 'x'))));
    const suback = await within.receivedWhen((bytes) => bytes.length >= 4 + 4 + 15);
    assert.equal(suback[4], 0x90, 'SUBACK');
    assert.deepEqual([...suback.subarray(suback.length - 15)], Array(15).fill(0x80));
    assert.equal(within.isClosed(), false);

    const over = await open();
    over.socket.write(connectPacket({ clientId: 'too-large', username: 'u'.repeat(40 * 1024), password: 'p'.repeat(30 * 1024) }));
    await over.closed();
    assert.equal(over.received().length, 0, 'no CONNACK for a CONNECT over the limit');
  });

  test('a packet before CONNACK is held to the CONNECT limit too (a 100 KiB SUBSCRIBE sent with the CONNECT)', async () => {
    const hasty = await open();
    const subscribe = subscribePacket([`${'a'.repeat(50 * 1024)}`, `${'b'.repeat(50 * 1024)}`]);
    hasty.socket.write(Buffer.concat([connectPacket({ clientId: 'hasty' }), subscribe]));
    await hasty.closed();
    assert.ok(!hasty.received().includes(0x90), 'no SUBACK');
  });

  test('over WebSocket the same: a CONNECT announcing 150 MiB is closed, and so is a WebSocket message over the packet limit', async () => {
    const before = process.memoryUsage();
    const attacker = new WebSocket(wsUrl, 'mqtt');
    await new Promise((resolve, reject) => attacker.once('open', resolve).once('error', reject));
    const closed = new Promise<number>((resolve) => attacker.once('close', resolve));
    attacker.send(Buffer.concat([Buffer.from([0x10]), remainingLength(150 * MiB), Buffer.alloc(512 * 1024, 0x61)]));
    await withTimeout(closed, 5_000, 'the WebSocket stayed open');
    assert.ok(growthOf(before).arrayBuffers < 16 * MiB);

    const big = new WebSocket(wsUrl, 'mqtt');
    await new Promise((resolve, reject) => big.once('open', resolve).once('error', reject));
    const bigClosed = new Promise<number>((resolve) => big.once('close', resolve));
    big.send(Buffer.alloc(2 * MiB, 0x61));
    assert.equal(await withTimeout(bigClosed, 5_000, 'the WebSocket stayed open'), 1009, 'message too big');
  });
});

describe('MQTT CONNECT deadline', () => {
  let gateway: { app: FastifyInstance; port: number };

  before(async () => {
    gateway = await mqttGateway(t, { connectTimeoutMs: 500 });
  });
  after(async () => {
    await gateway.app.close();
  });

  test('a connection that sends nothing, or half a CONNECT, is closed after MQTT_CONNECT_TIMEOUT_MS', async () => {
    const started = Date.now();
    const silent = await rawConnection(gateway.port);
    const slow = await rawConnection(gateway.port);
    slow.socket.write(connectPacket({ clientId: 'slowloris' }).subarray(0, 10));
    await Promise.all([silent.closed(), slow.closed()]);
    // The contract's bound is the setting (10 s by default; 500 ms here).
    assert.ok(Date.now() - started >= 450, `closed after ${Date.now() - started} ms, before the deadline`);
  });

  test('a connection whose CONNECT was accepted in time stays open past the deadline', async () => {
    const client = await rawConnection(gateway.port);
    client.socket.write(connectPacket({ clientId: 'prompt' }));
    await client.receivedWhen(isConnack(0));
    // PINGREQ after the deadline passed: answered (PINGRESP), not closed.
    await new Promise((resolve) => setTimeout(resolve, 700));
    client.socket.write(Buffer.from([0xc0, 0]));
    await client.receivedWhen((bytes) => bytes.subarray(4).equals(Buffer.from([0xd0, 0])));
    client.socket.destroy();
  });
});

describe('MQTT connection caps', () => {
  let gateway: { app: FastifyInstance; port: number };
  let wsUrl: string;
  const connections: RawConnection[] = [];
  const served = async (localAddress: string) => {
    const connection = await rawConnection(gateway.port, localAddress);
    connections.push(connection);
    connection.socket.write(connectPacket({ clientId: '' }));
    await connection.receivedWhen(isConnack(0));
    return connection;
  };
  const refused = async (localAddress: string) => {
    const connection = await rawConnection(gateway.port, localAddress);
    connections.push(connection);
    connection.socket.write(connectPacket({ clientId: '' }));
    await connection.closed(2_000);
    assert.equal(connection.received().length, 0, 'closed before any answer');
  };
  const webSocket = (headers: Record<string, string> = {}) => new Promise<{ status: number; socket: WebSocket }>((resolve, reject) => {
    const socket = new WebSocket(wsUrl, 'mqtt', { headers });
    socket.once('open', () => resolve({ status: 101, socket }));
    socket.once('unexpected-response', (_request, response) => { resolve({ status: response.statusCode ?? 0, socket }); socket.terminate(); });
    socket.once('error', reject);
  });

  before(async () => {
    gateway = await mqttGateway(t, { maxConnections: 4, maxConnectionsPerAddress: 2 });
    await gateway.app.listen({ host: '127.0.0.1', port: 0 });
    wsUrl = `ws://127.0.0.1:${(gateway.app.server.address() as AddressInfo).port}/mqtt`;
  });
  after(async () => {
    for (const connection of connections) connection.socket.destroy();
    held?.terminate();
    await gateway.app.close();
  });
  let held: WebSocket | undefined;

  test('per address, over TCP and WebSocket together; X-Forwarded-For changes nothing; a closed connection frees its place', async () => {
    const first = await served('127.0.0.1');
    const upgrade = await webSocket();
    assert.equal(upgrade.status, 101);
    held = upgrade.socket;
    await refused('127.0.0.1');
    const forwarded = await webSocket({ 'X-Forwarded-For': '203.0.113.7' });
    assert.equal(forwarded.status, 503, 'the socket address counts, not X-Forwarded-For');

    first.socket.destroy();
    await eventually('the closed connection released', 2_000, () => served('127.0.0.1').then(() => true, () => undefined));
  });

  test('in all: beyond the total, a fresh address is refused too', async () => {
    // Held: the WebSocket and one TCP connection from 127.0.0.1.
    await served('127.0.0.2');
    await served('127.0.0.2');
    await refused('127.0.0.3');
  });
});

describe('MQTT connection caps behind a trusted proxy (TRUST_PROXY)', () => {
  let gateway: { app: FastifyInstance; port: number };
  let wsUrl: string;
  const sockets: WebSocket[] = [];
  const webSocket = (forwardedFor: string) => new Promise<number>((resolve, reject) => {
    const socket = new WebSocket(wsUrl, 'mqtt', { headers: { 'X-Forwarded-For': forwardedFor } });
    sockets.push(socket);
    socket.once('open', () => resolve(101));
    socket.once('unexpected-response', (_request, response) => { resolve(response.statusCode ?? 0); socket.terminate(); });
    socket.once('error', reject);
  });

  before(async () => {
    // The test's own connections come from 127.0.0.1: here, the trusted proxy.
    const ctx = { ...t.ctx, config: { ...t.ctx.config, trustProxy: { addresses: ['127.0.0.1'] } } };
    gateway = await mqttGateway({ ...t, ctx }, { maxConnections: 10, maxConnectionsPerAddress: 1 });
    await gateway.app.listen({ host: '127.0.0.1', port: 0 });
    wsUrl = `ws://127.0.0.1:${(gateway.app.server.address() as AddressInfo).port}/mqtt`;
  });
  after(async () => {
    for (const socket of sockets) socket.terminate();
    await gateway.app.close();
  });

  test('each client the proxy forwards has its own per-address cap; a forged hop before the client changes nothing', async () => {
    assert.equal(await webSocket('203.0.113.7'), 101);
    assert.equal(await webSocket('203.0.113.8'), 101, 'another client behind the same proxy');
    assert.equal(await webSocket('203.0.113.7'), 503, 'the same client again, over its cap of 1');
    // The client itself may send X-Forwarded-For; only the address the trusted proxy appended counts.
    assert.equal(await webSocket('198.51.100.1, 203.0.113.7'), 503);
  });
});

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${message} (${ms} ms)`)), ms);
    promise.then((value) => { clearTimeout(timer); resolve(value); }, (error) => { clearTimeout(timer); reject(error); });
  });
}
