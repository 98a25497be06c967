import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import mqtt, { type IPublishPacket, type MqttClient } from 'mqtt';
import type { Connector, ConnectorContext, ConnectorFactory, ConnectorState } from '../types.js';
import { holdAcks, type AckHold } from './mqtt-acks.js';
import { BatchPump, DEFAULT_BATCH_LIMITS, type BatchLimits } from './mqtt-batches.js';
import { recordsOfPayload } from './mqtt-payload.js';
import { mqttSettings, type MqttSettings } from './mqtt-settings.js';

/**
 * The MQTT connector: subscribes to a data source's topics on the first reachable of its broker
 * URLs with a persistent session (`clean: false`, a stable client id), so that QoS 1/2 messages
 * published while the pipeline was away arrive when it is back, and acknowledges each QoS 1/2
 * message only once the records it carried committed (mqtt-acks.ts, mqtt-batches.ts).
 *
 * Each connection is a client of its own that does not reconnect by itself (`reconnectPeriod: 0`):
 * the connector walks the URLs in order and backs off itself, and whatever a connection held
 * (acknowledgements, MQTT.js's in-memory QoS 2 store) ends with it. MQTT 3.1.1, the version every
 * broker speaks.
 */

export interface MqttTuning extends BatchLimits {
  /** The wait before the first URL is tried again after every URL failed once; doubled per round. */
  retryMinMs: number;
  retryMaxMs: number;
}

export const DEFAULT_MQTT_TUNING: MqttTuning = { ...DEFAULT_BATCH_LIMITS, retryMinMs: 1_000, retryMaxMs: 30_000 };

export const mqttConnector: ConnectorFactory = (context) => startMqttConnector(context);

/** `mqttConnector` with other limits and waits (tests: a short backoff, a small buffer). */
export async function startMqttConnector(context: ConnectorContext, tuning: Partial<MqttTuning> = {}): Promise<Connector> {
  const connector = new MqttConnector(context, mqttSettings(context.pipelineId, context.dataSource), { ...DEFAULT_MQTT_TUNING, ...tuning });
  connector.open();
  return connector;
}

/** How long a stop waits for an orderly close before it resets the connection. */
const STOP_GRACE_MS = 2_000;

/** CONNACK return codes of MQTT 3.1.1 (3.2.2.3), as a refusal's reason. */
const CONNACK_REFUSALS: Record<number, string> = {
  1: 'unacceptable protocol version',
  2: 'client id rejected',
  3: 'server unavailable',
  4: 'bad user name or password',
  5: 'not authorized',
};

const SOCKET_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  ETIMEDOUT: 'timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EPIPE: 'connection closed by the broker',
};

class MqttConnector implements Connector {
  private client: MqttClient | null = null;
  private acks: AckHold | null = null;
  private readonly pump: BatchPump;
  private urlIndex = 0;
  private failedRounds = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  /** Why the current connection failed or ended, from its last error. */
  private failure: string | null = null;
  private subscribed = false;
  private stopped = false;
  private stopping: Promise<void> | null = null;
  private lastReport: ConnectorState | null = null;
  /** The pipeline stops for good (unrelease, delete): the broker should keep nothing for this session. */
  private endSession = false;

  constructor(
    private readonly context: ConnectorContext,
    private readonly settings: MqttSettings,
    private readonly tuning: MqttTuning,
  ) {
    this.pump = new BatchPump((batch) => context.deliver(batch), tuning, () => {
      // deliver rejects only when the pipeline stops: nothing more is read or acknowledged.
      context.log.info({ dataSourceId: context.dataSource.id }, 'MQTT connector stops: the pipeline is stopping');
      void this.stop();
    });
    if (context.signal.aborted) this.stopped = true;
    else context.signal.addEventListener('abort', () => void this.stop(), { once: true });
  }

  open() {
    if (this.stopped) return;
    const url = this.settings.urls[this.urlIndex]!;
    this.failure = null;
    let client: MqttClient;
    try {
      client = mqtt.connect(url.address, {
        protocolVersion: 4,
        clean: false,
        clientId: this.settings.clientId,
        keepalive: this.settings.keepaliveSeconds,
        connectTimeout: this.settings.connectTimeoutMs,
        reconnectPeriod: 0,
        // A subscription is renewed on every connection (below), not by MQTT.js.
        resubscribe: false,
        username: this.settings.username ?? url.username,
        password: this.settings.password ?? url.password,
      });
    } catch (error) {
      this.failure = this.reasonOf(error);
      this.scheduleRetry();
      return;
    }
    this.client = client;
    this.acks = holdAcks(client);
    this.takeMessagesOf(client);
    client.on('connect', (connack) => this.connected(client, connack.sessionPresent));
    client.on('error', (error) => {
      if (client === this.client) this.failure = this.reasonOf(error);
    });
    client.on('close', () => this.closed(client));
  }

  stop(options: { endSession?: boolean } = {}): Promise<void> {
    if (options.endSession) this.endSession = true;
    this.stopping ??= this.shutDown();
    return this.stopping;
  }

  private async shutDown() {
    this.stopped = true;
    this.pump.stop();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const client = this.client;
    // Held acknowledgements are not sent: the broker redelivers those messages to the next session.
    this.acks?.drop();
    this.client = null;
    this.acks = null;
    if (client === null) return;
    const socketClosed = client.stream && !client.stream.closed ? once(client.stream, 'close').catch(() => undefined) : undefined;
    // A DISCONNECT and an orderly close, not a reset: a reset discards what is still in the socket's
    // buffer, acknowledgements of committed batches included (the broker would send those again).
    // A broker that does not take the DISCONNECT within STOP_GRACE_MS gets the reset after all.
    if (this.endSession && client.connected) {
      // Without its subscriptions the persistent session collects nothing while the dataset is
      // not AVAILABLE; what was published meanwhile is not stored (the contract).
      await Promise.race([client.unsubscribeAsync(this.settings.topics).catch(() => undefined), sleep(STOP_GRACE_MS)]);
    }
    const forced = setTimeout(() => client.stream?.destroy(), STOP_GRACE_MS);
    await new Promise<void>((resolve) => client.end(!client.connected, () => resolve()));
    await socketClosed;
    clearTimeout(forced);
    this.context.log.info({ dataSourceId: this.context.dataSource.id }, 'MQTT connector stopped');
  }

  /**
   * MQTT.js hands a QoS 0/1 PUBLISH to `handleMessage`, and a QoS 2 one to `customHandleAcks` before
   * its PUBREC (and to `handleMessage` only at PUBREL). A QoS 2 message is taken at PUBLISH: MQTT.js
   * keeps it in memory until PUBREL, so after a crash in between it would be lost, while taking it
   * at PUBLISH and holding the PUBREC until commit makes the broker send it again instead.
   */
  private takeMessagesOf(client: MqttClient) {
    client.handleMessage = (packet, proceed) => {
      if (packet.qos === 2) return proceed(); // its PUBREL: taken at PUBLISH already
      this.take(client, packet, () => proceed());
    };
    // MQTT.js uses this option only with MQTT 5, where it may refuse a message; set on the client,
    // it runs with 3.1.1 too, and its callback (code 0: accepted) is MQTT.js's go-ahead to PUBREC.
    client.options.customHandleAcks = (_topic, _payload, packet: IPublishPacket, proceed) => {
      if (packet.qos !== 2) return proceed(0); // QoS 1: taken in handleMessage
      this.take(client, packet, () => proceed(0));
    };
  }

  private take(client: MqttClient, packet: IPublishPacket, proceed: () => void) {
    // A connection being dropped: its message comes again on the next one.
    if (client !== this.client || this.acks === null || this.stopped) return;
    const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
    const records = recordsOfPayload(packet.topic, payload, new Date());
    const ack = packet.qos > 0 && packet.messageId !== undefined ? this.acks.hold(packet.messageId) : null;
    this.pump.take({ records, ack }, proceed);
  }

  private connected(client: MqttClient, sessionPresent: boolean) {
    if (client !== this.client) return;
    const { shown } = this.settings.urls[this.urlIndex]!;
    this.context.log.info({ dataSourceId: this.context.dataSource.id, url: shown, sessionPresent }, 'MQTT connector connected');
    // Subscribed on every connection, session or not: a changed `topics` takes effect, and a
    // broker that lost the session (a restart without persistence) gets the subscription back.
    client.subscribe(this.settings.topics, { qos: this.settings.qos }, (error, _granted, suback) => {
      if (client !== this.client) return;
      if (error && !suback) return; // the connection went away; `close` reports it
      const codes = (suback?.granted ?? []) as number[];
      const refused = this.settings.topics.filter((_, i) => codes[i] === undefined || (codes[i]! & 0x80) !== 0);
      if (refused.length === this.settings.topics.length) {
        this.failure = `the broker refused the subscription to ${topicList(refused)}`;
        client.end(true);
        return;
      }
      this.subscribed = true;
      this.failedRounds = 0;
      const some = refused.length > 0 ? `; the broker refused ${topicList(refused)}` : '';
      const message = `subscribed to ${topicList(this.settings.topics.filter((topic) => !refused.includes(topic)))} on ${shown}${some}`;
      const log = { dataSourceId: this.context.dataSource.id, url: shown, refused: refused.length };
      if (refused.length > 0) this.context.log.warn(log, `MQTT connector subscribed, some topics refused: ${message}`);
      else this.context.log.info(log, 'MQTT connector subscribed');
      this.report({ state: 'RUNNING', message });
    });
  }

  private closed(client: MqttClient) {
    if (client !== this.client) return;
    this.acks?.drop();
    this.client = null;
    this.acks = null;
    if (this.stopped) return;
    const { shown } = this.settings.urls[this.urlIndex]!;
    const reason = this.failure ?? 'the connection closed';
    const ran = this.subscribed;
    if (ran) {
      this.subscribed = false;
      this.context.log.info({ dataSourceId: this.context.dataSource.id, url: shown, reason }, 'MQTT connector lost its connection');
    }
    this.report({ state: 'RETRYING', message: `${shown}: ${reason}` });
    this.scheduleRetry(ran);
  }

  /**
   * After a connection that ran: the first URL again, soon. After a failed attempt: the next URL at
   * once, and when every URL failed, the first after a wait that doubles per round up to retryMaxMs.
   */
  private scheduleRetry(afterRunning = false) {
    if (this.stopped) return;
    let wait = this.tuning.retryMinMs;
    if (afterRunning) {
      this.urlIndex = 0;
      this.failedRounds = 0;
    } else {
      this.urlIndex = (this.urlIndex + 1) % this.settings.urls.length;
      if (this.urlIndex === 0) {
        wait = Math.min(this.tuning.retryMaxMs, this.tuning.retryMinMs * 2 ** Math.min(this.failedRounds, 30));
        this.failedRounds++;
      } else {
        wait = 0;
      }
    }
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.open();
    }, wait);
  }

  /** Reports, and logs, only what changed: a broker down for hours is one line, not one per retry. */
  private report(state: ConnectorState) {
    const last = this.lastReport;
    if (last !== null && last.state === state.state && last.message === state.message) return;
    this.lastReport = state;
    if (state.state === 'RETRYING') {
      this.context.log.info({ dataSourceId: this.context.dataSource.id, message: state.message }, 'MQTT connector cannot read its broker, retrying');
    }
    this.context.report(state);
  }

  /** A failure as a short reason, without anything of the configuration's secrets. */
  private reasonOf(error: unknown): string {
    const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
    let reason: string;
    if (typeof code === 'number' && CONNACK_REFUSALS[code]) reason = `refused: ${CONNACK_REFUSALS[code]}`;
    else if (typeof code === 'string' && SOCKET_ERRORS[code]) reason = SOCKET_ERRORS[code];
    else if (message === 'connack timeout') reason = `no answer within connect_timeout (${this.settings.connectTimeoutMs} ms)`;
    else if (message === 'Keepalive timeout') reason = 'the broker stopped answering (keepalive timeout)';
    else reason = typeof message === 'string' && message !== '' ? message.slice(0, 200) : String(code ?? 'unknown error');
    return this.withoutSecrets(reason);
  }

  private withoutSecrets(text: string): string {
    const secrets = [this.settings.password, ...this.settings.urls.map((url) => url.password)].filter((secret): secret is string => !!secret);
    return secrets.reduce((clean, secret) => clean.split(secret).join('********'), text);
  }
}

const topicList = (topics: string[]) => topics.map((topic) => JSON.stringify(topic)).join(', ');
