import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../src/config.js';
import { parseTopic, pathsOfChange } from '../../src/data-api/mqtt/topics.js';
import { PacketMeter } from '../../src/data-api/mqtt/connection-guard.js';
import { ConnectionCaps } from '../../src/data-api/mqtt/connection-caps.js';
import { ClientIdBindings } from '../../src/data-api/mqtt/client-ids.js';
import { remainingLength } from './mqtt-raw.js';
import { chunkIds } from '../../src/data-api/mqtt/entity-lookup.js';
import { encodePublish } from '../../src/data-api/mqtt/publish-packet.js';
import { NotificationWriter } from '../../src/data-api/mqtt/notification-writer.js';
import type { Client } from 'aedes';

// The pieces of SensorThings over MQTT that need no broker: the setting, topics, the NOTIFY format.
describe('MQTT_PORT', () => {
  test('defaults to 1884; off disables; anything else fails with one line naming it', () => {
    assert.equal(loadConfig({}).mqtt.port, 1884);
    assert.equal(loadConfig({ MQTT_PORT: '1999' }).mqtt.port, 1999);
    assert.equal(loadConfig({ MQTT_PORT: 'off' }).mqtt.port, null);
    for (const bad of ['70000', 'on', '-1', '18 84']) {
      assert.throws(() => loadConfig({ MQTT_PORT: bad }), (error: Error) => error instanceof ConfigError && /^Invalid configuration: MQTT_PORT .*\n?$/.test(error.message) && !error.message.includes('\n'));
    }
  });
});

describe('MQTT topics', () => {
  const id = '7f1d2c4e-9b8a-4c3d-8e2f-1a2b3c4d5e6f';
  test('resource paths below DATA_API_URL, with the v1.1 alias', () => {
    assert.deepEqual(parseTopic(`v1/datasets/${id}/air/Datastreams(7)/Observations`), { datasetId: id, slug: 'air', path: '/Datastreams(7)/Observations', kind: 'collection' });
    assert.deepEqual(parseTopic(`v1/datasets/${id}/air/v1.1/Things(1)`), { datasetId: id, slug: 'air', path: '/Things(1)', kind: 'entity' });
    assert.equal(parseTopic(`v1/datasets/${id}/air/Things(1)/name`)?.kind, 'property');
    assert.equal(parseTopic(`v1/datasets/${id}/air/Observations`)?.kind, 'collection');
  });
  test('wildcards and shapes without notifications are not topics', () => {
    for (const topic of [`v1/datasets/${id}/air/#`, `v1/datasets/${id}/+/Things`, `v1/datasets/${id}/air/Things/name`, `v1/datasets/${id}/air/Things(1)/Datastreams(2)/Observations`, `v1/datasets/${id}/air`, '$SYS/x',
      `v1/datasets/${id}/air/Things?$filter=id eq 1`, `v1/datasets/${id}/air/Things?$select=colour`, `v1/datasets/${id}/air/Things(1)/name?$select=name`,
      `v1/datasets/${id}/air/Things(1)/Observations`, `v1/datasets/${id}/air/Things?$select=${'name,'.repeat(300)}name`]) {
      assert.equal(parseTopic(topic), null, topic);
    }
  });
  test('$select on a collection or entity topic: the JSON keys its messages keep', () => {
    assert.deepEqual(parseTopic(`v1/datasets/${id}/air/Things?$select=name,description`)?.select, ['name', 'description']);
    assert.deepEqual(parseTopic(`v1/datasets/${id}/air/Things(1)/Datastreams?$select=id, unitOfMeasurement,Observations`)?.select,
      ['@iot.id', 'unitOfMeasurement', 'Observations@iot.navigationLink']);
    assert.deepEqual(parseTopic(`v1/datasets/${id}/air/v1.1/Observations(3)?$select=result`), { datasetId: id, slug: 'air', path: '/Observations(3)', kind: 'entity', select: ['result'] });
  });
  test('a change is announced on its set, itself and the collections of its to-one links', () => {
    assert.deepEqual(pathsOfChange('Observations', 5, new Map([['Datastream', 7], ['FeatureOfInterest', 3]])),
      ['/Observations', '/Observations(5)', '/Datastreams(7)/Observations', '/FeaturesOfInterest(3)/Observations']);
    assert.deepEqual(pathsOfChange('Things', 1, new Map()), ['/Things', '/Things(1)']);
  });
});

describe('MQTT packet meter', () => {
  const packet = (bodyLength: number) => Buffer.concat([Buffer.from([0x30]), remainingLength(bodyLength), Buffer.alloc(bodyLength, 7)]);
  // Every way of cutting the stream: whole, byte by byte, and at every offset in two.
  const cuts = (bytes: Buffer): Buffer[][] => [
    [bytes],
    [...bytes].map((byte) => Buffer.from([byte])),
    ...Array.from({ length: bytes.length - 1 }, (_, at) => [bytes.subarray(0, at + 1), bytes.subarray(at + 1)]),
  ];
  const verdict = (limit: number, pieces: Buffer[]) => {
    const meter = new PacketMeter(limit);
    for (const piece of pieces) {
      const problem = meter.feed(piece);
      if (problem) return problem;
    }
    return null;
  };

  test('follows packets across any cut, refusing exactly those over the limit (header bytes counted)', () => {
    // 0, 1-byte, 2-byte and 3-byte Remaining Lengths; the limit is 1 + 3 + 20000 bytes.
    const stream = Buffer.concat([packet(0), packet(100), packet(200), packet(20_000)]);
    for (const pieces of cuts(stream).filter((_, index) => index < 3 || index % 97 === 0)) {
      assert.equal(verdict(20_004, pieces), null);
      assert.match(String(verdict(20_003, pieces)), /a packet of 20004 bytes is over the limit of 20003/);
    }
  });

  test('knows a packet is too large from its header alone, and refuses a fifth length byte', () => {
    const header = Buffer.concat([Buffer.from([0x10]), remainingLength(268_435_455)]);
    assert.match(String(verdict(65_536, [header])), /over the limit/);
    assert.match(String(verdict(65_536, [Buffer.from([0x10, 0xff, 0xff, 0xff, 0xff])])), /malformed Remaining Length/);
  });
});

describe('MQTT connection caps and client ids', () => {
  test('caps count per canonical address and in all; a release frees one place once', () => {
    const caps = new ConnectionCaps({ maxConnections: 3, maxConnectionsPerAddress: 2 });
    const first = caps.admit('127.0.0.1');
    assert.ok(first && caps.admit('::ffff:127.0.0.1'));
    assert.equal(caps.admit('127.0.0.1'), null, 'an IPv4-mapped address is the same client');
    assert.ok(caps.admit('2001:db8::1'));
    assert.equal(caps.admit('2001:db8::2'), null, 'the total');
    first();
    first();
    assert.ok(caps.admit('2001:db8::2'));
    assert.equal(caps.admit('2001:db8::3'), null, 'a second release of one connection frees nothing');
    assert.equal(caps.admit(undefined), null);
  });

  test('an id is held while a connection or a kept session holds it', () => {
    const ids = new ClientIdBindings();
    const [a1, a2, b] = [{}, {}, {}];
    assert.ok(ids.claim('x', 'token:a', a1, false));
    assert.equal(ids.claim('x', 'token:b', b, false), false);
    assert.ok(ids.claim('x', 'token:a', a2, true), 'the same identity takes over');
    ids.release('x', a1);
    ids.release('x', a2);
    assert.equal(ids.claim('x', 'token:b', b, false), false, 'kept session');
    assert.ok(ids.claim('x', 'token:a', a1, false));
    ids.release('x', a1);
    assert.ok(ids.claim('x', 'token:b', b, false), 'a clean session ended with its connection');
  });
});

describe('the notifier\'s batched reads', () => {
  test('chunks of ids keep their order, stay within the filter limit and a read\'s page', () => {
    const ids = Array.from({ length: 2_000 }, (_, n) => 999_990 + n);
    const limit = 8192;
    const chunks = chunkIds(ids, limit);
    assert.deepEqual(chunks.flat(), ids);
    for (const chunk of chunks) {
      const filter = chunk.map((id) => `id eq ${id}`).join(' or ');
      assert.ok(Buffer.byteLength(filter) <= limit, `${Buffer.byteLength(filter)} bytes`);
      assert.ok(chunk.length <= 500);
    }
    // Full: one more id would not have fitted.
    const first = chunks[0]!.map((id) => `id eq ${id}`).join(' or ');
    assert.ok(Buffer.byteLength(`${first} or id eq ${chunks[1]![0]}`) > limit || chunks[0]!.length === 500);
    // A small limit still makes progress: one id per chunk at least.
    assert.deepEqual(chunkIds([1, 22, 333], 8), [[1], [22], [333]]);
    assert.deepEqual(chunkIds([], limit), []);
  });
});

describe('notifications as PUBLISH bytes', () => {
  test('a QoS 0 PUBLISH: header, Remaining Length of 1 to 3 bytes, the UTF-8 topic with its length, the payload', () => {
    for (const [topic, size] of [['v1/datasets/x/air/Things', 10], ['v1/datasets/x/air/Datastreams(7)/Observations', 200], ['v1/datasets/x/air/Things(1)/name?$select=°C', 20_000]] as const) {
      const payload = Buffer.alloc(size, 'a');
      const topicBytes = Buffer.from(topic, 'utf8');
      const expected = Buffer.concat([Buffer.from([0x30]), remainingLength(2 + topicBytes.length + size), Buffer.from([topicBytes.length >> 8, topicBytes.length & 0xff]), topicBytes, payload]);
      assert.deepEqual(encodePublish(topic, payload), expected, `${size} bytes`);
    }
  });
});

describe('the notification writer', () => {
  const fakeClient = (id: string, unwritten: number, connected = true) => {
    const written: Buffer[] = [];
    const conn = { writable: true, writableLength: unwritten, write: (bytes: Buffer) => written.push(bytes) };
    return { client: { id, connected, closed: false, conn } as unknown as Client, written };
  };
  test('one encoding per message for all its subscribers; a connected client only; one not reading misses it', () => {
    const skipped: string[] = [];
    const writer = new NotificationWriter((clientId) => skipped.push(clientId), 1000);
    const payload = writer.prepare('v1/datasets/x/air/Things', '{"name":"a"}', undefined);
    const notification = writer.of(payload)!;
    assert.deepEqual(notification.bytes, encodePublish('v1/datasets/x/air/Things', Buffer.from('{"name":"a"}')));
    assert.equal(writer.of(Buffer.from('{"name":"a"}')), undefined, 'another packet, even with the same bytes, is not a notification');
    const [reading, connecting, stuck] = [fakeClient('reading', 0), fakeClient('connecting', 0, false), fakeClient('stuck', 1001)];
    for (const { client } of [reading, connecting, stuck]) writer.write(client, notification);
    assert.equal(reading.written[0], notification.bytes);
    assert.deepEqual([connecting.written.length, stuck.written.length], [0, 0]);
    assert.deepEqual(skipped, ['stuck']);
  });
});
