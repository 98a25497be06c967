/**
 * Recognises errors that mean "the database cannot be reached or dropped the connection", as
 * opposed to errors about the query itself. Those are transient: the request answers 503 with
 * Retry-After (or is retried when nothing was sent yet) and the process carries on.
 */

// SQLSTATE class 08 (connection exception), admin/crash shutdown, cannot connect now, too many connections.
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
// pg reports a dropped or unobtainable connection with these messages and no code.
const PG_MESSAGES = [
  'Connection terminated unexpectedly',
  'Connection terminated',
  'Client has encountered a connection error and is not queryable',
  'timeout exceeded when trying to connect',
];

interface ErrorLike { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown }

/** The error and its causes (and an AggregateError's members, as net reports several addresses). */
function* chain(error: unknown, depth = 0): Generator<ErrorLike> {
  if (!error || typeof error !== 'object' || depth > 5) return;
  const candidate = error as ErrorLike;
  yield candidate;
  if (Array.isArray(candidate.errors)) for (const inner of candidate.errors) yield* chain(inner, depth + 1);
  yield* chain(candidate.cause, depth + 1);
}

export function isDatabaseUnavailable(error: unknown): boolean {
  for (const candidate of chain(error)) {
    const code = typeof candidate.code === 'string' ? candidate.code : '';
    if (code.startsWith('08') || UNAVAILABLE_SQLSTATES.has(code) || NETWORK_CODES.has(code)) return true;
    const message = typeof candidate.message === 'string' ? candidate.message : '';
    if (PG_MESSAGES.some((known) => message.startsWith(known))) return true;
  }
  return false;
}

const REFUSED_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', '57P03', '53300']);

/**
 * True when a new connection was refused outright, so no statement reached the database and trying
 * again cannot apply anything twice. (A pool timeout is not included: it has already waited.)
 */
export function isConnectionRefused(error: unknown): boolean {
  for (const candidate of chain(error)) {
    if (typeof candidate.code === 'string' && REFUSED_CODES.has(candidate.code)) return true;
  }
  return false;
}

/** A short description for a log line, e.g. "ECONNREFUSED at 127.0.0.1:5433". */
export function describeConnectionError(error: unknown): string {
  for (const candidate of chain(error)) {
    const { address, port } = candidate as { address?: string; port?: number };
    if (typeof candidate.code === 'string' && address) return `${candidate.code} at ${address}${port ? `:${port}` : ''}`;
  }
  const first = chain(error).next().value;
  const code = typeof first?.code === 'string' ? `${first.code}: ` : '';
  return `${code}${typeof first?.message === 'string' ? first.message : String(error)}`;
}
