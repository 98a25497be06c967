/**
 * The baseline of issue 33's SensorThings target: a read's SQL served by a bare `node:http` server
 * on a `pg` pool (no framework, no token, no STA server), in a process of its own as the real
 * server is. Each request runs the captured statements in order on one pooled client and answers
 * the last one's rows as JSON. Started by `bareHttpLoad` (bare-http.ts); prints its port.
 *
 * Environment: BARE_DATABASE_URL, BARE_QUERIES (a JSON file of `CapturedQuery[]`), BARE_POOL_SIZE.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import pg from 'pg';
import type { CapturedQuery } from '../sql-alone.js';

const queries = JSON.parse(readFileSync(process.env['BARE_QUERIES']!, 'utf8')) as CapturedQuery[];
const pool = new pg.Pool({ connectionString: process.env['BARE_DATABASE_URL'], max: Number(process.env['BARE_POOL_SIZE'] ?? 10) });

const server = http.createServer((_request, response) => {
  void (async () => {
    const client = await pool.connect();
    try {
      let rows: unknown[] = [];
      for (const query of queries) rows = (await client.query(query.text, query.values)).rows;
      const body = JSON.stringify({ value: rows });
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      response.end(body);
    } catch (error) {
      response.writeHead(500);
      response.end(String(error));
    } finally {
      client.release();
    }
  })();
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  console.log(typeof address === 'object' && address ? address.port : 0);
});
process.on('SIGTERM', () => {
  server.close();
  void pool.end().finally(() => process.exit(0));
});
