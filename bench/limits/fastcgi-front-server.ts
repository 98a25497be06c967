/**
 * The floor of any Node front of MapServer: a child process of `npm run bench` (bench/limits/run.ts)
 * with a plain `node:http` server that hands each request to the gateway's own MapServer workers
 * as nginx does in the "gateway vs nginx" pair: a FastCGI connection per request, workers taken in
 * turn, the query string passed with the map's alias before it (`map=<alias>&…`), and the answer's
 * status, type and bytes sent back. It sends the FastCGI parameters the gateway sends (the libpq
 * environment, MAPSERVER_CONFIG_FILE, the CGI variables) and speaks FastCGI with the gateway's own
 * src/ows/fastcgi.ts. No framework, no token, no access check, no log line, no request queue:
 * what is left is what Node itself costs per request (HTTP, sockets, event loop).
 *
 * Usage: node <tsx flags> bench/limits/fastcgi-front-server.ts <settings.json>.
 */
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { FastCgiConnection } from '../../src/ows/fastcgi.js';

export interface FastCgiFrontSettings {
  port: number;
  /** The workers' unix sockets. */
  sockets: string[];
  /** Location name (the path without its slash) → map alias. */
  maps: Record<string, string>;
  /** FastCGI parameters of every request (the libpq environment, MAPSERVER_CONFIG_FILE, NO_NETWORK). */
  env: Record<string, string>;
}

const settings = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as FastCgiFrontSettings;
let nextWorker = 0;

const server = createServer((request, response) => {
  const url = request.url ?? '/';
  const question = url.indexOf('?');
  const path = question < 0 ? url : url.slice(0, question);
  if (path === '/health') return void response.writeHead(200).end();
  const alias = settings.maps[path.slice(1)];
  if (!alias) return void response.writeHead(404).end();
  const connection = new FastCgiConnection(settings.sockets[nextWorker++ % settings.sockets.length]!, false);
  connection.request({
    ...settings.env,
    REQUEST_METHOD: 'GET', QUERY_STRING: `map=${alias}&${question < 0 ? '' : url.slice(question + 1)}`, CONTENT_LENGTH: '0',
    SERVER_PROTOCOL: 'HTTP/1.1', SCRIPT_NAME: path, SERVER_NAME: '127.0.0.1', SERVER_PORT: String(settings.port),
  }).then((answer) => {
    response.writeHead(answer.status, { 'content-type': answer.headers['content-type'] ?? 'application/octet-stream', 'content-length': answer.body.length }).end(answer.body);
  }, (error: Error) => {
    response.writeHead(502, { 'content-type': 'text/plain' }).end(error.message);
  }).finally(() => connection.destroy());
});

server.listen(settings.port, '127.0.0.1', () => console.log(`listening ${settings.port}`));

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    server.close();
    server.closeAllConnections();
    process.exit(0);
  });
}
