import type { MQEmitter } from 'mqemitter';

interface GatedMessage { topic: string }
type LocalEmit = (message: GatedMessage, callback?: (error?: Error) => void) => void;

/**
 * In the Redis cluster mode, messages reach a broker's subscribers through its mqemitter-redis,
 * which hands each message that Redis brought to its local emit. Here that emit waits, for the
 * messages `gated` picks (SensorThings topics), until `before` brought their subscribers' rights up
 * to date, as the broker's notifier does before it publishes on PostgreSQL alone: a revocation the
 * database knows is never missed by a delivery. Messages arriving in one event-loop turn share one
 * wait, and keep their order; a failed wait withholds them (logged).
 */
export function gateDeliveries(
  mq: MQEmitter,
  gated: (topic: string) => boolean,
  before: (topics: Set<string>) => Promise<void>,
  log: { warn(details: object, message: string): void },
): void {
  const emitter = mq as unknown as { _emit: LocalEmit };
  const emitHere = emitter._emit.bind(mq);
  let waiting: GatedMessage[] = [];
  let turn: Promise<void> = Promise.resolve();
  emitter._emit = (message, callback) => {
    if (!gated(message.topic)) return emitHere(message, callback);
    if (waiting.length === 0) setImmediate(flush);
    waiting.push(message);
    callback?.();
  };
  const flush = () => {
    const batch = waiting;
    waiting = [];
    turn = turn.then(async () => {
      try {
        await before(new Set(batch.map((message) => message.topic)));
      } catch (error) {
        log.warn({ err: { message: (error as Error).message }, messages: batch.length }, 'MQTT notifications: subscribers\' rights could not be checked; messages withheld');
        return;
      }
      for (const message of batch) emitHere(message);
    });
  };
}
