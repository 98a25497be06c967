import { Duplex } from 'node:stream';

/** The MQTT limits a connection is held to before aedes sees its bytes (`config.mqtt`). */
export interface PacketLimits {
  /** Any packet (all its bytes) whose fixed header arrives before the CONNACK went out. */
  maxConnectBytes: number;
  /** Any packet after that. */
  maxPacketBytes: number;
  /** From accept until a CONNACK accepting the connection went out. */
  connectTimeoutMs: number;
}

/** The fixed header's Remaining Length takes at most four bytes (MQTT 3.1.1 §2.2.3). */
const MAX_LENGTH_BYTES = 4;

/**
 * Follows MQTT's framing as bytes pass, keeping none of them: the fixed header tells each packet's
 * size before its body arrives, so a packet over the limit is known after at most five bytes.
 * (mqtt-packet, under aedes, collects a whole packet before it parses it, however large it says it is.)
 */
export class PacketMeter {
  private state: 'type' | 'length' | 'body' = 'type';
  private length = 0;
  private lengthBytes = 0;
  private bodyLeft = 0;

  constructor(public limit: number) {}

  /** Null while every packet so far is within the limit, else why not. */
  feed(chunk: Uint8Array): string | null {
    let at = 0;
    while (at < chunk.length) {
      if (this.state === 'body') {
        const taken = Math.min(this.bodyLeft, chunk.length - at);
        this.bodyLeft -= taken;
        at += taken;
        if (this.bodyLeft === 0) this.state = 'type';
        continue;
      }
      const byte = chunk[at++]!;
      if (this.state === 'type') {
        this.state = 'length';
        this.length = 0;
        this.lengthBytes = 0;
        continue;
      }
      this.length += (byte & 0x7f) * 128 ** this.lengthBytes;
      this.lengthBytes++;
      if (byte & 0x80) {
        if (this.lengthBytes === MAX_LENGTH_BYTES) return 'malformed Remaining Length';
        continue;
      }
      const size = 1 + this.lengthBytes + this.length;
      if (size > this.limit) return `a packet of ${size} bytes is over the limit of ${this.limit}`;
      this.bodyLeft = this.length;
      this.state = this.length === 0 ? 'type' : 'body';
    }
    return null;
  }
}

/** What the guard tells about a connection it closed. */
export type GuardLog = (details: { reason: string }) => void;

/**
 * A connection as aedes gets it: the client's bytes pass through a PacketMeter (limit
 * `maxConnectBytes` until the broker's CONNACK accepted the connection, `maxPacketBytes` after) and
 * a connection that breaks a limit, or has no accepting CONNACK within `connectTimeoutMs` of its
 * accept, is destroyed at once. Nothing is held here but what the inner stream already gave, and
 * the inner stream is paused while aedes does not read (aedes pauses a client during CONNECT), so a
 * connection never holds more than one packet within its limit plus the stream's buffers.
 *
 * The broker's first packet on a connection is always its CONNACK, so the outgoing side only needs
 * its first four bytes to know when the connection was accepted (return code 0). The limit changes
 * before that CONNACK is handed to the socket, so the client cannot have read it earlier.
 */
export class GuardedConnection extends Duplex {
  private readonly meter: PacketMeter;
  private deadline: NodeJS.Timeout | null;
  /** The first bytes the broker wrote, until they tell whether the CONNACK accepted. */
  private connack: number[] | null = [];

  constructor(private readonly inner: Duplex, private readonly limits: PacketLimits, private readonly log: GuardLog) {
    super({ allowHalfOpen: false });
    this.meter = new PacketMeter(limits.maxConnectBytes);
    this.deadline = setTimeout(() => this.refuse(`no CONNECT accepted within ${limits.connectTimeoutMs} ms`), limits.connectTimeoutMs);
    this.deadline.unref();
    inner.on('data', (chunk: Buffer) => {
      if (this.destroyed) return;
      const problem = this.meter.feed(chunk);
      if (problem) return this.refuse(problem);
      if (!this.push(chunk)) inner.pause();
    });
    inner.on('end', () => this.push(null));
    inner.on('error', (error) => this.destroy(error));
    inner.on('close', () => this.destroy());
    inner.pause();
  }

  override _read(): void {
    this.inner.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.watchConnack(chunk);
    this.passOn(this.inner.write(chunk), callback);
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, callback: (error?: Error | null) => void): void {
    // Corked pieces of one packet stay together (one WebSocket frame per packet).
    this.inner.cork();
    let flowing = true;
    for (const { chunk } of chunks) {
      this.watchConnack(chunk);
      flowing = this.inner.write(chunk);
    }
    this.inner.uncork();
    this.passOn(flowing, callback);
  }

  /** The inner stream's back pressure is ours: the next write waits while it is full. */
  private passOn(flowing: boolean, callback: (error?: Error | null) => void): void {
    if (flowing) callback();
    else this.inner.once('drain', () => callback());
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.inner.end(callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.stopDeadline();
    if (!this.inner.destroyed) this.inner.destroy();
    callback(error);
  }

  private watchConnack(chunk: Buffer): void {
    if (!this.connack) return;
    for (const byte of chunk) {
      this.connack.push(byte);
      if (this.connack.length === 4) break;
    }
    if (this.connack.length < 4) return;
    const [type, , , returnCode] = this.connack;
    this.connack = null;
    if (type !== 0x20 || returnCode !== 0) return;
    this.meter.limit = this.limits.maxPacketBytes;
    this.stopDeadline();
  }

  private stopDeadline(): void {
    if (this.deadline) clearTimeout(this.deadline);
    this.deadline = null;
  }

  private refuse(reason: string): void {
    if (this.destroyed) return;
    this.log({ reason });
    this.inner.pause();
    this.destroy();
  }
}
