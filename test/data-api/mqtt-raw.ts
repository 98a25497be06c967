import { connect as tcpConnect, type Socket } from 'node:net';

// MQTT 3.1.1 spoken byte by byte, for what a well-behaved client library would never send.

/** The Remaining Length encoding of the fixed header (MQTT 3.1.1 §2.2.3). */
export function remainingLength(length: number): Buffer {
  const bytes: number[] = [];
  do {
    let byte = length % 128;
    length = Math.floor(length / 128);
    if (length > 0) byte |= 0x80;
    bytes.push(byte);
  } while (length > 0);
  return Buffer.from(bytes);
}

const utf8 = (text: string | Buffer) => {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  const length = Buffer.alloc(2);
  length.writeUInt16BE(bytes.length);
  return Buffer.concat([length, bytes]);
};

/** A CONNECT of MQTT 3.1.1; the token goes in the password, as the broker expects. */
export function connectPacket(options: { clientId: string; username?: string; password?: string; clean?: boolean }): Buffer {
  const flags = (options.username !== undefined ? 0x80 : 0) | (options.password !== undefined ? 0x40 : 0) | (options.clean === false ? 0 : 0x02);
  const body = Buffer.concat([
    utf8('MQTT'), Buffer.from([4, flags, 0, 60]),
    utf8(options.clientId),
    ...(options.username !== undefined ? [utf8(options.username)] : []),
    ...(options.password !== undefined ? [utf8(options.password)] : []),
  ]);
  return Buffer.concat([Buffer.from([0x10]), remainingLength(body.length), body]);
}

/** A SUBSCRIBE (packet id 1, QoS 0) of these topic filters. */
export function subscribePacket(topics: string[]): Buffer {
  const body = Buffer.concat([Buffer.from([0, 1]), ...topics.flatMap((topic) => [utf8(topic), Buffer.from([0])])]);
  return Buffer.concat([Buffer.from([0x82]), remainingLength(body.length), body]);
}

/** A raw TCP connection to the broker that records what it receives and when it closes. */
export interface RawConnection {
  socket: Socket;
  received(): Buffer;
  /** Resolves when the connection closed (from either side); rejects after `ms`. */
  closed(ms?: number): Promise<void>;
  isClosed(): boolean;
  /** Resolves once `predicate` holds for what was received; rejects after `ms` or at close. */
  receivedWhen(predicate: (bytes: Buffer) => boolean, ms?: number): Promise<Buffer>;
}

export async function rawConnection(port: number, localAddress = '127.0.0.1'): Promise<RawConnection> {
  const socket = tcpConnect({ host: '127.0.0.1', port, localAddress });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const chunks: Buffer[] = [];
  let isClosed = false;
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  // Writes after the broker closed fail with EPIPE or ECONNRESET; the close is what tests observe.
  socket.on('error', () => {});
  const closing = new Promise<void>((resolve) => socket.once('close', () => { isClosed = true; resolve(); }));
  const received = () => Buffer.concat(chunks);
  return {
    socket,
    received,
    isClosed: () => isClosed,
    closed: (ms = 5_000) => within(ms, 'the connection stayed open', closing),
    receivedWhen: (predicate, ms = 5_000) => within(ms, 'the expected bytes did not arrive', new Promise<Buffer>((resolve, reject) => {
      const check = () => {
        if (predicate(received())) return done(() => resolve(received()));
        if (isClosed) done(() => reject(new Error(`closed after receiving ${received().toString('hex')}`)));
      };
      const done = (then: () => void) => {
        socket.off('data', check);
        socket.off('close', check);
        then();
      };
      socket.on('data', check);
      socket.on('close', check);
      check();
    })),
  };
}

/** CONNACK with return code `code` (session present 0). */
export const isConnack = (code: number) => (bytes: Buffer) => bytes.length >= 4 && bytes[0] === 0x20 && bytes[1] === 2 && bytes[3] === code;

/**
 * Writes `header` and then up to `totalBytes` of filler in 64 KiB pieces, waiting for the socket to
 * drain, until all is written or the broker closed the connection. Returns the bytes written.
 */
export async function flood(connection: RawConnection, header: Buffer, totalBytes: number): Promise<number> {
  const piece = Buffer.alloc(64 * 1024, 0x61);
  let written = 0;
  if (!connection.socket.write(header)) await drainedOrClosed(connection);
  while (written < totalBytes && !connection.isClosed() && !connection.socket.destroyed) {
    written += piece.length;
    if (!connection.socket.write(piece)) await drainedOrClosed(connection);
  }
  return written;
}

function drainedOrClosed(connection: RawConnection): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      connection.socket.off('drain', done);
      connection.socket.off('close', done);
      resolve();
    };
    connection.socket.once('drain', done);
    connection.socket.once('close', done);
  });
}

function within<T>(ms: number, message: string, promise: Promise<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${message} (${ms} ms)`)), ms);
    promise.then((value) => { clearTimeout(timer); resolve(value); }, (error) => { clearTimeout(timer); reject(error); });
  });
}
