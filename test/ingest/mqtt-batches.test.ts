import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BatchPump } from '../../src/ingest/connectors/mqtt-batches.js';
import { MAX_PAYLOAD_BYTES, MAX_TEXT_BYTES, recordsOfPayload } from '../../src/ingest/connectors/mqtt-payload.js';
import { durationMs } from '../../src/ingest/connectors/durations.js';
import { defaultClientId, mqttSettings } from '../../src/ingest/connectors/mqtt-settings.js';
import type { SourceBatch, SourceRecord } from '../../src/ingest/types.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The parts of the MQTT connector that need no broker: the batch pump's bounds (what MQTT.js is
 * told to wait for), the payload reader's limits, durations and the configuration.
 */

const record = (n: number): SourceRecord => ({ value: { n }, receivedAt: new Date() });

function heldPump(limits: { maxBatchRecords: number; maxBufferedRecords: number; maxBatchesInFlight?: number }) {
  const batches: Array<{ batch: SourceBatch; commit: () => void; fail: (error: Error) => void }> = [];
  const failures: unknown[] = [];
  const pump = new BatchPump(
    (batch) => new Promise<void>((resolve, reject) => batches.push({ batch, commit: resolve, fail: reject })),
    { maxBatchesInFlight: 1, ...limits },
    (error) => failures.push(error),
  );
  return { pump, batches, failures };
}

describe('MQTT batch pump', () => {
  test('past maxBufferedRecords the go-ahead for the next packet waits for a commit; batches are whole messages up to the maximum', async () => {
    const { pump, batches } = heldPump({ maxBatchRecords: 3, maxBufferedRecords: 4 });
    const proceeded: number[] = [];
    for (let n = 1; n <= 6; n++) pump.take({ records: [record(n)], ack: null }, () => proceeded.push(n));
    // Four fit; the fifth is taken (MQTT.js already handed it over) and its go-ahead held, which
    // stops MQTT.js from handing over the sixth — in this test nothing stops the caller, so the
    // sixth's go-ahead waits too.
    assert.deepEqual(proceeded, [1, 2, 3, 4]);
    await waitFor(() => batches.length === 1, { what: 'the first batch' });
    assert.deepEqual(batches[0]!.batch.records.map((r) => (r.value as { n: number }).n), [1, 2, 3]);
    assert.equal(pump.bufferedRecords, 6);
    batches[0]!.commit();
    await waitFor(() => proceeded.length === 6, { what: 'the held go-aheads after the commit' });
    await waitFor(() => batches.length === 2, { what: 'the second batch' });
    assert.deepEqual(batches[1]!.batch.records.map((r) => (r.value as { n: number }).n), [4, 5, 6]);
  });

  test('acknowledgements are released only after their batch committed, and not at all once deliver rejected', async () => {
    const { pump, batches, failures } = heldPump({ maxBatchRecords: 1, maxBufferedRecords: 100 });
    const released: string[] = [];
    const ack = (name: string) => ({ release: () => released.push(name) });
    pump.take({ records: [record(1)], ack: ack('first') }, () => {});
    pump.take({ records: [], ack: ack('empty') }, () => {});
    pump.take({ records: [record(2)], ack: ack('second') }, () => {});
    await waitFor(() => batches.length === 1, { what: 'the first batch' });
    assert.equal(released.length, 0, 'nothing released before the commit');
    batches[0]!.commit();
    await waitFor(() => batches.length === 2, { what: 'the second batch' });
    // The message without records rode with the batch before it (it needs no transaction of its own).
    assert.deepEqual(batches[0]!.batch.records.length, 1);
    assert.deepEqual(released, ['first', 'empty']);
    batches[1]!.fail(new Error('pipeline stopping'));
    await waitFor(() => failures.length === 1, { what: 'the failure' });
    pump.take({ records: [record(3)], ack: ack('late') }, () => released.push('late go-ahead'));
    assert.deepEqual(released, ['first', 'empty'], 'nothing acknowledged or taken after deliver rejected');
  });
});

describe('MQTT batch pump, two batches in flight', () => {
  test('the second batch is handed over before the first committed; acknowledgements still go out in arrival order', async () => {
    const { pump, batches } = heldPump({ maxBatchRecords: 1, maxBufferedRecords: 100, maxBatchesInFlight: 2 });
    const released: string[] = [];
    const ack = (name: string) => ({ release: () => released.push(name) });
    for (const name of ['first', 'second', 'third']) pump.take({ records: [record(released.length)], ack: ack(name) }, () => {});
    await waitFor(() => batches.length === 2, { what: 'two batches under way' });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(batches.length, 2, 'no third while two are under way');
    batches[1]!.commit();
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(released, [], 'the second waits for the first');
    batches[0]!.commit();
    await waitFor(() => released.length === 2, { what: 'both acknowledgements' });
    assert.deepEqual(released, ['first', 'second']);
    await waitFor(() => batches.length === 3, { what: 'the third batch' });
  });
});

describe('MQTT payloads', () => {
  const at = new Date('2024-05-01T00:00:00Z');

  test('a payload above the size limit is unreadable without a parse, its text cut to 64 KiB', () => {
    const big = Buffer.alloc(MAX_PAYLOAD_BYTES + 1, 'a');
    const [only, ...rest] = recordsOfPayload('t', big, at);
    assert.equal(rest.length, 0);
    assert.equal(only!.value, undefined);
    assert.equal(only!.text!.length, MAX_TEXT_BYTES);
    assert.match(only!.unreadable!, /1048577 bytes, more than the 1048576/);
  });

  test('the cut does not split a character; an array of scalars gives one record per element', () => {
    // 'é' is two bytes: the cut after byte 65,536 falls inside the 32,769th one.
    const text = `${'x'}${'é'.repeat(40_000)}`;
    const [cut] = recordsOfPayload('t', Buffer.from(text), at);
    assert.equal(cut!.text, text.slice(0, 1 + (MAX_TEXT_BYTES - 1 - 1) / 2));
    assert.deepEqual(recordsOfPayload('t', Buffer.from('[1, "a", null]'), at).map((r) => r.value), [1, 'a', null]);
    assert.deepEqual(recordsOfPayload('t', Buffer.from('[]'), at), []);
    assert.deepEqual(recordsOfPayload('t', Buffer.from('\ufeff{"bom":true}'), at).map((r) => r.value), [{ bom: true }]);
  });
});

describe('MQTT configuration', () => {
  test('durations', () => {
    assert.equal(durationMs('30s'), 30_000);
    assert.equal(durationMs('1h30m'), 5_400_000);
    assert.equal(durationMs('500ms'), 500);
    assert.equal(durationMs('1.5m'), 90_000);
    for (const bad of ['', '30', '5 minutes', 'm', null, 30]) assert.equal(durationMs(bad), null, String(bad));
  });

  test('schemes, TLS, credentials in a URL, the default client id', () => {
    const settings = mqttSettings('pipeline-1', {
      id: 'source-1', name: 's', connectorType: 'MQTT',
      configuration: {
        urls: ['tcp://alice:s%40cret@broker:1883', 'ws://broker:8080/mqtt', 'ssl://broker:8883'],
        topics: ['a/#', 'a/#', 'b'], qos: 2, keepalive: '1h30m', connect_timeout: '5s', tls: { enabled: true },
      },
    });
    assert.deepEqual(settings.urls, [
      { address: 'mqtts://broker:1883', shown: 'mqtts://broker:1883', username: 'alice', password: 's@cret' },
      { address: 'wss://broker:8080/mqtt', shown: 'wss://broker:8080/mqtt' },
      { address: 'mqtts://broker:8883', shown: 'mqtts://broker:8883' },
    ]);
    assert.deepEqual(settings.topics, ['a/#', 'b']);
    assert.equal(settings.keepaliveSeconds, 5400);
    assert.equal(settings.connectTimeoutMs, 5000);
    assert.equal(settings.clientId, defaultClientId('pipeline-1', 'source-1'));
    assert.match(settings.clientId, /^[0-9a-z]{23}$/);
    assert.notEqual(defaultClientId('pipeline-1', 'source-2'), settings.clientId);
  });
});
