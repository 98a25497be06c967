/**
 * The baseline "its own SQL served by a bare node:http + pg": a child process of `npm run bench`
 * (bench/limits/run.ts) with a plain `node:http` server and a `pg.Pool` of the application's size.
 * For each read scenario it serves one path, `/<name>`, that runs the statements the application
 * runs for that request (captured in process, with their parameters) one after another on one
 * pooled client, and answers the rows of every statement as JSON (an array of rows per statement):
 * all the data the answer is made of, as the driver gives it, without the standard's shape (links,
 * nesting). No routing library, no validation, no auth: what is left is what any Node HTTP front of
 * that SQL costs.
 *
 * Usage: node <tsx flags> bench/limits/sql-server.ts <settings.json>; it prints `listening <port>`.
 */
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import type { CapturedQuery } from '../sql-alone.js';

export interface SqlServerSettings {
  databaseUrl: string;
  poolSize: number;
  port: number;
  /** Path (`/<name>`) → the statements of that read, in the order the application runs them. */
  scenarios: Record<string, CapturedQuery[]>;
}

const settings = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as SqlServerSettings;
const pool = new pg.Pool({ connectionString: settings.databaseUrl, max: settings.poolSize });

const server = createServer((request, response) => {
  const queries = settings.scenarios[request.url ?? ''];
  if (!queries) {
    response.writeHead(request.url === '/health' ? 200 : 404).end();
    return;
  }
  void (async () => {
    const client = await pool.connect();
    try {
      const rows: unknown[][] = [];
      for (const query of queries) rows.push((await client.query(query.text, query.values)).rows);
      const body = JSON.stringify(rows);
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    } finally {
      client.release();
    }
  })().catch((error: Error) => {
    response.writeHead(500, { 'content-type': 'text/plain' }).end(error.message);
  });
});

server.listen(settings.port, '127.0.0.1', () => console.log(`listening ${settings.port}`));

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    server.close();
    server.closeAllConnections();
    void pool.end().finally(() => process.exit(0));
  });
}
