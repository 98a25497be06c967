import type pg from 'pg';

/**
 * `COPY … FROM STDIN` over pg's own connection, without a dependency: pg runs any object with a
 * `submit(connection)` method as a query and hands it the protocol messages that follow (the same
 * hook pg-copy-streams uses). We need no stream: the data is in memory, sent as CopyData chunks.
 */

interface CopyConnection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

class CopyIn {
  rows = 0;
  private failed = false;
  readonly done: Promise<number>;
  private finish!: (rows: number) => void;
  private fail!: (error: Error) => void;

  constructor(private readonly text: string, private readonly chunks: Buffer[]) {
    this.done = new Promise((resolve, reject) => {
      this.finish = resolve;
      this.fail = reject;
    });
  }

  submit(connection: CopyConnection) {
    connection.query(this.text);
  }

  handleCopyInResponse(connection: CopyConnection) {
    for (const chunk of this.chunks) connection.sendCopyFromChunk(chunk);
    connection.endCopyFrom();
  }

  handleCommandComplete(message: { text: string }) {
    this.rows = Number(/(\d+)$/.exec(message.text)?.[1] ?? 0);
  }

  // At once, as pg's own queries do: a lost connection reports its error and no ReadyForQuery.
  handleError(error: Error) {
    this.failed = true;
    this.fail(error);
  }

  handleReadyForQuery() {
    if (!this.failed) this.finish(this.rows);
  }
}

/** COPY's text-format `lines` (each ending in a newline) as CopyData chunks of about 64 KiB, as psql's \copy sends them. */
export function copyChunks(lines: string[]): Buffer[] {
  const chunks: Buffer[] = [];
  for (let i = 0, text = ''; i <= lines.length; i++) {
    if (i === lines.length || text.length >= 65_536) {
      if (text) chunks.push(Buffer.from(text));
      text = '';
    }
    if (i < lines.length) text += lines[i];
  }
  return chunks;
}

/** Runs `copy <target> from stdin` (text format) with the chunks of `copyChunks`; the rows copied. */
export async function copyIn(client: pg.Client, target: string, chunks: Buffer[]): Promise<number> {
  const copy = new CopyIn(`copy ${target} from stdin`, chunks);
  void client.query(copy as unknown as pg.QueryConfig);
  return copy.done;
}
