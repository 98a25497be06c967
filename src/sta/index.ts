// TEMPORARY (lead's worktree only, replaced by the sta-store branch): service root only.
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import type { StaServer } from './types.js';
export function createStaServer(_deps: { db: Database }): StaServer {
  return {
    async handle(request) {
      if (request.path !== '') throw new AppError('NOT_FOUND', 'x');
      return { status: 200, body: { value: [{ name: 'Things', url: `${request.baseUrl}/Things` }] } };
    },
    async provision() {},
  };
}
