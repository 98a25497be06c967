import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import type { Database } from '../db/client.js';

/** /health/live (the process answers) and /health/ready (the database answers too); no token. */
export function registerHealthRoutes(app: FastifyInstance, db: Database) {
  app.get('/health/live', { schema: { hide: true } }, async () => ({ status: 'UP' }));
  app.get('/health/ready', { schema: { hide: true } }, async (_request, reply) => {
    try {
      await sql`select 1`.execute(db);
      return { status: 'UP', checks: { database: 'UP' } };
    } catch {
      return reply.code(503).send({ status: 'DOWN', checks: { database: 'DOWN' } });
    }
  });
}
