import type { FastifyReply } from 'fastify';
import { etagOf } from './etag.js';

/** Answers one resource with its ETag, so that a client can send it back as If-Match. */
export function withEtag<T>(reply: FastifyReply, resource: T): T {
  reply.header('etag', etagOf(resource));
  return resource;
}

/** 201 with the new resource, its ETag and an absolute Location on the management host. */
export function created<T extends { id: string }>(reply: FastifyReply, baseUrl: string, collectionPath: string, resource: T): T {
  reply.code(201).header('location', `${baseUrl}${collectionPath}/${resource.id}`);
  return withEtag(reply, resource);
}

export const iso = (value: Date | string) => (value instanceof Date ? value.toISOString() : new Date(value).toISOString());
