import type { FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import { AppError } from '../errors.js';
import type { DataApiLimits } from '../config.js';
import { sendProblem } from '../http/problems.js';
import type { PayloadAddress } from './payload-request.js';
import { encodePath, normalisedSegments, rebuildQuery } from './upstream-path.js';
import { mergeBatchAnswers, planUpstreamBatch, type BatchPlan, type Rights } from './upstream-batch.js';
import { clientResponseHeaders, upstreamRequestHeaders } from './upstream-headers.js';
import { multipartBatchOf } from './multipart-batch.js';
import { multipartAnswer, type MultipartBatch } from '../sta/index.js';

/**
 * Upstream mode: a SensorThings named API answered by an existing server (FROST-Server) instead
 * of ours. The upstream trusts the gateway, so nothing of the client's request passes through as
 * it came: the path is normalised and re-encoded (`upstream-path.ts`), the query rebuilt within
 * the limits of our own options, the headers chosen from an allowlist (`upstream-headers.ts`),
 * the body re-serialised from the JSON the gateway parsed, and a `$batch` authorized request by
 * request and rebuilt (`upstream-batch.ts`). Forwarded with `@fastify/reply-from` (undici,
 * kept-alive connections); every link in the answer is rewritten from the upstream's base to the
 * public route, so that clients never see an internal address.
 */
export interface UpstreamTarget {
  /** The upstream's service root, e.g. `http://frost:8080/FROST-Server/v1.1` (no trailing slash). */
  upstreamUrl: string;
  /** The public base of the route: what replaces `upstreamUrl` in answers. */
  publicBase: string;
  address: PayloadAddress;
  /** What the caller may do on this dataset's payload (the gateway's decision). */
  rights: Rights;
  limits: DataApiLimits;
  timeoutMs: number;
}

const isJsonType = (type: string | undefined) => /^\s*application\/([\w.+-]+\+)?json\s*(;|$)/i.test(type ?? '');

export function forwardToUpstream(request: FastifyRequest, reply: FastifyReply, target: UpstreamTarget) {
  const { rights, publicBase } = target;
  const segments = normalisedSegments(target.address.rawPath, 'path');
  const query = rebuildQuery(target.address.query, target.limits);
  const method = request.method;
  const hasBody = request.body !== undefined && method !== 'GET' && method !== 'HEAD';
  // The standard's multipart batch is turned into the JSON envelope here; the upstream gets a JSON batch.
  const multipart = hasBody ? multipartBatchOf(request, target.address.rawPath, publicBase, target.limits) : null;
  const batchBody = multipart ? multipart.envelope : request.body;
  // SensorThings takes JSON; other bodies (XML, forms, text) would reach the upstream as raw bytes.
  if (hasBody && !multipart && !isJsonType(request.headers['content-type'])) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'A SensorThings request body must be JSON (Content-Type: application/json)');
  }
  const isBatch = (segments.at(-1) ?? '').toLowerCase().split(';', 1)[0] === '$batch';
  let plan: BatchPlan | undefined;
  let body: string | undefined = hasBody ? JSON.stringify(request.body) : undefined;
  if (isBatch) {
    if (method !== 'POST') throw new AppError('MALFORMED_REQUEST', '$batch takes POST only', { status: 405 });
    plan = planUpstreamBatch(batchBody, publicBase, rights, target.limits);
    if (plan.forward === null) return sendBatchAnswer(reply, mergeBatchAnswers(plan, [], rights), multipart);
    body = JSON.stringify(plan.forward);
  }
  // A caller who may write but not read learns nothing stored from an update: 204, the upstream's body dropped.
  const withoutBody = !rights.read && (method === 'PATCH' || method === 'PUT');
  const source = `${target.upstreamUrl}${encodePath(segments)}`;
  const rewrite = (text: string) => rewriteLinks(text, target.upstreamUrl, publicBase);
  const facts = { clientAddress: request.ip, publicBase, requestId: String(request.id) };
  try {
    return reply.from(source, {
      timeout: target.timeoutMs,
      queryString: () => query,
      ...(body !== undefined ? { body, contentType: 'application/json' } : { body: null }),
      rewriteRequestHeaders: (_request, prepared) => upstreamRequestHeaders(request.headers, prepared, facts, body !== undefined),
      rewriteHeaders: (headers) => {
        const answer = clientResponseHeaders(headers);
        if (typeof answer['location'] === 'string') answer['location'] = rewrite(answer['location']);
        // The body is rewritten (its length changes) and sent whole.
        delete answer['content-length'];
        return answer as IncomingHttpHeaders;
      },
      onResponse: async (_request, _reply, upstream) => {
        const chunks: Buffer[] = [];
        try {
          for await (const chunk of upstream.stream) chunks.push(chunk as Buffer);
        } catch (error) {
          return void sendProblem(request, reply, upstreamFailure(error));
        }
        const status = upstream.statusCode;
        if (withoutBody && status >= 200 && status < 300) {
          reply.removeHeader('content-type');
          return void reply.code(204).send();
        }
        const received = Buffer.concat(chunks);
        const type = String(reply.getHeader('content-type') ?? '');
        const text = /json|text|xml/i.test(type) ? rewrite(received.toString('utf8')) : received;
        if (plan && status >= 200 && status < 300) return void answerBatch(request, reply, plan, rights, text, multipart);
        reply.send(text);
      },
      onError: (_reply, { error }) => {
        void sendProblem(request, reply, upstreamFailure(error));
      },
    });
  } catch (error) {
    // The proxy refuses a url it deems unsafe; ours are rebuilt, so this is a client's 400, never a 500.
    if (error instanceof AppError) throw error;
    throw new AppError('MALFORMED_REQUEST', 'This request cannot be forwarded to the SensorThings server behind this API');
  }
}

/** The upstream's answer to the rebuilt batch, merged with the gateway's own answers in the requests' order. */
function answerBatch(request: FastifyRequest, reply: FastifyReply, plan: BatchPlan, rights: Rights, text: string | Buffer, multipart: MultipartBatch | null) {
  let responses: unknown;
  try {
    responses = (JSON.parse(text.toString()) as { responses?: unknown }).responses;
  } catch {
    responses = undefined;
  }
  if (!Array.isArray(responses)) {
    return sendProblem(request, reply, new AppError('UPSTREAM_UNAVAILABLE', 'The SensorThings server behind this API answered the batch in a format the gateway cannot read'));
  }
  return sendBatchAnswer(reply, mergeBatchAnswers(plan, responses, rights), multipart);
}

/** The merged answer in the format the batch came in: JSON, or the standard's multipart. */
function sendBatchAnswer(reply: FastifyReply, answer: { responses: unknown[] }, multipart: MultipartBatch | null) {
  if (!multipart) return reply.code(200).type('application/json; charset=utf-8').send(answer);
  const { contentType, text } = multipartAnswer(multipart, answer.responses);
  return reply.code(200).type(contentType).send(text);
}

/** Refused, reset or unreachable: 502; too slow: 504. Both name neither host nor port. */
function upstreamFailure(error: unknown): AppError {
  const codes = [error, (error as { cause?: unknown })?.cause].map((e) => String((e as { code?: string })?.code ?? ''));
  const slow = codes.some((code) => /TIMEOUT/.test(code)) || /timeout/i.test(String((error as Error)?.name ?? ''));
  return slow
    ? new AppError('UPSTREAM_TIMEOUT', 'The SensorThings server behind this API did not answer in time')
    : new AppError('UPSTREAM_UNAVAILABLE', 'The SensorThings server behind this API is not reachable');
}

/**
 * Replaces the upstream's base with the public one wherever it appears: plain, and with `/`
 * escaped as `\/` (JSON allows both). Only the exact base is replaced, so that another server's
 * URL that merely shares its host stays as it was.
 */
export function rewriteLinks(text: string, upstreamUrl: string, publicBase: string): string {
  const escapedUpstream = upstreamUrl.replaceAll('/', '\\/');
  return text.replaceAll(upstreamUrl, publicBase).replaceAll(escapedUpstream, publicBase.replaceAll('/', '\\/'));
}
