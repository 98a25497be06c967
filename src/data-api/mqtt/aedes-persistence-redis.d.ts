// aedes-persistence-redis ships no types; this service constructs its async persistence (aedes 1.x
// calls it) and calls the two enqueue methods itself (redis-cluster.ts).
declare module 'aedes-persistence-redis/asyncPersistence.js' {
  import type { Redis } from 'ioredis';
  export default class AsyncRedisPersistence {
    constructor(options: { conn: Redis; maxSessionDelivery?: number; packetTTL?: (packet: unknown) => number });
    outgoingEnqueueCombi(subs: Array<{ clientId: string }>, packet: unknown): Promise<void>;
    outgoingEnqueue(sub: { clientId: string }, packet: unknown): Promise<void>;
    createRetainedStreamCombi(patterns: string[]): AsyncIterable<unknown> | NodeJS.ReadableStream;
    destroy(): Promise<void>;
  }
}
