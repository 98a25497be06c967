import type { Readable } from 'node:stream';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';

/** How long a COPY's own connection may take to open before the download is read in batches instead. */
const CONNECT_TIMEOUT_MS = 5_000;

/**
 * `COPY (…) TO STDOUT` streamed as PostgreSQL writes it, each over a connection of its own: the
 * fastest way out of the database for a whole table (no row objects, no batches), at the price of a
 * connection held for as long as the client reads. So at most `concurrency` run at once; when every
 * slot is taken, `open` answers null and the caller reads another way (keyset batches), and a
 * connection that cannot be opened is told the same way. Slow clients hold the backend through
 * TCP backpressure: the connection is not read while its bytes wait to be written.
 *
 * Breaking off the iteration (a client that goes away) destroys the connection's socket, which
 * stops the statement at its next write: a COPY cannot be cancelled on its own connection, and
 * ending the connection politely would first read what the backend still has to send.
 */
export class CopyOut {
  #running = 0;

  constructor(private readonly options: { databaseUrl: string; concurrency: number }) {}

  /**
   * Connects and starts `statement` (a `COPY … TO STDOUT`, with no parameters: COPY takes none, so
   * every name in it is escaped by the caller), or null when no slot is free or no connection
   * opens. The stream gives the bytes in the order PostgreSQL sends them and fails with the
   * statement's error. Its slot and connection are released when it closes: at its end, on its
   * error, or when the caller destroys it (as `for await` does when broken off).
   */
  async open(statement: string): Promise<Readable | null> {
    if (this.#running >= this.options.concurrency) return null;
    this.#running++;
    // Named in pg_stat_activity; a server that does not answer in time is one that cannot COPY now.
    const client = new pg.Client({ connectionString: this.options.databaseUrl, application_name: 'download-copy', connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    // An error after the connection is up (the backend terminated) reaches the stream too; this
    // only keeps it from being an unhandled 'error' event.
    client.on('error', () => {});
    try {
      await client.connect();
    } catch {
      this.#running--;
      return null;
    }
    const stream = client.query(copyTo(statement));
    let ended = false;
    stream.once('end', () => { ended = true; });
    stream.once('close', () => {
      this.#running--;
      if (ended) void client.end().catch(() => {});
      else client.connection.stream.destroy();
    });
    return stream;
  }
}
