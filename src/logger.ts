import { writeSync } from 'node:fs';
import { pino, type DestinationStream, type Logger } from 'pino';

/**
 * Log lines are written to stdout in batches of at least this many bytes, and at least every
 * STDOUT_FLUSH_MS. Written one by one (pino's default), every line became a write on libuv's thread
 * pool: a wake-up of a thread and a callback per request, about 5% of the data API's CPU per WFS
 * request in a profile. On exit (normal, a signal, a fatal error) what is left is written; a
 * `kill -9` loses at most the last STDOUT_FLUSH_MS of lines.
 */
const STDOUT_BATCH_BYTES = 4096;
const STDOUT_FLUSH_MS = 200;

/**
 * The batch is ours, not sonic-boom's (`minLength`): sonic-boom's own flush does nothing while a
 * write is under way, and what it held below `minLength` then stayed unwritten until the next line
 * came, in an idle process for good. Each batch handed over here is written out at once.
 */
function bufferedStdout(): DestinationStream {
  // pino.destination registers the exit hook that writes out what the stream holds (flushSync).
  const stdout = pino.destination({ dest: 1, sync: false });
  let batch = '';
  const handOver = () => {
    if (batch === '') return;
    const lines = batch;
    batch = '';
    stdout.write(lines);
  };
  setInterval(handOver, STDOUT_FLUSH_MS).unref();
  // Registered after pino's hook, so this runs after the stream's older lines were written out.
  process.once('exit', () => {
    if (batch !== '') writeSync(1, batch);
  });
  return {
    write(line: string) {
      batch += line;
      if (batch.length >= STDOUT_BATCH_BYTES) handOver();
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
