import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../src/config.js';
import { decode, encode, type StaChange } from '../../src/data-api/mqtt/change-feed.js';
import { parseTopic, pathsOfChange } from '../../src/data-api/mqtt/topics.js';

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
    for (const topic of [`v1/datasets/${id}/air/#`, `v1/datasets/${id}/+/Things`, `v1/datasets/${id}/air/Things/name`, `v1/datasets/${id}/air/Things(1)/Datastreams(2)/Observations`, `v1/datasets/${id}/air`, '$SYS/x', `v1/datasets/${id}/air/Things?$select=id`]) {
      assert.equal(parseTopic(topic), null, topic);
    }
  });
  test('a change is announced on its set, itself and the collections of its to-one links', () => {
    assert.deepEqual(pathsOfChange('Observations', 5, new Map([['Datastream', 7], ['FeatureOfInterest', 3]])),
      ['/Observations', '/Observations(5)', '/Datastreams(7)/Observations', '/FeaturesOfInterest(3)/Observations']);
    assert.deepEqual(pathsOfChange('Things', 1, new Map()), ['/Things', '/Things(1)']);
  });
});

describe('SensorThings change notifications', () => {
  test('100,000 changes fit in few NOTIFY payloads under 8000 bytes each, and read back', () => {
    const changes: StaChange[] = Array.from({ length: 100_000 }, (_, i) => ({ schema: 'ds_abc', entitySet: 'Observations', id: 1_000_000 + i, kind: 'create' }));
    changes.push({ schema: 'ds_abc', entitySet: 'Things', id: 1, kind: 'update' });
    const payloads = encode(changes);
    assert.ok(payloads.length < 200, `${payloads.length} payloads`);
    for (const payload of payloads) assert.ok(Buffer.byteLength(payload) < 8000);
    assert.deepEqual(payloads.flatMap(decode), changes);
    assert.deepEqual(decode('not json'), []);
  });
});
