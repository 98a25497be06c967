import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { startMqttConnector } from '../../src/ingest/connectors/mqtt.js';
import type { Connector, ConnectorContext, SourceBatch } from '../../src/ingest/types.js';
import { remainingLength } from '../data-api/mqtt-raw.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The acknowledgement hook into MQTT.js (mqtt-acks.ts), pinned packet by packet: a broker scripted
 * byte by byte shows what the connector writes and when, which a real broker does not let a test
 * see. What must hold: a PUBACK/PUBREC goes out only after its batch committed, in arrival order,
 * while MQTT.js goes on reading the packets behind it; a QoS 2 message is delivered at PUBLISH,
 * and its PUBREL is answered without delivering it again.
 */

interface Packet { type: number; flags: number; body: Buffer }

/** A broker that accepts one connection, grants subscriptions, and records every packet the client sends. */
class ScriptedBroker {
  readonly received: Packet[] = [];
  private socket: Socket | null = null;
  private buffer = Buffer.alloc(0);
  constructor(readonly server: Server) {
    server.on('connection', (socket) => {
      this.socket = socket;
      socket.on('data', (chunk) => this.read(chunk));
    });
  }

  static async start(): Promise<ScriptedBroker> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new ScriptedBroker(server);
  }

  get port() {
    return (this.server.address() as { port: number }).port;
  }

  send(...packets: Buffer[]) {
    this.socket!.write(Buffer.concat(packets));
  }

  /** The acknowledgements the client sent, as `puback 1`, `pubrec 7`, `pubcomp 7`. */
  acks(): string[] {
    const names: Record<number, string> = { 4: 'puback', 5: 'pubrec', 7: 'pubcomp' };
    return this.received.filter((packet) => names[packet.type]).map((packet) => `${names[packet.type]} ${packet.body.readUInt16BE(0)}`);
  }

  async close() {
    this.socket?.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private read(chunk: Buffer) {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    for (;;) {
      let length = 0, multiplier = 1, offset = 1;
      for (;;) {
        if (offset >= this.buffer.length) return;
        const byte = this.buffer[offset++]!;
        length += (byte & 0x7f) * multiplier;
        multiplier *= 128;
        if ((byte & 0x80) === 0) break;
      }
      if (this.buffer.length < offset + length) return;
      const packet = { type: this.buffer[0]! >> 4, flags: this.buffer[0]! & 0x0f, body: this.buffer.subarray(offset, offset + length) };
      this.buffer = this.buffer.subarray(offset + length);
      this.received.push(packet);
      if (packet.type === 1) this.send(Buffer.from([0x20, 2, 0, 0])); // CONNECT → CONNACK accepted, no session
      if (packet.type === 8) this.send(suback(packet.body)); // SUBSCRIBE → SUBACK granting what was asked
    }
  }
}

function suback(subscribe: Buffer): Buffer {
  const granted: number[] = [];
  for (let at = 2; at < subscribe.length;) {
    const length = subscribe.readUInt16BE(at);
    granted.push(subscribe[at + 2 + length]!);
    at += 3 + length;
  }
  const body = Buffer.concat([subscribe.subarray(0, 2), Buffer.from(granted)]);
  return Buffer.concat([Buffer.from([0x90]), remainingLength(body.length), body]);
}

function publish(qos: 1 | 2, messageId: number, topic: string, payload: string): Buffer {
  const name = Buffer.from(topic);
  const body = Buffer.concat([Buffer.from([name.length >> 8, name.length & 0xff]), name, Buffer.from([messageId >> 8, messageId & 0xff]), Buffer.from(payload)]);
  return Buffer.concat([Buffer.from([0x30 | (qos << 1)]), remainingLength(body.length), body]);
}

const pubrel = (messageId: number) => Buffer.from([0x62, 2, messageId >> 8, messageId & 0xff]);

/** A context whose every deliver waits until the test resolves it. */
function heldContext(port: number, qos: 1 | 2) {
  const batches: Array<{ batch: SourceBatch; commit: () => void }> = [];
  const context: ConnectorContext = {
    pipelineId: randomUUID(),
    dataSource: { id: randomUUID(), name: 'scripted', connectorType: 'MQTT', configuration: { urls: [`tcp://127.0.0.1:${port}`], topics: ['s/#'], qos } },
    schedule: null,
    signal: new AbortController().signal,
    deliver: (batch) => new Promise<void>((resolve) => batches.push({ batch, commit: resolve })),
    position: async () => undefined,
    report: () => {},
    log: { info() {}, warn() {}, error() {} },
  };
  return { context, batches };
}

const subscribed = (broker: ScriptedBroker) => waitFor(() => broker.received.some((packet) => packet.type === 8), { what: 'the SUBSCRIBE' });
const nValues = (batch: SourceBatch) => batch.records.map((record) => (record.value as { n: number }).n);

describe('MQTT connector: acknowledgements held until commit, packet by packet (mqtt 5.16.0 hook)', () => {
  let broker: ScriptedBroker;
  let connector: Connector | undefined;
  before(async () => {
    broker = await ScriptedBroker.start();
  });
  after(async () => {
    await connector?.stop();
    await broker.close();
  });

  test('QoS 1: no PUBACK before the commit, reading goes on meanwhile, PUBACKs in arrival order', async () => {
    const { context, batches } = heldContext(broker.port, 1);
    connector = await startMqttConnector(context);
    await subscribed(broker);
    broker.send(publish(1, 1, 's/a', '{"n":1}'));
    await waitFor(() => batches.length === 1, { what: 'the first batch' });
    // Behind the held message: two more, and a PUBREL for an id the client does not know, which
    // MQTT.js answers (PUBCOMP) as soon as its work loop reaches it.
    broker.send(publish(1, 2, 's/a', '{"n":2}'), publish(1, 3, 's/a', '{"n":3}'), pubrel(99));
    await waitFor(() => broker.acks().includes('pubcomp 99'), { what: 'the PUBCOMP that shows reading went on', last: () => broker.acks().join() });
    assert.deepEqual(broker.acks(), ['pubcomp 99'], 'nothing acknowledged before its commit');

    batches[0]!.commit();
    await waitFor(() => batches.length === 2, { what: 'the second batch' });
    assert.deepEqual(nValues(batches[1]!.batch), [2, 3]);
    await waitFor(() => broker.acks().length === 2, { what: 'PUBACK 1' });
    assert.deepEqual(broker.acks(), ['pubcomp 99', 'puback 1']);

    batches[1]!.commit();
    await waitFor(() => broker.acks().length === 4, { what: 'PUBACK 2 and 3', last: () => broker.acks().join() });
    assert.deepEqual(broker.acks(), ['pubcomp 99', 'puback 1', 'puback 2', 'puback 3']);
    await connector.stop();
    connector = undefined;
  });
});

describe('MQTT connector: QoS 2 taken at PUBLISH, PUBREC after commit, PUBREL not delivered again', () => {
  let broker: ScriptedBroker;
  let connector: Connector | undefined;
  before(async () => {
    broker = await ScriptedBroker.start();
  });
  after(async () => {
    await connector?.stop();
    await broker.close();
  });

  test('QoS 2', async () => {
    const { context, batches } = heldContext(broker.port, 2);
    connector = await startMqttConnector(context);
    await subscribed(broker);
    broker.send(publish(2, 7, 's/b', '{"n":7}'));
    await waitFor(() => batches.length === 1, { what: 'the message delivered at PUBLISH' });
    assert.deepEqual(nValues(batches[0]!.batch), [7]);
    broker.send(pubrel(98)); // something behind it, answered at once: reading went on
    await waitFor(() => broker.acks().includes('pubcomp 98'), { what: 'PUBCOMP 98' });
    assert.deepEqual(broker.acks(), ['pubcomp 98'], 'no PUBREC before the commit');

    batches[0]!.commit();
    await waitFor(() => broker.acks().includes('pubrec 7'), { what: 'PUBREC 7' });
    broker.send(pubrel(7));
    await waitFor(() => broker.acks().includes('pubcomp 7'), { what: 'PUBCOMP 7' });
    // A last message shows everything before it was handled: the PUBREL delivered nothing.
    broker.send(publish(2, 8, 's/b', '{"n":8}'));
    await waitFor(() => batches.length === 2, { what: 'the next message' });
    assert.deepEqual(batches.map(({ batch }) => nValues(batch)), [[7], [8]]);
    assert.deepEqual(broker.acks(), ['pubcomp 98', 'pubrec 7', 'pubcomp 7']);
    await connector.stop();
    connector = undefined;
  });
});
