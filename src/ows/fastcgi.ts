// Minimal FastCGI client (responder role) for talking to a local MapServer pool.
// Spec: https://fastcgi-archives.github.io/FastCGI_Specification.html
import net from 'node:net';

export interface CgiResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  stderr: string;
}

export class FastCgiError extends Error {
  override name = 'FastCgiError';
}

const VERSION = 1;
const BEGIN_REQUEST = 1;
const END_REQUEST = 3;
const PARAMS = 4;
const STDIN = 5;
const STDOUT = 6;
const STDERR = 7;
const RESPONDER = 1;
const KEEP_CONN = 1;
const MAX_CONTENT = 0xffff;
// One request at a time per connection, so a constant id is enough.
const REQUEST_ID = 1;

const HEADER = 8;

/** The bytes of a name or value length: one byte below 128, else four with the high bit set. */
const lengthSize = (n: number) => (n < 128 ? 1 : 4);

function writeLength(out: Buffer, at: number, n: number): number {
  if (n < 128) return out.writeUInt8(n, at);
  return out.writeUInt32BE((n | 0x80000000) >>> 0, at);
}

function writeHeader(out: Buffer, at: number, type: number, length: number, padding: number): number {
  out.writeUInt8(VERSION, at);
  out.writeUInt8(type, at + 1);
  out.writeUInt16BE(REQUEST_ID, at + 2);
  out.writeUInt16BE(length, at + 4);
  out.writeUInt8(padding, at + 6);
  out.writeUInt8(0, at + 7);
  return at + HEADER;
}

// Padding to 8 bytes is optional, but libfcgi reads aligned records fastest.
const paddingOf = (length: number) => (8 - (length % 8)) % 8;

/** The bytes a stream (PARAMS/STDIN) of `length` content bytes takes: its records, the empty one that ends it included. */
function streamSize(length: number): number {
  let size = HEADER;
  for (let i = 0; i < length; i += MAX_CONTENT) {
    const n = Math.min(MAX_CONTENT, length - i);
    size += HEADER + n + paddingOf(n);
  }
  return size;
}

/** A stream (PARAMS/STDIN) is a run of records ended by an empty one; written into `out` at `at`. */
function writeStream(out: Buffer, at: number, type: number, data: Buffer): number {
  for (let i = 0; i < data.length; i += MAX_CONTENT) {
    const n = Math.min(MAX_CONTENT, data.length - i);
    const padding = paddingOf(n);
    at = writeHeader(out, at, type, n, padding);
    at += data.copy(out, at, i, i + n);
    out.fill(0, at, at + padding);
    at += padding;
  }
  return writeHeader(out, at, type, 0, 0);
}

export function encodeParams(params: Record<string, string>): Buffer {
  const pairs: Array<[string, string, number, number]> = [];
  let size = 0;
  for (const name in params) {
    const value = params[name]!;
    const n = Buffer.byteLength(name, 'utf8');
    const v = Buffer.byteLength(value, 'utf8');
    pairs.push([name, value, n, v]);
    size += lengthSize(n) + lengthSize(v) + n + v;
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const [name, value, n, v] of pairs) {
    at = writeLength(out, at, n);
    at = writeLength(out, at, v);
    at += out.write(name, at, 'utf8');
    at += out.write(value, at, 'utf8');
  }
  return out;
}

/** The whole request (BEGIN_REQUEST, PARAMS, STDIN) in one buffer: one write, one copy of the body. */
export function encodeRequest(params: Record<string, string>, body: Buffer, keep: boolean): Buffer {
  const encoded = encodeParams(params);
  const out = Buffer.allocUnsafe(HEADER + 8 + streamSize(encoded.length) + streamSize(body.length));
  let at = writeHeader(out, 0, BEGIN_REQUEST, 8, 0);
  out.writeUInt16BE(RESPONDER, at);
  out.writeUInt8(keep ? KEEP_CONN : 0, at + 2);
  out.fill(0, at + 3, at + 8);
  at = writeStream(out, at + 8, PARAMS, encoded);
  writeStream(out, at, STDIN, body);
  return out;
}

export function parseCgiOutput(out: Buffer, stderr = ''): CgiResponse {
  const crlf = out.indexOf('\r\n\r\n');
  const lf = out.indexOf('\n\n');
  if (crlf < 0 && lf < 0) throw new FastCgiError('CGI output has no header block');
  const [end, sepLength] = lf >= 0 && (crlf < 0 || lf < crlf) ? [lf, 2] : [crlf, 4];
  const headers: Record<string, string> = {};
  for (const line of out.subarray(0, end).toString('latin1').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const status = headers.status ? Number.parseInt(headers.status, 10) : 200;
  return { status: Number.isFinite(status) ? status : 502, headers, body: out.subarray(end + sepLength), stderr };
}

interface Pending {
  stdout: Buffer[];
  stdoutBytes: number;
  stderr: Buffer[];
  resolve(r: CgiResponse): void;
  reject(e: Error): void;
}

const EMPTY = Buffer.alloc(0);

/**
 * One FastCGI connection to a unix socket. Kept (FCGI_KEEP_CONN) it is reused across requests, and
 * if the application closed it after a request anyway, the next request reconnects; not kept, the
 * application closes it after its one request.
 */
export class FastCgiConnection {
  /** How many sockets were opened; lets tests prove the connection is kept. */
  connects = 0;
  private socket: net.Socket | null = null;
  private connecting: Promise<void> | null = null;
  private destroyed = false;
  private pending: Pending | null = null;
  /** The record being read: its header (gathered when a chunk ends inside it), then its content and padding. */
  private readonly header = Buffer.alloc(HEADER);
  private headerBytes = 0;
  private type = 0;
  private contentLeft = 0;
  private paddingLeft = 0;

  constructor(private readonly path: string, private readonly keep = true) {}

  connect(): Promise<void> {
    if (this.socket) return Promise.resolve();
    // One socket at a time: a request made while its connection (opened ahead) is still connecting waits for it.
    this.connecting ??= new Promise<void>((resolve, reject) => {
      const socket = net.createConnection(this.path);
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.off('error', reject);
        if (this.destroyed) {
          // Destroyed while connecting: never left open in the application's accept queue.
          socket.destroy();
          reject(new FastCgiError('FastCGI connection destroyed'));
          return;
        }
        this.connects++;
        this.socket = socket;
        this.headerBytes = 0;
        this.contentLeft = 0;
        this.paddingLeft = 0;
        socket.on('data', (chunk) => this.onData(chunk));
        socket.on('error', (err) => this.fail(new FastCgiError(`FastCGI socket error: ${err.message}`)));
        socket.on('close', () => {
          if (this.socket === socket) this.socket = null;
          // After END_REQUEST nothing waits: no error is made (its stack trace costs).
          if (this.pending) this.fail(new FastCgiError('FastCGI connection closed before END_REQUEST'));
        });
        resolve();
      });
    }).finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  /**
   * Opens the connection ahead of its request (a failure is left for `request` to meet: it connects
   * again). Waiting in the application's accept queue, or accepted and read from, it carries the
   * request the moment `request` is called, without a connect and a turn of the event loop first.
   */
  preconnect(): void {
    this.connect().catch(() => undefined);
  }

  async request(params: Record<string, string>, body: Buffer = EMPTY): Promise<CgiResponse> {
    if (this.pending) throw new FastCgiError('a request is already in flight on this connection');
    const encoded = encodeRequest(params, body, this.keep);
    await this.connect();
    const socket = this.socket!;
    return new Promise((resolve, reject) => {
      this.pending = { stdout: [], stdoutBytes: 0, stderr: [], resolve, reject };
      socket.write(encoded);
    });
  }

  destroy(): void {
    this.destroyed = true;
    this.socket?.destroy();
    this.socket = null;
    // The pool destroys every connection once answered: an error (and its stack) only when one waits.
    if (this.pending) this.fail(new FastCgiError('FastCGI connection destroyed'));
  }

  private fail(err: Error): void {
    const p = this.pending;
    this.pending = null;
    p?.reject(err);
  }

  /**
   * Records are read as they come, without joining chunks: STDOUT content is kept as slices of the
   * chunks it arrived in and joined once, at END_REQUEST. Only a header cut between chunks is gathered.
   */
  private onData(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.contentLeft > 0) {
        const n = Math.min(this.contentLeft, chunk.length - at);
        this.content(chunk.subarray(at, at + n));
        this.contentLeft -= n;
        at += n;
        continue;
      }
      if (this.paddingLeft > 0) {
        const n = Math.min(this.paddingLeft, chunk.length - at);
        this.paddingLeft -= n;
        at += n;
        continue;
      }
      let header: Buffer;
      if (this.headerBytes === 0 && chunk.length - at >= HEADER) {
        header = chunk.subarray(at, at + HEADER);
        at += HEADER;
      } else {
        const n = Math.min(HEADER - this.headerBytes, chunk.length - at);
        chunk.copy(this.header, this.headerBytes, at, at + n);
        this.headerBytes += n;
        at += n;
        if (this.headerBytes < HEADER) return;
        this.headerBytes = 0;
        header = this.header;
      }
      this.type = header.readUInt8(1);
      this.contentLeft = header.readUInt16BE(4);
      this.paddingLeft = header.readUInt8(6);
      // END_REQUEST's content (8 bytes) is read like any other; the request ends once it is read.
      if (this.type === END_REQUEST && this.contentLeft === 0) this.end();
    }
  }

  private content(part: Buffer): void {
    const p = this.pending;
    if (!p) return; // stray record after a destroy/timeout: nothing waits for it
    if (this.type === STDOUT) {
      p.stdout.push(part);
      p.stdoutBytes += part.length;
    } else if (this.type === STDERR) p.stderr.push(part);
    else if (this.type === END_REQUEST && this.contentLeft === part.length) this.end();
  }

  private end(): void {
    const p = this.pending;
    if (!p) return;
    this.pending = null;
    const stderr = p.stderr.length ? Buffer.concat(p.stderr).toString('utf8') : '';
    try {
      p.resolve(parseCgiOutput(p.stdout.length === 1 ? p.stdout[0]! : Buffer.concat(p.stdout, p.stdoutBytes), stderr));
    } catch (err) {
      p.reject(err as Error);
    }
  }
}
