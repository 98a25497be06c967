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

/**
 * The process's standard output as the logger's destination, written asynchronously: under load the
 * lines of many requests go out in one write instead of one blocking write(2) per line (two per
 * request at LOG_LEVEL=info) on the event loop. A line is written as soon as the one before is, so
 * nothing waits for a buffer to fill; pino flushes what is left synchronously on exit.
 */
export function standardOutput(): DestinationStream {
  return pino.destination({ dest: 1, sync: false });
}
