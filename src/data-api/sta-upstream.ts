import type { FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import { AppError } from '../errors.js';
import { sendProblem } from '../http/problems.js';

/**
 * Upstream mode: a SensorThings named API answered by an existing server (FROST-Server) instead
 * of ours. The gateway has authorized the request already; this forwards it with
 * `@fastify/reply-from` (undici, kept-alive connections), without the caller's token (the
 * upstream trusts the gateway, not our users), and rewrites every link in the answer from the
 * upstream's base to the public route, so that clients never see an internal address.
 */
export interface UpstreamTarget {
  /** The upstream's service root, e.g. `http://frost:8080/FROST-Server/v1.1` (no trailing slash). */
  upstreamUrl: string;
  /** The public base of the route: what replaces `upstreamUrl` in answers. */
  publicBase: string;
  /** The raw path below the base (still percent-encoded) and the raw query. */
  rawRest: string;
  timeoutMs: number;
}

// Hop-by-hop and identity headers never travel upstream.
const DROPPED_REQUEST_HEADERS = ['authorization', 'cookie', 'x-allowed-scope-ids', 'content-length', 'host'];

export function forwardToUpstream(request: FastifyRequest, reply: FastifyReply, target: UpstreamTarget) {
  const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
  const source = `${target.upstreamUrl}${target.rawRest}${query}`;
  const rewrite = (text: string) => rewriteLinks(text, target.upstreamUrl, target.publicBase);
  return reply.from(source, {
    timeout: target.timeoutMs,
    ...(request.body !== undefined ? { body: request.body as object } : {}),
    rewriteRequestHeaders: (_request, headers) => {
      const forwarded: IncomingHttpHeaders = { ...headers };
      for (const name of DROPPED_REQUEST_HEADERS) delete forwarded[name];
      return forwarded;
    },
    rewriteHeaders: (headers) => {
      const answer: Record<string, string | string[] | undefined> = { ...headers };
      if (typeof answer['location'] === 'string') answer['location'] = rewrite(answer['location']);
      // The body is rewritten (its length changes) and sent whole.
      delete answer['content-length'];
      delete answer['transfer-encoding'];
      return answer as IncomingHttpHeaders;
    },
    onResponse: async (_request, _reply, upstream) => {
      const chunks: Buffer[] = [];
      try {
        for await (const chunk of upstream.stream) chunks.push(chunk as Buffer);
      } catch (error) {
        return void sendProblem(request, reply, upstreamFailure(error));
      }
      const body = Buffer.concat(chunks);
      const type = String(reply.getHeader('content-type') ?? '');
      reply.send(/json|text|xml/i.test(type) ? rewrite(body.toString('utf8')) : body);
    },
    onError: (_reply, { error }) => {
      void sendProblem(request, reply, upstreamFailure(error));
    },
  });
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
