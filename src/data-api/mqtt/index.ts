import { createServer, type Server } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Duplex } from 'node:stream';
import { clientAddressOf, proxyTrustOf } from '../../http/trusted-proxies.js';
import { WebSocketServer, createWebSocketStream, type WebSocket } from 'ws';
import type { GatewayContext } from '../gateway-context.js';
import type { RouteTable } from '../route-table.js';
import { createStaBroker, type StaBroker } from './broker.js';
import { ConnectionCaps } from './connection-caps.js';

/** The path of MQTT over WebSocket on the data API listener. */
export const MQTT_WEBSOCKET_PATH = '/mqtt';

export interface MqttListenOptions {
  /** The TCP port of the broker (MQTT_PORT); null opens none (tests, MQTT_PORT=off). */
  port: number | null;
  host: string;
}

/**
 * SensorThings over MQTT in the data API process: the broker starts with the gateway (it needs the
 * route table) and stops before the gateway closes, so that its WebSocket and TCP connections do
 * not hold the HTTP server's close open. MQTT over WebSocket rides the gateway's own HTTP listener
 * at `/mqtt`, so it needs no port of its own and passes the same load balancer as the HTTP API.
 */
export function installMqtt(app: FastifyInstance, ctx: GatewayContext, routes: RouteTable, options: MqttListenOptions): void {
  let broker: StaBroker | null = null;
  let tcp: Server | null = null;
  const caps = new ConnectionCaps(ctx.config.mqtt);
  const trust = proxyTrustOf(ctx.config.trustProxy);
  // ws collects a whole WebSocket message before it hands it on, and refuses one announced larger
  // than this before buffering it; the MQTT limits apply to the packets inside.
  const sockets = new WebSocketServer({ noServer: true, maxPayload: ctx.config.mqtt.maxPacketBytes });

  app.server.on('upgrade', (request, socket, head) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== MQTT_WEBSOCKET_PATH || !broker) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    // The upgrade's TCP peer, or the client a trusted proxy (TRUST_PROXY) forwarded: behind a proxy
    // every client would otherwise share its address and its per-address cap.
    const release = caps.admit(clientAddressOf(request, trust));
    if (!release) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n', () => socket.destroy());
      return;
    }
    socket.once('close', release);
    const ready = broker;
    sockets.handleUpgrade(request, socket, head, (ws) => ready.handle(gracefulStream(ws), request));
  });

  let closing = false;
  let retry: NodeJS.Timeout | null = null;
  /** With MQTT_CLUSTER and Redis away at start, the broker starts when Redis is back; HTTP does not wait. */
  const startBroker = async (): Promise<void> => {
    try {
      const started = await createStaBroker(ctx, routes, app.log);
      if (closing) return void await started.close();
      broker = started;
    } catch (error) {
      if (!ctx.staChanges.clustered || closing) throw error;
      app.log.error({ err: { message: (error as Error).message } }, 'SensorThings MQTT: the broker could not join its cluster; MQTT clients are refused until it does (retrying)');
      retry = setTimeout(() => void startBroker().catch(() => {}), 2_000);
    }
  };

  app.addHook('onReady', async () => {
    await startBroker();
    if (options.port === null) return;
    const server = createServer((socket) => {
      // Refused before a byte is read: a connection over a cap costs nothing but its accept.
      const release = caps.admit(socket.remoteAddress);
      if (!release) return void socket.destroy();
      socket.once('close', release);
      if (broker) return broker.handle(socket);
      // No broker yet (its cluster is unreachable): CONNACK "server unavailable" to the CONNECT.
      socket.once('data', () => socket.end(SERVER_UNAVAILABLE_CONNACK));
      socket.on('error', () => {});
    });
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(options.port!, options.host, () => resolve());
      });
    } catch (error) {
      // The HTTP API (and MQTT over WebSocket) is this process's main service; a port taken by
      // another process (several on one machine, as in the fault tests) must not stop it.
      app.log.error({ port: options.port, err: { message: (error as Error).message } }, 'SensorThings MQTT: cannot listen on MQTT_PORT; MQTT over TCP is off in this process (over WebSocket it stays)');
      return;
    }
    tcp = server;
    app.log.info({ port: options.port }, 'SensorThings MQTT broker listening');
  });

  app.addHook('preClose', async () => {
    closing = true;
    if (retry) clearTimeout(retry);
    const closingTcp = tcp && new Promise<void>((resolve) => tcp!.close(() => resolve()));
    await broker?.close();
    for (const client of sockets.clients) client.terminate();
    await closingTcp;
    broker = null;
    tcp = null;
  });
}

/** CONNACK, return code 3: the server is unavailable (MQTT 3.1.1 §3.2.2.3). */
const SERVER_UNAVAILABLE_CONNACK = Buffer.from([0x20, 0x02, 0x00, 0x03]);

/** How long a closing WebSocket may take to answer the close handshake before it is cut. */
const CLOSE_HANDSHAKE_MS = 2_000;

/**
 * The WebSocket as a stream for aedes, with two changes to ws' stream:
 * - Aedes destroys its stream right after a refusing CONNACK, and ws would cut the TCP connection
 *   at once (close code 1006), racing the CONNACK; a close handshake first flushes it and closes
 *   cleanly (1000).
 * - mqtt-packet writes a packet in pieces inside cork/uncork; gathering the corked pieces makes one
 *   WebSocket frame per packet instead of one per piece (a CONNACK was four frames).
 */
function gracefulStream(ws: WebSocket): Duplex {
  const stream = createWebSocketStream(ws);
  stream._writev = (chunks, callback) => ws.send(Buffer.concat(chunks.map(({ chunk }) => chunk as Buffer)), callback);
  const destroy = stream.destroy.bind(stream);
  stream.destroy = (error?: Error) => {
    if (ws.readyState !== ws.OPEN) return destroy(error);
    ws.once('close', () => destroy(error));
    ws.close(1000);
    setTimeout(() => ws.terminate(), CLOSE_HANDSHAKE_MS).unref();
    return stream;
  };
  return stream;
}
