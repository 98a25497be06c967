import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import Negotiator from 'negotiator';
import { AppError } from '../errors.js';
import { UUID_PATTERN } from '../http/page.js';
import { setValidators } from '../http/validators.js';
import { MEDIA_TYPES, SUFFIXES, type CatalogueDocument, type CatalogueService, type RdfFormat } from '../catalogue/index.js';

/**
 * The open-data catalogue on the data API, anonymous and read-only: `GET /v1/catalogue` (a page of
 * the DCAT-AP catalogue) and `GET /v1/datasets/{id}` with an RDF `Accept` (one dataset's record:
 * its IRI dereferenced). `.ttl`, `.jsonld` and `.rdf` fix the format; otherwise `Accept` decides,
 * Turtle when it leaves the choice; an `Accept` none of the three satisfies answers 406.
 */

const FORMATS = Object.keys(MEDIA_TYPES) as RdfFormat[];
const FORMAT_OF_SUFFIX = new Map(FORMATS.map((format) => [SUFFIXES[format], format]));
const FORMAT_OF_MEDIA_TYPE = new Map(FORMATS.map((format) => [MEDIA_TYPES[format], format]));
const CATALOGUE_PATH = /^\/v1\/catalogue(\.ttl|\.jsonld|\.rdf)?$/;
const RECORD_PATH = new RegExp(`^/v1/datasets/(${UUID_PATTERN})(\\.ttl|\\.jsonld|\\.rdf)?$`, 'i');
/** The largest page number taken: a page is an OFFSET, and no catalogue holds a hundred million pages. */
const MAX_PAGE = 1_000_000;
/** An ISO 8601 date, or date-time with an optional zone (UTC when it has none). */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** A dataset's own IRI, whatever follows `/v1/datasets/`: the route answers 404 for what is not a record. */
const DATASET_IRI_PATH = /^\/v1\/datasets\/[^/]+$/;

/** Whether a URL is one of the catalogue's (anonymous like open payload reads). */
export const isCataloguePath = (url: string) => {
  const path = url.split('?')[0] ?? '';
  return CATALOGUE_PATH.test(path) || DATASET_IRI_PATH.test(path);
};

export function registerCatalogueRoutes(app: FastifyInstance, catalogue: CatalogueService): void {
  for (const suffix of ['', ...FORMAT_OF_SUFFIX.keys()]) {
    app.route({
      method: ['GET', 'HEAD'], url: `/v1/catalogue${suffix}`, exposeHeadRoute: false,
      handler: async (request, reply) => {
        const format = formatOf(request, suffix);
        const query = request.query as Record<string, unknown>;
        const document = await catalogue.page(pageOf(query['page']), instantOf(query['modified_since']), format, request.log);
        return send(request, reply, format, document);
      },
    });
  }
  app.route({
    method: ['GET', 'HEAD'], url: '/v1/datasets/:record', exposeHeadRoute: false,
    handler: async (request, reply) => {
      const match = RECORD_PATH.exec(request.url.split('?')[0] ?? '');
      const format = formatOf(request, match?.[2] ?? '');
      // A dataset not in the catalogue answers the same whether it exists or not.
      const document = match ? await catalogue.record(match[1]!.toLowerCase(), format, request.log) : undefined;
      if (!document) throw new AppError('NOT_FOUND', 'No dataset of the open-data catalogue has this IRI');
      return send(request, reply, format, document);
    },
  });
}

function formatOf(request: FastifyRequest, suffix: string): RdfFormat {
  const fixed = FORMAT_OF_SUFFIX.get(suffix);
  if (fixed) return fixed;
  const accept = request.headers.accept;
  if (!accept) return 'turtle';
  const chosen = new Negotiator({ headers: { accept } }).mediaType([MEDIA_TYPES.turtle, MEDIA_TYPES.jsonld, MEDIA_TYPES.rdfxml]);
  const format = chosen ? FORMAT_OF_MEDIA_TYPE.get(chosen) : undefined;
  if (!format) {
    throw new AppError('NOT_ACCEPTABLE', `The catalogue is served as ${FORMATS.map((f) => MEDIA_TYPES[f]).join(', ')} (or with the suffix .ttl, .jsonld, .rdf)`, { status: 406 });
  }
  return format;
}

function pageOf(value: unknown): number {
  if (value === undefined) return 1;
  const text = String(value);
  const page = /^\d{1,7}$/.test(text) ? Number(text) : NaN;
  if (!(page >= 1 && page <= MAX_PAGE)) {
    throw new AppError('VALIDATION_FAILED', `page: must be an integer from 1 to ${MAX_PAGE}`, { fieldErrors: [{ field: 'page', message: `must be an integer from 1 to ${MAX_PAGE}` }] });
  }
  return page;
}

function instantOf(value: unknown): Date | null {
  if (value === undefined) return null;
  const text = String(value);
  const zoned = ISO_INSTANT.test(text) ? (/(Z|[+-]\d{2}:?\d{2})$/.test(text) || !text.includes('T') ? text : `${text}Z`) : '';
  const instant = zoned ? new Date(text.includes('T') ? zoned : `${text}T00:00:00Z`) : null;
  if (!instant || Number.isNaN(instant.getTime())) {
    const message = 'must be an ISO 8601 date-time (2024-05-01T10:00:00Z) or date';
    throw new AppError('VALIDATION_FAILED', `modified_since: ${message}`, { fieldErrors: [{ field: 'modified_since', message }] });
  }
  return instant;
}

/** The document with its validators; 304 when the client holds it already. */
function send(request: FastifyRequest, reply: FastifyReply, format: RdfFormat, document: CatalogueDocument) {
  reply.header('cache-control', 'public, max-age=60').header('vary', 'Accept');
  if (setValidators(request, reply, { etag: document.etag, changedAt: document.lastModified }).unchanged) return reply.code(304).send();
  reply.type(`${MEDIA_TYPES[format]}; charset=utf-8`);
  return reply.send(request.method === 'HEAD' ? undefined : document.body);
}
