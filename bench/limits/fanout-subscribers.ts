/**
 * A share of the fan-out benchmark's MQTT subscribers, in a process of its own (forked by
 * fanout.ts): a thousand MQTT.js clients in the benchmark's process would make its event loop the
 * bottleneck, and their delay would count as the broker's. Each message's arrival is stamped with
 * the wall clock (`performance.timeOrigin + performance.now()`, shared by the processes of one
 * machine) and kept until the parent collects the round; the process's own event-loop delay during
 * the round is reported beside it, so that a late figure can be told from a busy subscriber.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import mqtt from 'mqtt';
import type { ChildCommand, ChildReply } from './fanout-protocol.js';

const clients: mqtt.MqttClient[] = [];
/** Flat [client index, Observation result (its sequence number), arrival ms] triples of the round. */
let arrivals: number[] = [];
const loop = monitorEventLoopDelay({ resolution: 10 });
const now = () => performance.timeOrigin + performance.now();
const reply = (message: ChildReply) => process.send!(message);

/** How many clients CONNECT at once: a thousand at once would time out behind each other's token checks. */
const CONNECTING_AT_ONCE = 50;

async function start(command: Extract<ChildCommand, { type: 'start' }>): Promise<void> {
  let failed = 0;
  let firstError = '';
  for (let from = 0; from < command.count; from += CONNECTING_AT_ONCE) {
    const indexes = Array.from({ length: Math.min(CONNECTING_AT_ONCE, command.count - from) }, (_, i) => from + i);
    await Promise.all(indexes.map(async (index) => {
      try {
        const client = await mqtt.connectAsync(command.mqttUrl, {
          protocolVersion: 4, clientId: `${command.idPrefix}-${index}`, username: 'bench', password: command.password,
          reconnectPeriod: 0, connectTimeout: 30_000, keepalive: 120,
        });
        clients.push(client);
        const granted = await client.subscribeAsync(command.topic, { qos: 0 });
        if (granted[0]?.qos === 128) throw new Error('the subscription was refused (0x80)');
        client.on('message', (_topic, payload) => {
          const at = now();
          const seq = (JSON.parse(payload.toString('utf8')) as { result?: unknown }).result;
          if (typeof seq === 'number') arrivals.push(command.firstIndex + index, seq, at);
        });
      } catch (error) {
        failed++;
        firstError ||= (error as Error).message;
      }
    }));
  }
  reply({ type: 'ready', connected: clients.length, failed, firstError });
}

process.on('message', (command: ChildCommand) => {
  switch (command.type) {
    case 'start':
      void start(command);
      break;
    case 'round-start':
      arrivals = [];
      loop.reset();
      loop.enable();
      break;
    case 'count':
      reply({ type: 'count', received: arrivals.length / 3 });
      break;
    case 'round-end':
      loop.disable();
      reply({ type: 'round', arrivals, loopP99Ms: loop.percentile(99) / 1e6, loopMaxMs: loop.max / 1e6 });
      arrivals = [];
      break;
    case 'stop':
      void Promise.all(clients.map((client) => client.endAsync(true).catch(() => {}))).then(() => process.exit(0));
      break;
  }
});
