import type { FastifyRequest } from 'fastify';
import type { DataApiLimits } from '../config.js';
import { isMultipartMixed, multipartElsewhere, parseMultipartBatch, type MultipartBatch } from '../sta/index.js';
import { isBatchPath } from './upstream-path.js';

/**
 * A SensorThings request with a `multipart/mixed` body: on `$batch` the standard's multipart batch,
 * turned into the JSON batch envelope that our server and upstream mode serve alike (the answer is
 * written back with `multipartAnswer`); anywhere else 415. Null for every other request.
 */
export function multipartBatchOf(request: FastifyRequest, rawPath: string, publicBase: string, limits: DataApiLimits): MultipartBatch | null {
  const contentType = request.headers['content-type'];
  if (!isMultipartMixed(contentType) || !Buffer.isBuffer(request.body)) return null;
  if (!isBatchPath(rawPath)) throw multipartElsewhere();
  return parseMultipartBatch(request.body, contentType!, publicBase, { maxRequests: limits.batchMaxRequests, jsonMaxDepth: limits.jsonMaxDepth });
}
