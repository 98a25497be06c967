import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import type { Database } from '../db/client.js';

// A probe must answer promptly even when the database hangs (a dead host, a full pool).
const READY_TIMEOUT_MS = 2_000;

/** /health/live (the process answers) and /health/ready (the database answers too); no token. */
export function registerHealthRoutes(app: FastifyInstance, db: Database) {
  app.get('/health/live', { schema: { hide: true } }, async () => ({ status: 'UP' }));
  app.get('/health/ready', { schema: { hide: true } }, async (_request, reply) => {
    if (await databaseAnswers(db)) return { status: 'UP', checks: { database: 'UP' } };
    return reply.code(503).send({ status: 'DOWN', checks: { database: 'DOWN' } });
  });
}

async function databaseAnswers(db: Database): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), READY_TIMEOUT_MS); });
  const probe = sql`select 1`.execute(db).then(() => true, () => false);
  try {
    return await Promise.race([probe, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
