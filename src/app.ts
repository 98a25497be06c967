import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from './context.js';
import { idempotency } from './http/idempotency.js';
import { baseServerOptions, installCommonPlumbing } from './http/common-plumbing.js';
import { registerHealthRoutes } from './http/health.js';
import { docsOAuth, docsSecurity } from './http/docs-login.js';
import { renderCommits } from './data-api/mqtt/render-commits.js';
import { runBackgroundWork } from './jobs/background-work.js';
import { countRequests, registerMetricsRoute } from './metrics/http.js';
import { permissionRoutes } from './modules/permissions/index.js';
import { assignmentRoutes } from './modules/assignments/index.js';
import { roleRoutes } from './modules/roles/index.js';
import { groupRoutes } from './modules/groups/index.js';
import { userRoutes } from './modules/users/index.js';
import { tokenRoutes } from './modules/tokens/index.js';
import { datapoolRoutes } from './modules/datapools/index.js';
import { datasetRoutes } from './modules/datasets/index.js';
import { auditRoutes } from './modules/audit/index.js';
import { accessExplainRoutes } from './modules/access-explain/index.js';
import { styleRoutes } from './modules/styles/index.js';
import { mappingRoutes } from './modules/mappings/index.js';
import { pipelineReleaseCheck, pipelineRoutes, pipelinesReadingDataSources, pipelinesReferringToMappings } from './modules/pipelines/index.js';
import { dataSourceRoutes } from './modules/datasources/index.js';
import { dataStructureRoutes } from './modules/datastructures/index.js';

/**
 * The management API: /v1 resources, OpenAPI, Swagger UI, health and metrics. Never listens (tests
 * inject; the entry routes a StartingServer's requests to it through `serverFactory`).
 */
export async function buildApp(ctx: AppContext, logger?: FastifyServerOptions['loggerInstance'], serverFactory?: FastifyServerOptions['serverFactory']): Promise<FastifyInstance> {
  const app = Fastify({ ...baseServerOptions(ctx, logger), ...(serverFactory ? { serverFactory } : {}) }).withTypeProvider<TypeBoxTypeProvider>();
  countRequests(app, ctx.metrics, 'management');
  await installCommonPlumbing(app, ctx);
  await app.register(idempotency, { db: ctx.db });

  const security = docsSecurity(ctx.config);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Data Management API',
        version: '2.0.0',
        description: [
          'Management API of the smart-city data platform: datasets, styles, mappings, groups, roles, permissions, assignments, users and datapools.',
          '',
          `A released dataset's named APIs are served by the data API (${ctx.config.dataApi.baseUrl}) at their previewUrl, \`/v1/datasets/{id}/{slug}\`:`,
          'an STA API is an OGC SensorThings API 1.1 service root (entity sets, OData query options, create/update/delete, `$ref` links, `$batch`, `CreateObservations` answering one entry per row, MQTT);',
          'an OWS API is an OGC API – Features (Parts 1–4: landing page `{base}`, `{base}/conformance`, `{base}/api`, `{base}/collections[/{name}[/items[/{fid}]|/queryables]]` with limit and next links, bbox/bbox-crs, crs, datetime, property filters and CQL2 text; writes on the same routes, PostGIS) and answers WFS 2.0.0/1.1.0/1.0.0 and WMS 1.3.0/1.1.1 on `{base}?SERVICE=…` through MapServer,',
          'a collection being the feature type `{slug}:{name}` and the layer `{name}`, drawn with the dataset\'s SLD styles (`STYLES=<style name>`); an invalid OGC request answers its exception report with 400;',
          'OGC requests are rebuilt by the gateway: only the parameters of the operation pass (never SLD, SLD_BODY, MAP, map.*), XML POSTs are WFS operations without DOCTYPE, WIDTH/HEIGHT at most OWS_MAX_IMAGE_SIZE (else 400 VALIDATION_FAILED), at most OWS_MAX_PER_CALLER map requests run per caller while another caller waits, an idle worker taking any waiting request (a request waiting OWS_QUEUE_TIMEOUT_MS answers 503 with Retry-After);',
          'capabilities carry the dataset\'s name, description and keywords, the operator\'s contact (OWS_CONTACT_*) and each layer\'s extent from its features (refreshed by GetCapabilities at most every OWS_EXTENT_REFRESH_MS); DescribeFeatureType types each property (xsd:string, xsd:long, xsd:double, xsd:boolean, xsd:dateTime) and the geometry (gml:PointPropertyType, …); WFS 1.1.0/2.0.0 write EPSG:4326 latitude first, labelled urn:ogc:def:crs:EPSG::4326; GeoJSON features carry their fid as `id`;',
          'every allowed payload answer (both standards) carries Cache-Control: `public, max-age=60` with a weak ETag (If-None-Match answers 304) for reads of openDataAccess datasets, `private, no-store` otherwise;',
          'reads need DATASET_PAYLOAD_READ (none on openDataAccess datasets), writes DATASET_PAYLOAD_WRITE (an OGC request by its operation: an XML POST of GetFeature reads, a WFS-T Transaction writes); a rejected token answers 401 with an HTML page.',
          'The open-data catalogue: `GET {DATA_API_URL}/v1/catalogue` (anonymous) is the DCAT-AP 3 catalogue of the released open datasets (Turtle by default, JSON-LD, RDF/XML by Accept or the suffix .ttl/.jsonld/.rdf; `page` from 1 with Hydra paging, `modified_since`; ETag and Last-Modified with 304); `GET {DATA_API_URL}/v1/datasets/{id}` with an RDF Accept or suffix is one dataset\'s record. A dataset\'s `catalogue` member (licence, keywords, themes, contact, frequency, HVD categories, landing page; EU Vocabularies codes) is what it says of the dataset.',
          'Bulk downloads (streamed, `Content-Disposition: attachment`, ETag and Last-Modified from the data\'s last change with 304, authorization and Cache-Control as for the payload): an OWS API\'s `{base}/download.gpkg` (every collection a layer, in its storage CRS; made by ogr2ogr, at most DOWNLOAD_GPKG_CONCURRENCY at once) and `{base}/collections/{name}/download.geojson|csv` (WGS 84 longitude/latitude; the CSV\'s geometry as WKT in its last column, `WKT`); an STA API\'s `{base}/download/observations.csv` (datastream_id, datastream_name, phenomenon_time, result_time, result, feature_of_interest_id; ordered by Datastream and time; Datastreams\' Observations only; an empty text as `""`, a null as an empty field; streamed by PostgreSQL\'s COPY, at most DOWNLOAD_COPY_CONCURRENCY at once, else read in batches) and `{base}/download/things.geojson` (each Thing at its latest Location). The catalogue lists each as a distribution.',
          'A named API\'s `upstreamUrl` (STA only, origins in STA_UPSTREAM_ORIGINS) makes the gateway proxy it to an existing SensorThings server.',
          'A caller who may write a dataset\'s payload but not read it gets 204 without a body for an update (PATCH, PUT; also inside `$batch` and in upstream mode); in upstream mode each `$batch` request is authorized on its own, as on our server.',
          'Personal access tokens (`/v1/users/me/tokens`) are for the data API only: there they are accepted as `Authorization: Bearer pat_…`, as the password of HTTP Basic and as the MQTT password (any user name), acting with their user\'s current rights narrowed to their `datasetIds`; on this API they answer 401.',
          'MQTT: a packet before CONNACK at most MQTT_MAX_CONNECT_BYTES, after it MQTT_MAX_PACKET_BYTES (else the connection closes); a client id held by another identity gets CONNACK 0x02; each message follows the subscriber\'s current rights.',
          'Pipelines of an AVAILABLE dataset run (one process each, through a lease in the database): they read their data sources (MQTT, HTTP, SQL), map each record with the JSONata of their mapping (member paths and literals without the interpreter), and write Observations (STA) or features (OWS) into the named API (an STA Thing created on first sight takes its Location from `Datastream.Thing.Location`), exactly once in effect; `runtimeStatus` shows their state and counters, `…/pipelines/{id}/rejections` the records refused, `…/pipelines/{id}/restart` starts one again.',
          'A change to access (users, memberships, groups, assignments, role permissions, personal access tokens) holds from the next request of the process that made it, and on every other process of the deployment within 0.8 s.',
          'A valid token whose `sub` and email name no user of the service is authenticated but holds no permission: its answers keep their statuses (200 with empty lists, 403, 404) and carry the header `X-Caller-Unknown` saying so; `GET /v1/users/me` then answers `id: null` and no assignments. An administrator creates the user (`POST /v1/users`).',
          ctx.config.idp.enabled
            ? 'Swagger UI logs in with the scheme `login` (Authorize): any email as username and the development password (DEV_IDP_PASSWORD), client_id ' + ctx.config.oidc.clientId + '; tokens last DEV_IDP_TTL seconds, log in again when one expires.'
            : 'Swagger UI logs in with the scheme `login` (Authorize) at the identity provider OIDC_ISSUER, or takes a pasted token (`bearerAuth`).',
          'Outside this document: `GET /health/live` (200 from the moment the process starts), `GET /health/ready` (503 until the database answers and is migrated; while a process starts, every other request waits for it, at most 10 s, then answers 503 SERVICE_UNAVAILABLE with Retry-After), and `GET /metrics` (Prometheus text format; a bearer token equal to METRICS_TOKEN when that is set, else open).',
          `Payload limits (beyond one: 400 VALIDATION_FAILED naming it): JSON bodies nest at most ${ctx.config.dataApi.limits.jsonMaxDepth} levels; \`$filter\`/\`$orderby\`/\`$select\` at most ${ctx.config.dataApi.limits.expressionMaxBytes} bytes and ${ctx.config.dataApi.limits.expressionMaxDepth} levels; \`$expand\` at most ${ctx.config.dataApi.limits.expandMaxBytes} bytes and ${ctx.config.dataApi.limits.expandMaxDepth} levels; a \`$batch\` at most ${ctx.config.dataApi.limits.batchMaxRequests} requests.`,
        ].join('\n'),
      },
      servers: [{ url: ctx.config.api.baseUrl }],
      components: { securitySchemes: security.securitySchemes },
      security: security.security,
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', initOAuth: docsOAuth(ctx.config) });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  registerHealthRoutes(app, ctx.db);
  registerMetricsRoute(app, ctx.metrics, ctx.config.metrics.token);

  // Sagas and pipelines run with the API, unless worker processes do them (BACKGROUND_WORK=off).
  if (ctx.config.backgroundWork) {
    runBackgroundWork(app, ctx);
    // Its pipelines write SensorThings: their changes are rendered here for the brokers of every process.
    renderCommits(app, ctx, 'ownRoutes');
  }
  // A dataset's parts register what the datasets module asks of them (here the pipelines' stage and
  // release checks), so that it imports none of them; the same for what refers to data sources and mappings.
  const datasets = {
    db: ctx.db, tenantId: ctx.tenant.id, dataApiUrl: ctx.config.dataApi.baseUrl, sagaEnqueued: () => ctx.sagas.kick(), upstreamOrigins: ctx.config.staUpstream.origins,
    partChecks: [pipelineReleaseCheck],
  };
  const sources = { db: ctx.db, tenantId: ctx.tenant.id, secrets: ctx.secrets, referrers: [pipelinesReadingDataSources] };

  await app.register(async (v1) => {
    await v1.register(permissionRoutes, { ctx });
    await v1.register(assignmentRoutes, { ctx });
    await v1.register(roleRoutes, { ctx });
    await v1.register(groupRoutes, { ctx });
    await v1.register(userRoutes, { ctx });
    await v1.register(tokenRoutes, { ctx });
    await v1.register(datapoolRoutes, { ctx });
    await v1.register(datasetRoutes, { datasets, baseUrl: ctx.config.api.baseUrl });
    await v1.register(auditRoutes, { ctx });
    await v1.register(accessExplainRoutes, { ctx });
    // A dataset's parts: authorized as the dataset, writable only while it is DRAFT.
    await v1.register(styleRoutes, { datasets, baseUrl: ctx.config.api.baseUrl });
    await v1.register(mappingRoutes, { datasets, referrers: [pipelinesReferringToMappings] });
    await v1.register(pipelineRoutes, { datasets, baseUrl: ctx.config.api.baseUrl, pipelinesChanged: () => ctx.pipelines.kick() });
    await v1.register(dataSourceRoutes, { sources, datasets, baseUrl: ctx.config.api.baseUrl });
    await v1.register(dataStructureRoutes, { structures: { db: ctx.db, tenantId: ctx.tenant.id }, baseUrl: ctx.config.api.baseUrl });
  }, { prefix: '/v1' });

  return app;
}
