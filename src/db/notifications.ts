import pg from 'pg';
import { oneAtATime } from '../util/one-at-a-time.js';
import type { ConnectionLog } from './client.js';

/** A running LISTEN; `close()` ends it for good. */
export interface Listener {
  close(): Promise<void>;
  /**
   * NOTIFYs the channel over the LISTEN connection, so that a notification never queues behind
   * the pool's other queries; false when that connection is down (the caller sends it otherwise).
   */
  notify(payload: string): Promise<boolean>;
}

const RECONNECT_DELAY_MS = 1_000;

/**
 * LISTENs on a PostgreSQL channel over a connection of its own (a pooled one would be handed to
 * other queries). A dropped connection is re-opened after a pause, and `onReconnect` runs then:
 * whatever was notified while it was down is lost, so the caller re-reads its state. Callers keep
 * a polling fallback anyway; this only makes changes arrive at once.
 */
export function listenForNotifications(
  url: string,
  channel: string,
  handlers: { onNotify: (payload: string | undefined) => void; onReconnect: () => void },
  log: ConnectionLog,
): Listener {
  let client: pg.Client | null = null;
  let closed = false;
  let retry: NodeJS.Timeout | null = null;

  const connect = async (reconnecting: boolean) => {
    if (closed) return;
    const candidate = new pg.Client({ connectionString: url });
    candidate.on('notification', (message) => {
      if (message.channel === channel) handlers.onNotify(message.payload);
    });
    candidate.on('error', (error) => {
      log.warn({ err: { message: error.message } }, `LISTEN ${channel}: connection lost; re-connecting`);
      scheduleReconnect(candidate);
    });
    candidate.on('end', () => scheduleReconnect(candidate));
    try {
      await candidate.connect();
      await candidate.query(`listen ${pg.escapeIdentifier(channel)}`);
      if (closed) return void (await candidate.end().catch(() => {}));
      client = candidate;
      if (reconnecting) handlers.onReconnect();
    } catch (error) {
      log.warn({ err: { message: (error as Error).message } }, `LISTEN ${channel}: could not connect; trying again`);
      scheduleReconnect(candidate);
    }
  };

  const scheduleReconnect = (failed: pg.Client) => {
    if (closed || retry || (client !== null && client !== failed)) return;
    client = null;
    failed.removeAllListeners('notification');
    void failed.end().catch(() => {});
    retry = setTimeout(() => {
      retry = null;
      void connect(true);
    }, RECONNECT_DELAY_MS);
    retry.unref();
  };

  void connect(false);
  // A change feed's flushes overlap: their NOTIFYs take turns on the connection.
  const inTurn = oneAtATime();
  return {
    notify: (payload) => inTurn(async () => {
      if (!client) return false;
      await client.query('select pg_notify($1, $2)', [channel, payload]);
      return true;
    }),
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      const current = client;
      client = null;
      await current?.end().catch(() => {});
    },
  };
}
