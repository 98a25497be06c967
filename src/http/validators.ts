import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * Sets a representation's validators and tells whether the client holds it already (answer 304).
 * The ETag wins over the date (RFC 9110). HTTP dates have whole seconds: a change in the same
 * second as the one a client was told about would go unseen by If-Modified-Since. So Last-Modified
 * is the second after the change, and is sent only once that second has passed (until then, the
 * ETag alone validates).
 */
export function setValidators(request: FastifyRequest, reply: FastifyReply, validators: { etag: string; changedAt: Date | null }): { unchanged: boolean } {
  reply.header('etag', validators.etag);
  const lastModified = validators.changedAt ? (Math.floor(validators.changedAt.getTime() / 1000) + 1) * 1000 : null;
  const settled = lastModified !== null && Date.now() >= lastModified;
  if (settled) reply.header('last-modified', new Date(lastModified).toUTCString());
  const ifNoneMatch = request.headers['if-none-match'];
  const ifModifiedSince = request.headers['if-modified-since'];
  const bare = (tag: string) => tag.trim().replace(/^W\//, '');
  const unchanged = ifNoneMatch !== undefined
    ? ifNoneMatch.split(',').some((tag) => tag.trim() === '*' || bare(tag) === bare(validators.etag))
    : ifModifiedSince !== undefined && settled && lastModified <= Date.parse(ifModifiedSince);
  return { unchanged };
}
