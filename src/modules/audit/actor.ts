import type { FastifyRequest } from 'fastify';

/**
 * Who acts in a change, as the audit log records it: the service's user behind the token (null for
 * a caller the service does not know) and the request's id. Built once in the route, handed down
 * to the services as a plain value.
 */
export interface Actor { actorId: string | null; requestId: string | null }

export const actorOf = (request: FastifyRequest): Actor => ({ actorId: request.caller?.profile?.userId ?? null, requestId: request.id });

/** Changes no request made (the saga worker finishing a deletion it was not given an actor for). */
export const SYSTEM_ACTOR: Actor = { actorId: null, requestId: null };
