import type { MQEmitter } from 'mqemitter';

interface GatedMessage { topic: string }
type LocalEmit = (message: GatedMessage, callback?: (error?: Error) => void) => void;

/**
 * In the Redis cluster mode, messages reach a broker's subscribers through its mqemitter-redis,
 * which hands each message that Redis brought to its local emit. Here that emit waits, for the
 * messages `gated` picks (SensorThings topics), until `before` brought their subscribers' rights up
 * to date, as the broker's notifier does before it publishes on PostgreSQL alone: a revocation the
 * database knows is never missed by a delivery. One check runs at a time, for every message that
 * arrived before it started; what arrives meanwhile waits for the next, all in one (a check per
 * burst, not per message: checked one batch after another, a busy broker fell seconds behind).
 * Messages keep their order; a failed check withholds its messages (logged). `delivered` hears,
 * after each burst, how long its oldest message waited here (the broker's lag behind Redis).
 */
export function gateDeliveries(
  mq: MQEmitter,
  gated: (topic: string) => boolean,
  before: (topics: Set<string>) => Promise<void>,
  log: { warn(details: object, message: string): void },
  delivered: (lagSeconds: number) => void = () => {},
): void {
  const emitter = mq as unknown as { _emit: LocalEmit };
  const emitHere = emitter._emit.bind(mq);
  let waiting: GatedMessage[] = [];
  /** When the oldest waiting message arrived. */
  let oldestAt = 0;
  let checking = false;
  emitter._emit = (message, callback) => {
    if (!gated(message.topic)) return emitHere(message, callback);
    if (waiting.length === 0) oldestAt = performance.now();
    waiting.push(message);
    callback?.();
    if (checking) return;
    checking = true;
    setImmediate(() => void drain());
  };
  const drain = async () => {
    while (waiting.length > 0) {
      const batch = waiting;
      const arrivedAt = oldestAt;
      waiting = [];
      try {
        await before(new Set(batch.map((message) => message.topic)));
      } catch (error) {
        log.warn({ err: { message: (error as Error).message }, messages: batch.length }, 'MQTT notifications: subscribers\' rights could not be checked; messages withheld');
        continue;
      }
      for (const message of batch) emitHere(message);
      delivered((performance.now() - arrivedAt) / 1000);
    }
    checking = false;
  };
}
