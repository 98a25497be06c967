import type { Client } from 'aedes';
import type { PayloadRoute } from '../route-table.js';
import { encodePublish } from './publish-packet.js';

/**
 * Unwritten bytes a subscriber's connection may hold before it misses messages: a client that does
 * not read loses its own QoS 0 messages (MQTT allows it) instead of filling the process's memory.
 */
export const MAX_UNWRITTEN_BYTES = 4 * 1024 * 1024;

/** A notification ready to go out: the route its topic names, and its PUBLISH as bytes. */
export interface PreparedNotification {
  route: PayloadRoute | undefined;
  bytes: Buffer;
}

/**
 * The broker's own notifications, serialized once per message instead of once per subscriber.
 * Aedes copies a message for each subscriber and serializes each copy in five pieces through two
 * streams (ours and the socket's); with a thousand subscribers that took more of the process than
 * the message's database read. Aedes still decides who receives a message (its subscriptions,
 * the broker's authorizeForward); the payload Buffer, shared by every copy, finds its prepared
 * bytes, and each subscriber's connection gets them in one write.
 */
export class NotificationWriter {
  private readonly prepared = new WeakMap<Buffer, PreparedNotification>();

  constructor(private readonly onSkipped: (clientId: string, unwrittenBytes: number) => void, private readonly maxUnwrittenBytes = MAX_UNWRITTEN_BYTES) {}

  /** The payload to publish through aedes for `message` on `topic`; its bytes are kept while aedes holds it. */
  prepare(topic: string, message: string, route: PayloadRoute | undefined): Buffer {
    const payload = Buffer.from(message);
    this.prepared.set(payload, { route, bytes: encodePublish(topic, payload) });
    return payload;
  }

  /**
   * A notification that came from another instance of the cluster (its payload is a Buffer of the
   * cluster's): its bytes are prepared on first use and shared by every subscriber here.
   */
  adopt(topic: string, payload: unknown, route: PayloadRoute | undefined): PreparedNotification | undefined {
    if (!Buffer.isBuffer(payload)) return undefined;
    let notification = this.prepared.get(payload);
    if (!notification) this.prepared.set(payload, notification = { route, bytes: encodePublish(topic, payload) });
    return notification;
  }

  /** The notification a packet aedes forwards carries; undefined for any other packet. */
  of(payload: unknown): PreparedNotification | undefined {
    return Buffer.isBuffer(payload) ? this.prepared.get(payload) : undefined;
  }

  /** Writes it to a connected client, unless its connection already holds too much unwritten. */
  write(client: Client, notification: PreparedNotification): void {
    const connection = client.conn;
    if (!client.connected || client.closed || !connection.writable) return;
    if (connection.writableLength > this.maxUnwrittenBytes) return this.onSkipped(client.id, connection.writableLength);
    connection.write(notification.bytes);
  }
}
