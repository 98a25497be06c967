import mqtt, { type MqttClient } from 'mqtt';

/**
 * SensorThings MQTT subscribers over WebSocket through nginx, as a browser would connect: each
 * reconnects on its own when its connection drops (its replica died), resubscribes, and keeps
 * every message it received with the time, and when it lost and regained its connection.
 */
export interface Subscriber {
  client: MqttClient;
  /** @iot.id of every Observation received. */
  received: Set<number>;
  /** When the connection dropped, and when it was back with its subscription granted again. */
  drops: number[];
  resubscribedAt: number[];
}

const RECONNECT_MS = 250;

export async function subscribe(wsUrl: string, token: string, topic: string): Promise<Subscriber> {
  const client = await mqtt.connectAsync(wsUrl, {
    protocolVersion: 4, username: 'cluster-test', password: token, reconnectPeriod: RECONNECT_MS, connectTimeout: 5_000,
    // mqtt.js resubscribes itself after a reconnect; the test subscribes again anyway, to know when it is granted.
    resubscribe: false,
  });
  const subscriber: Subscriber = { client, received: new Set(), drops: [], resubscribedAt: [] };
  client.on('message', (_topic, payload) => {
    const entity = JSON.parse(payload.toString('utf8')) as { '@iot.id': number };
    subscriber.received.add(entity['@iot.id']);
  });
  client.on('close', () => subscriber.drops.push(Date.now()));
  client.on('connect', () => {
    if (subscriber.drops.length === 0) return; // the first connect: subscribed below
    client.subscribeAsync(topic, { qos: 0 }).then(() => subscriber.resubscribedAt.push(Date.now()), () => undefined);
  });
  await client.subscribeAsync(topic, { qos: 0 });
  return subscriber;
}
