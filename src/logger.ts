import { pino, type DestinationStream, type Logger } from 'pino';

/**
 * Log lines are written to stdout in batches of at least this many bytes, and at least every
 * STDOUT_FLUSH_MS. Written one by one (pino's default), every line became a write on libuv's thread
 * pool: a wake-up of a thread and a callback per request, about 5% of the data API's CPU per WFS
 * request in a profile. On exit (normal, a signal, a fatal error) pino writes what is left; a
 * `kill -9` loses at most the last STDOUT_FLUSH_MS of lines.
 */
const STDOUT_BATCH_BYTES = 4096;
const STDOUT_FLUSH_MS = 200;

function bufferedStdout(): DestinationStream {
  // pino.destination registers the exit hook that writes what is left (flushSync).
  const stdout = pino.destination({ dest: 1, sync: false, minLength: STDOUT_BATCH_BYTES });
  let unflushed = false;
  const timer = setInterval(() => {
    if (!unflushed) return; // an idle process writes nothing
    unflushed = false;
    try {
      stdout.flush();
    } catch {
      clearInterval(timer); // the stream is closed: nothing more will be written
    }
  }, STDOUT_FLUSH_MS);
  timer.unref();
  return {
    write(line: string) {
      unflushed = true;
      return stdout.write(line);
    },
  };
}

/**
 * The process's JSON logger (one line per event, with the request id as `reqId`). Credentials are
 * redacted wherever a request's headers might be logged, whichever serializer logs them. Without a
 * destination it writes to stdout in batches (see bufferedStdout).
 */
export function createLogger(level: string, destination: DestinationStream = bufferedStdout()): Logger {
  return pino({
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'headers.cookie', 'authorization'],
      censor: '[redacted]',
    },
  }, destination);
}
