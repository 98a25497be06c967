import { pino, type DestinationStream, type Logger } from 'pino';

/**
 * The process's JSON logger (one line per event, with the request id as `reqId`). Credentials are
 * redacted wherever a request's headers might be logged, whichever serializer logs them.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'headers.cookie', 'authorization'],
      censor: '[redacted]',
    },
  }, destination);
}
