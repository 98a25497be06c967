import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

// A caller's id is kept only when it is a sane token, so it cannot inject into logs or headers.
const ACCEPTABLE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdOf(request: IncomingMessage): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && ACCEPTABLE_REQUEST_ID.test(given) ? given : randomUUID();
}
