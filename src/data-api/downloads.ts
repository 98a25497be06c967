import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Database } from '../db/client.js';
import { readDataVersion } from '../db/data-versions.js';
import { setValidators } from '../http/validators.js';
import type { Download } from '../util/download.js';
import type { PayloadRoute } from './route-table.js';

/**
 * A named API's bulk download over HTTP: validators from the schema's data version (a request that
 * holds the current file answers 304 without a row read), `Content-Disposition: attachment`, and
 * the body streamed as the client reads it. Cache-Control is the payload answers' (cache-headers.ts).
 * An error after the first byte cannot become a problem answer any more: the transfer is broken
 * off, so that no client takes a cut file for a whole one.
 */

/** Moves every ETag when what a download holds changes shape (a new column, another order) without the data changing. */
const FORMAT_REVISION = 1;

/** `{first 8 hex digits of the dataset id}-{slug}`: where a download's file name starts. */
export const fileStemOf = (route: PayloadRoute) => `${route.datasetId.replaceAll('-', '').slice(0, 8)}-${route.slug.replace(/[^A-Za-z0-9_-]/g, '_')}`;

export async function sendDownload(
  request: FastifyRequest, reply: FastifyReply, db: Database, schema: string, describe: (version: number) => Promise<Download>,
): Promise<FastifyReply> {
  const { version, changedAt } = await readDataVersion(db, schema);
  const download = await describe(version);
  const { unchanged } = setValidators(request, reply, { etag: `W/"${version}.${FORMAT_REVISION}"`, changedAt });
  reply.header('content-disposition', `attachment; filename="${download.fileName}"`).type(download.mediaType);
  if (unchanged) return reply.code(304).send();
  if (request.method === 'HEAD') return reply.code(200).send();
  const { body } = download;
  if (body.kind === 'chunks') {
    // The first chunk is read before the answer starts: a failure of the first read is a problem answer.
    const chunks = body.chunks()[Symbol.asyncIterator]();
    const first = await chunks.next();
    return reply.code(200).send(Readable.from(readingAhead(startingWith(first, chunks)[Symbol.asyncIterator]()), { objectMode: false }));
  }
  const clientGone = new AbortController();
  reply.raw.once('close', () => { if (!reply.raw.writableFinished) clientGone.abort(); });
  const file = await body.file(clientGone.signal);
  const stream = createReadStream(file.path);
  let released = false;
  const release = () => { if (!released) { released = true; file.release(); } };
  stream.once('close', release);
  reply.raw.once('close', release);
  return reply.code(200).header('content-length', file.size).send(stream);
}

/** The chunks with the first, already read, put back in front; breaking off releases the rest. */
async function* startingWith(first: IteratorResult<Buffer | string>, rest: AsyncIterator<Buffer | string>): AsyncGenerator<Buffer | string> {
  try {
    if (first.done) return;
    yield first.value;
    for (let next = await rest.next(); !next.done; next = await rest.next()) yield next.value;
  } finally {
    await rest.return?.();
  }
}

/**
 * Asks for the next chunk as soon as one is handed on: the database reads the next batch while this
 * process writes the last to the client (two cores at work, not one after the other). At most one
 * chunk waits beside the one being written.
 */
export async function* readingAhead(source: AsyncIterator<Buffer | string>): AsyncGenerator<Buffer | string> {
  // A read that fails while this waits at its `yield` (a slow client) has nobody awaiting it yet:
  // without a handler of its own it would be an unhandled rejection, which ends the process. It is
  // still thrown where it is awaited.
  const ahead = () => {
    const read = source.next();
    read.catch(() => undefined);
    return read;
  };
  let pending = ahead();
  try {
    for (;;) {
      const next = await pending;
      if (next.done) return;
      pending = ahead();
      yield next.value;
    }
  } finally {
    // A read still under way ends first; its failure no longer matters to anyone.
    await pending.catch(() => undefined);
    await source.return?.();
  }
}
