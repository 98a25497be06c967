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

function record(type: number, content: Buffer = Buffer.alloc(0)): Buffer {
  // Padding to 8 bytes is optional, but libfcgi reads aligned records fastest.
  const padding = (8 - (content.length % 8)) % 8;
  const header = Buffer.alloc(8);
  header.writeUInt8(VERSION, 0);
  header.writeUInt8(type, 1);
  header.writeUInt16BE(REQUEST_ID, 2);
  header.writeUInt16BE(content.length, 4);
  header.writeUInt8(padding, 6);
  return Buffer.concat([header, content, Buffer.alloc(padding)]);
}

/** A stream (PARAMS/STDIN) is a run of records ended by an empty one. */
function stream(type: number, data: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < data.length; i += MAX_CONTENT) out.push(record(type, data.subarray(i, i + MAX_CONTENT)));
  out.push(record(type));
  return out;
}

function lengthBytes(n: number): Buffer {
  if (n < 128) return Buffer.from([n]);
  const b = Buffer.alloc(4);
  b.writeUInt32BE((n | 0x80000000) >>> 0);
  return b;
}

export function encodeParams(params: Record<string, string>): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(params)) {
    const n = Buffer.from(name, 'utf8');
    const v = Buffer.from(value, 'utf8');
    parts.push(lengthBytes(n.length), lengthBytes(v.length), n, v);
  }
  return Buffer.concat(parts);
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
  stderr: Buffer[];
  resolve(r: CgiResponse): void;
  reject(e: Error): void;
}

/**
 * One FastCGI connection to a unix socket. Kept (FCGI_KEEP_CONN) it is reused across requests, and
 * if the application closed it after a request anyway, the next request reconnects; not kept, the
 * application closes it after its one request.
 */
export class FastCgiConnection {
  /** How many sockets were opened; lets tests prove the connection is kept. */
  connects = 0;
  private socket: net.Socket | null = null;
  private pending: Pending | null = null;
  private buffer: Buffer = Buffer.alloc(0);

  constructor(private readonly path: string, private readonly keep = true) {}

  connect(): Promise<void> {
    if (this.socket) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const socket = net.createConnection(this.path);
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.off('error', reject);
        this.connects++;
        this.socket = socket;
        this.buffer = Buffer.alloc(0);
        socket.on('data', (chunk) => this.onData(chunk));
        socket.on('error', (err) => this.fail(new FastCgiError(`FastCGI socket error: ${err.message}`)));
        socket.on('close', () => {
          if (this.socket === socket) this.socket = null;
          this.fail(new FastCgiError('FastCGI connection closed before END_REQUEST'));
        });
        resolve();
      });
    });
  }

  async request(params: Record<string, string>, body: Buffer = Buffer.alloc(0)): Promise<CgiResponse> {
    if (this.pending) throw new FastCgiError('a request is already in flight on this connection');
    await this.connect();
    const socket = this.socket!;
    const begin = Buffer.alloc(8);
    begin.writeUInt16BE(RESPONDER, 0);
    begin.writeUInt8(this.keep ? KEEP_CONN : 0, 2);
    return new Promise((resolve, reject) => {
      this.pending = { stdout: [], stderr: [], resolve, reject };
      socket.write(Buffer.concat([record(BEGIN_REQUEST, begin), ...stream(PARAMS, encodeParams(params)), ...stream(STDIN, body)]));
    });
  }

  destroy(): void {
    this.socket?.destroy();
    this.socket = null;
    this.fail(new FastCgiError('FastCGI connection destroyed'));
  }

  private fail(err: Error): void {
    const p = this.pending;
    this.pending = null;
    p?.reject(err);
  }

  private onData(chunk: Buffer): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    while (this.buffer.length >= 8) {
      const type = this.buffer.readUInt8(1);
      const length = this.buffer.readUInt16BE(4);
      const total = 8 + length + this.buffer.readUInt8(6);
      if (this.buffer.length < total) return;
      const content = this.buffer.subarray(8, 8 + length);
      this.buffer = this.buffer.subarray(total);
      const p = this.pending;
      if (!p) continue; // stray record after a destroy/timeout: nothing waits for it
      if (type === STDOUT) p.stdout.push(content);
      else if (type === STDERR) p.stderr.push(content);
      else if (type === END_REQUEST) {
        this.pending = null;
        const stderr = Buffer.concat(p.stderr).toString('utf8');
        try {
          p.resolve(parseCgiOutput(Buffer.concat(p.stdout), stderr));
        } catch (err) {
          p.reject(err as Error);
        }
      }
    }
  }
}
