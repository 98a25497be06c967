import { Aedes, type AuthenticateError, type Client } from 'aedes';
import type { Duplex } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import type { GatewayContext } from '../gateway-context.js';
import { CallerCache } from '../../access/caller-cache.js';
import type { PayloadRoute, RouteTable } from '../route-table.js';
import { MqttAccess, type MqttSession } from './mqtt-access.js';
import { ChangeNotifier } from './notifier.js';
import { createFromPublish } from './publish-create.js';
import { SubscriptionIndex } from './subscriptions.js';
import { parseTopic, routeTopicPrefix } from './topics.js';
import { GuardedConnection } from './connection-guard.js';
import { ClientIdBindings, ClusterClientIds } from './client-ids.js';
import { NotificationWriter } from './notification-writer.js';
import { OfflineQueues, type EnqueueingPersistence } from './offline-queues.js';
import { gateDeliveries } from './delivery-gate.js';
import { randomUUID } from 'node:crypto';

export interface BrokerLog {
  debug(details: object, message: string): void;
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

/** The SensorThings MQTT broker of one gateway process; connections come from TCP or WebSocket. */
export interface StaBroker {
  handle(stream: Duplex, request?: IncomingMessage): void;
  close(): Promise<void>;
}

/** CONNACK return codes of MQTT 3.1.1 (§3.2.2.3). */
const IDENTIFIER_REJECTED = 2;
const SERVER_UNAVAILABLE = 3;
const NOT_AUTHORIZED = 5;

const refusal = (returnCode: number, message: string) => Object.assign(new Error(message), { returnCode }) as AuthenticateError;

/**
 * An aedes broker whose every decision is the gateway's: CONNECT verifies the token, SUBSCRIBE is a
 * payload read of the topic's route, PUBLISH a payload write that creates the entity. Messages of
 * clients are never forwarded as they came; subscribers only receive what the change feed reports
 * (the entity as stored, in the server's own serialization). Aedes 1.2 speaks MQTT 3.1 and 3.1.1;
 * an MQTT 5 CONNECT is answered "unacceptable protocol version".
 *
 * In front of aedes, each connection passes a GuardedConnection (packet sizes, CONNECT deadline);
 * a client id is bound to its identity (ClientIdBindings) before aedes may take a session over.
 */
export async function createStaBroker(ctx: GatewayContext, routes: RouteTable, log: BrokerLog): Promise<StaBroker> {
  // The rights checks before its deliveries (on PostgreSQL, a pool of the broker's own: see runtime.ts).
  const store = ctx.openBrokerStore(log);
  const { db } = store;
  const access = new MqttAccess({
    // Its own caller cache on its own connections, with the process's clock of the access version:
    // a change the HTTP requests have seen, its deliveries see too.
    callers: new CallerCache(db, undefined, (error) => log.warn({ err: { message: error.message } }, 'could not record the last use of a personal access token'), ctx.callers.versions),
    verifier: ctx.verifier, routes, log });
  const sessions = new WeakMap<Client, MqttSession>();
  const clientIds = new ClientIdBindings();
  /** The connected client of each client id, for the notifier's subscribers. */
  const connected = new Map<string, Client>();
  const subscriptions = new SubscriptionIndex((topic) => {
    const parsed = parseTopic(topic);
    return parsed && routeTopicPrefix(parsed.datasetId, parsed.slug);
  }, ctx.staChanges.interest.localChanged);
  const dataApiUrl = ctx.config.dataApi.baseUrl;
  // A route proxied to an upstream SensorThings service keeps its data there: our store never
  // writes it, so this broker could neither create in it nor announce its changes.
  const servedHere = (route: PayloadRoute | undefined): route is PayloadRoute =>
    route?.standard === 'STA' && (route.upstreamUrl ?? ctx.config.staUpstream.url) === null;

  const outgoing = new NotificationWriter((clientId, unwrittenBytes) => log.debug({ clientId, unwrittenBytes }, 'MQTT message not sent: the subscriber is not reading'));

  // MQTT_CLUSTER: this broker is one of the cluster's (redis-cluster.ts), on Redis once it is up.
  const joined = await ctx.staChanges.joinCluster();
  const cluster = joined?.cluster ?? null;
  let node: Awaited<ReturnType<NonNullable<typeof cluster>['node']>> | null = null;
  try {
    if (cluster && !(await cluster.whenUp(5_000))) throw new Error('Redis (MQTT_CLUSTER) is not reachable');
    node = cluster && await cluster.node({ maxSessionDelivery: ctx.config.mqtt.maxQueuedMessages });
  } catch (error) {
    await joined?.leave();
    await store.close();
    throw error;
  }
  /** Client ids bound across the cluster's brokers (set once the broker listens, before any client). */
  let clusterIds: ClusterClientIds | null = null;

  const broker = new Aedes({
    ...(node ? { mq: node.mq, persistence: node.persistence as never } : {}),
    authenticate(client, _username, password, done) {
      // Redis down: nothing this broker would promise (sessions, deliveries) holds.
      if (cluster && !cluster.isUp) return done(refusal(SERVER_UNAVAILABLE, 'the MQTT cluster is unavailable'), false);
      access.connect(password).then(async (session) => {
        if (!session) return done(refusal(NOT_AUTHORIZED, 'the access token does not verify'), false);
        // Each anonymous connection is an identity of its own: a session it asked to keep could never
        // be resumed by anyone, only fill the broker's memory.
        if (session.token === null && !client.clean) return done(refusal(IDENTIFIER_REJECTED, 'an anonymous client cannot keep a session (clean session 0)'), false);
        if (client.closed) return done(refusal(SERVER_UNAVAILABLE, 'the connection closed during CONNECT'), false);
        // Before aedes touches the session of this id (a clean CONNECT drops its subscriptions, then takes it over).
        if (!clientIds.claim(client.id, session.identity, client, !client.clean)) {
          log.info({ clientId: client.id }, 'MQTT CONNECT refused: the client id is held by another identity');
          return done(refusal(IDENTIFIER_REJECTED, 'the client id is in use by another identity'), false);
        }
        client.conn.once('close', () => clientIds.release(client.id, client));
        if (clusterIds) {
          // This connection's own id: a binding is released only by the connection that holds it.
          const holder = randomUUID();
          if (!(await clusterIds.claim(client.id, session.identity, holder, !client.clean))) {
            log.info({ clientId: client.id }, 'MQTT CONNECT refused: the client id is held by another identity on another replica');
            return done(refusal(IDENTIFIER_REJECTED, 'the client id is in use by another identity'), false);
          }
          client.conn.once('close', () => void clusterIds!.release(client.id, holder).catch(() => {}));
          if (client.closed) return done(refusal(SERVER_UNAVAILABLE, 'the connection closed during CONNECT'), false);
        }
        sessions.set(client, session);
        done(null, true);
      }).catch((error: Error) => {
        log.error({ err: { message: error.message } }, 'MQTT CONNECT: could not load the caller');
        done(refusal(SERVER_UNAVAILABLE, 'server unavailable'), false);
      });
    },

    authorizeSubscribe(client, subscription, done) {
      const topic = parseTopic(subscription.topic);
      const session = sessions.get(client);
      // Wildcards and topics that name no resource get the failure code (0x80) in the SUBACK.
      if (!topic || !session) return done(null, null);
      access.decide(session, topic.datasetId, topic.slug, 'read').then(async (decision) => {
        if (decision.outcome !== 'allow' || !servedHere(decision.route)) return done(null, null);
        // The writers of every process learn of a route's first subscriber here before its SUBACK.
        await ctx.staChanges.interest.before(routeTopicPrefix(topic.datasetId, topic.slug));
        done(null, subscription);
      }, (error: Error) => {
        log.error({ err: { message: error.message } }, 'MQTT SUBSCRIBE: could not authorize');
        done(null, null);
      });
    },

    authorizePublish(client, packet, done) {
      const topic = parseTopic(packet.topic);
      const session = client && sessions.get(client);
      // Refused: an error makes aedes close the connection (MQTT 3.1.1 has no negative PUBACK).
      if (!topic || !session) return done(new Error('not a SensorThings collection topic'));
      access.decide(session, topic.datasetId, topic.slug, 'write').then(async (decision) => {
        if (decision.outcome !== 'allow' || !servedHere(decision.route)) {
          log.info({ topic: packet.topic, outcome: decision.outcome }, 'MQTT publish refused; closing the connection');
          return done(new Error('not authorized to write'));
        }
        await createFromPublish(ctx.sta, dataApiUrl, decision.route, topic, packet.payload as Buffer, decision.rights, log, ctx.config.dataApi.limits.jsonMaxDepth);
        // Never kept for later subscribers: what they get is the stored entity, not this message.
        packet.retain = false;
        done(null);
      }).catch((error: Error) => {
        log.error({ err: { message: error.message } }, 'MQTT PUBLISH: could not authorize');
        done(error);
      });
    },

    authorizeForward(client, packet) {
      // Packets a client published carry its id; only the broker's own notifications go out (in a
      // cluster, those of the publishing instance of any process: their bytes are prepared here).
      const notification = (packet as { clientId?: string }).clientId !== undefined ? undefined
        : outgoing.of(packet.payload) ?? (cluster ? outgoing.adopt(packet.topic, packet.payload, routeOf(packet.topic)) : undefined);
      const session = sessions.get(client);
      // A subscription was authorized once; each message is checked again against current rights
      // (brought up to date by the notifier before it published; a session's own when it comes
      // back for what was queued while it was away).
      if (!notification || !session || !servedHere(notification.route) || !access.mayReadNow(session, notification.route)) return null;
      // Published at QoS 1: a QoS 1 subscription gets it from aedes (a packet id, its PUBACK, and
      // queued while a persistent session is away) ...
      const subscribed = (client as unknown as { subscriptions?: Record<string, { qos?: number }> }).subscriptions?.[packet.topic];
      if ((subscribed?.qos ?? 0) > 0) return packet;
      // ... a QoS 0 one as the bytes serialized once for all its subscribers: aedes must not write its own copy.
      outgoing.write(client, notification);
      return null;
    },
  });
  (broker as unknown as NodeJS.EventEmitter).on('error', (error: Error) => log.warn({ err: { message: error.message } }, 'MQTT broker error'));
  await broker.listen();
  // What aedes keeps for a persistent session while its client is away is bounded (in a cluster,
  // by the instance that publishes: cluster-publisher.ts).
  const offline = cluster ? null : new OfflineQueues(ctx.config.mqtt.maxQueuedMessages, (clientId) => connected.has(clientId),
    (clientId) => log.info({ clientId, kept: ctx.config.mqtt.maxQueuedMessages }, 'MQTT: a persistent session away holds MQTT_MAX_QUEUED_MESSAGES messages; later ones are not kept for it'));
  // After listen(): aedes opens its persistence there.
  offline?.install((broker as unknown as { persistence: EnqueueingPersistence }).persistence);
  if (cluster) clusterIds = new ClusterClientIds(cluster.commands, broker.id);

  broker.on('subscribe', (granted, client) => {
    for (const subscription of granted) if ((subscription.qos as number) !== 128) subscriptions.add(client.id, subscription.topic);
  });
  broker.on('unsubscribe', (topics, client) => {
    for (const topic of topics) subscriptions.remove(client.id, topic);
  });
  broker.on('client', (client) => {
    connected.set(client.id, client);
    offline?.connected(client.id);
    // A persistent session's subscriptions, restored by aedes without a 'subscribe' event (in a
    // cluster, from Redis, after its client last connected to another replica).
    for (const topic of Object.keys((client as unknown as { subscriptions?: object }).subscriptions ?? {})) subscriptions.add(client.id, topic);
  });
  broker.on('clientDisconnect', (client) => {
    const current = connected.get(client.id) === client;
    if (current) connected.delete(client.id);
    // A persistent session keeps its subscriptions (aedes queues for it) until it unsubscribes; a
    // connection that a newer one of its client id replaced leaves the newer one's alone (the
    // index is by client id: a late close of the old one wiped the new one's subscriptions).
    if (client.clean && (current || !connected.has(client.id))) subscriptions.removeClient(client.id);
  });
  broker.on('clientError', (client, error) => log.debug({ clientId: client.id, err: { message: error.message } }, 'MQTT client error'));

  /** The route a topic names, for rights checks on messages from the cluster. */
  const routeOf = (topic: string) => {
    const [, , datasetId = '', slug = ''] = topic.split('/');
    return routes.lookup(datasetId, slug);
  };
  /** Brings the rights of the subscribers of `topics` up to date (and the route table first). */
  const bringCurrent = async (topics: Iterable<string>) => {
    const subscribers = new Set<MqttSession>();
    for (const topic of topics) {
      for (const clientId of subscriptions.clientsOf(topic)) {
        const client = connected.get(clientId);
        const session = client && sessions.get(client);
        if (session) subscribers.add(session);
      }
    }
    // The route table learns of a dataset no longer open by NOTIFY or its poll (500 ms); a
    // delivery must not wait for either: a moved route version reloads it first.
    await Promise.all([routes.reloadIfBehind(), access.bringCurrent(subscribers)]);
  };

  /** What stops this broker's deliveries before it closes, and what its transport leaves after. */
  let stopDelivering: () => Promise<void> | void;
  let leaveTransport = async () => {};
  if (cluster && node) {
    // Messages from the cluster reach this broker's subscribers after their rights were brought up to date.
    gateDeliveries(node.mq, (topic) => parseTopic(topic) !== null, bringCurrent, log, (lag) => ctx.metrics.mqtt.clusterDelivered(lag));
    stopDelivering = cluster.watch((up) => {
      if (up) return;
      // Redis is down: the sessions and deliveries this broker promised do not hold; its clients go.
      for (const client of connected.values()) client.close();
    });
    leaveTransport = async () => {
      await clusterIds?.stop();
      await node.close();
      await joined!.leave();
    };
  } else {
    const notifier = new ChangeNotifier({
      subscriptions, log, unwanted: (count) => ctx.metrics.mqtt.unwanted(count),
      beforePublish: bringCurrent,
      publish: (topic, message) => {
        const payload = outgoing.prepare(topic, message, routeOf(topic));
        // QoS 1 (contract): each subscription gets it at the QoS it asked for (see authorizeForward).
        broker.publish({ cmd: 'publish', topic, payload, qos: 1, retain: false, dup: false }, () => {});
      },
    });
    stopDelivering = await ctx.staChanges.subscribe(notifier.deliver);
  }

  return {
    handle: (stream, request) => {
      const guarded = new GuardedConnection(stream, ctx.config.mqtt, (details) => log.debug(details, 'MQTT connection closed by a limit'));
      broker.handle(guarded, request);
    },
    close: async () => {
      await stopDelivering();
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      await leaveTransport();
      await store.close();
    },
  };
}
