import mqtt, { type MqttClient } from 'mqtt';
import type { FastifyInstance } from 'fastify';
import { buildDataApiApp } from '../../src/data-api/gateway.app.js';
import type { Config } from '../../src/config.js';
import { freePort } from '../faults/harness.js';
import type { TestApp } from '../helpers/test-app.js';
import type { PublishedDataset } from '../helpers/sta-dataset.js';
import assert from 'node:assert/strict';

/**
 * A gateway of the test's context with the MQTT broker on a free TCP port (t.dataApi() opens none);
 * `mqttSettings` replace some of `config.mqtt` for this gateway only (small limits in tests);
 * `routePollMs`: how often its route table polls (a long one leaves route changes to NOTIFY and the broker).
 */
export async function mqttGateway(t: TestApp, mqttSettings: Partial<Config['mqtt']> = {}, routePollMs = 50): Promise<{ app: FastifyInstance; mqttUrl: string; port: number }> {
  const port = await freePort();
  const ctx = { ...t.ctx, config: { ...t.ctx.config, mqtt: { ...t.ctx.config.mqtt, ...mqttSettings } } };
  const app = await buildDataApiApp(ctx, { routePollMs, mqttPort: port });
  await app.ready();
  return { app, mqttUrl: `mqtt://127.0.0.1:${port}`, port };
}

/**
 * Connects as MQTT 3.1.1; the token is the password (the username is ignored), none is anonymous.
 * Rejects when the connection closes before its CONNACK too (a broker that hangs up, the connect
 * timeout): mqtt.js's promise would otherwise wait for a retry that `reconnectPeriod: 0` never makes.
 */
export function connect(url: string, token?: string, options: mqtt.IClientOptions = {}): Promise<MqttClient> {
  return mqtt.connectAsync(url, {
    protocolVersion: 4,
    reconnectPeriod: 0,
    connectTimeout: 5_000,
    ...(token === undefined ? {} : { username: 'ignored', password: token }),
    ...options,
  }, false);
}

/** The QoS granted for one topic (128: refused). */
export async function subscribeOne(client: MqttClient, topic: string): Promise<number> {
  try {
    const granted = await client.subscribeAsync(topic, { qos: 0 });
    return granted[0]!.qos;
  } catch (error) {
    // mqtt.js turns a SUBACK failure code into an error that carries the packet.
    const code = (error as { packet?: { granted?: number[] } }).packet?.granted?.[0];
    if (code === undefined) throw error;
    return code;
  }
}

/** The next message on a topic, parsed as JSON; fails after `ms`. */
export function nextMessage(client: MqttClient, topic: string, ms = 5_000): Promise<Record<string, any>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off('message', onMessage);
      reject(new Error(`no message on ${topic} within ${ms} ms`));
    }, ms);
    const onMessage = (received: string, payload: Buffer) => {
      if (received !== topic) return;
      clearTimeout(timer);
      client.off('message', onMessage);
      resolve(JSON.parse(payload.toString('utf8')));
    };
    client.on('message', onMessage);
  });
}

/** Resolves once the broker has closed the client's connection; fails after `ms`. */
export function closedByBroker(client: MqttClient, ms = 5_000): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!client.connected) return resolve();
    const timer = setTimeout(() => reject(new Error(`the connection stayed open for ${ms} ms`)), ms);
    client.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export const topicOf = (datasetId: string, slug: string, path: string) => `v1/datasets/${datasetId}/${slug}${path}`;

/** The name and QoS of each message a client receives on `topic` (an entity with a `name`), in order. */
export function namesReceived(client: MqttClient, topic: string): Array<{ name: string; qos: number }> {
  const seen: Array<{ name: string; qos: number }> = [];
  client.on('message', (received, payload, packet) => {
    if (received === topic) seen.push({ name: JSON.parse(payload.toString('utf8')).name, qos: packet.qos });
  });
  return seen;
}

/** The topic of a dataset's Things (its MQTT API's `v1.1/Things`). */
export const thingsTopicOf = (dataset: PublishedDataset) => topicOf(dataset.datasetId, dataset.slug, '/Things');

/** Creates a Thing through the dataset's API (201 asserted) and answers it as created. */
export async function createThingIn(dataset: PublishedDataset, name: string): Promise<Record<string, unknown>> {
  const created = await dataset.request('POST', '/Things', { name, description: 'x' });
  assert.equal(created.statusCode, 201, created.body);
  return created.json() as Record<string, unknown>;
}
