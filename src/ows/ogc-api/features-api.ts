import Negotiator from 'negotiator';
import type { Database } from '../../db/client.js';
import { collectionSummary, dateTimeSpan, listCollections } from '../collections.repo.js';
import { countFeatures, readFeature, readFeatures } from '../features.repo.js';
import type { MatchCounts } from './match-counts.js';
import type { CollectionDef, FeatureRequest, FeatureResponse } from '../types.js';
import type { CrsRegistry } from './crs.js';
import { collectionMembers, conformance, itemsLinks, landingPage, OPENAPI_TYPE, queryables, type CollectionExtent } from './documents.js';
import { apiHtml, collectionHtml, collectionsHtml, conformanceHtml, featureHtml, itemsHtml, landingHtml } from './html.js';
import { invalid, parseItemsQuery } from './items-params.js';
import { itemsConditions, type FilterLimits } from './items-where.js';
import { openApiDocument } from './openapi.js';

/**
 * The reads of OGC API – Features on an OWS named API: landing page, conformance, API definition,
 * collections with their OGC members, items, one item, queryables; JSON or HTML (`f`, else
 * `Accept`). The feature store's writes (Part 4) stay in store.ts.
 */

export interface FeaturesApiDeps {
  db: Database;
  crs: CrsRegistry;
  /** `numberMatched`, kept while no write changed the dataset's features (match-counts.ts). */
  counts: MatchCounts;
  limits: FilterLimits;
  /** The dataset's name and description (the landing page's title), undefined when it is gone. */
  describe(datasetId: string): Promise<{ name: string; description: string | null } | undefined>;
}

const GEOJSON = 'application/geo+json';
const HTML = 'text/html; charset=utf-8';

/** JSON unless `f=html`, or an Accept that prefers HTML (a browser) and no `f`. */
function formatOf(request: FeatureRequest): 'json' | 'html' {
  const f = new URLSearchParams(request.query).get('f');
  if (f === 'html' || f === 'json') return f;
  if (f !== null) throw invalid('f', 'must be json or html');
  if (!request.accept) return 'json';
  const chosen = new Negotiator({ headers: { accept: request.accept } }).mediaType(['application/json', 'application/geo+json', 'text/html']);
  return chosen === 'text/html' ? 'html' : 'json';
}

/** Only `f` is taken by the documents other than items. */
function onlyFormat(request: FeatureRequest): void {
  for (const name of new URLSearchParams(request.query).keys()) if (name !== 'f') throw invalid(name, 'is not a parameter of this resource');
}

const html = (body: string): FeatureResponse => ({ status: 200, headers: { 'content-type': HTML }, body });

export async function landing(deps: FeaturesApiDeps, request: FeatureRequest): Promise<FeatureResponse> {
  onlyFormat(request);
  const format = formatOf(request);
  const dataset = await deps.describe(request.datasetId);
  const document = landingPage(request.baseUrl, dataset?.name ?? request.slug, dataset?.description ?? null, format);
  return format === 'html' ? html(landingHtml(document)) : { status: 200, body: document };
}

export function conformancePage(request: FeatureRequest): FeatureResponse {
  onlyFormat(request);
  return formatOf(request) === 'html' ? html(conformanceHtml(conformance().conformsTo)) : { status: 200, body: conformance() };
}

export async function apiDefinition(deps: FeaturesApiDeps, request: FeatureRequest): Promise<FeatureResponse> {
  onlyFormat(request);
  const dataset = await deps.describe(request.datasetId);
  const document = openApiDocument(request.baseUrl, dataset?.name ?? request.slug, dataset?.description ?? null, await listCollections(deps.db, request.schema));
  return formatOf(request) === 'html' ? html(apiHtml(document)) : { status: 200, headers: { 'content-type': OPENAPI_TYPE }, body: document };
}

/** The feature store's description of a collection with OGC API's members added. */
async function described(deps: FeaturesApiDeps, request: FeatureRequest, def: CollectionDef) {
  const [{ wgs84, ...stats }, time, offered] = await Promise.all([
    collectionSummary(deps.db, request.schema, def),
    timeSpan(deps.db, request.schema, def),
    deps.crs.offered(def.srid),
  ]);
  const extent: CollectionExtent = { bbox: wgs84, ...time };
  return { ...def, ...stats, ...collectionMembers(request.baseUrl, def, extent, offered, deps.crs.storageUri(def.srid)) };
}

/** The earliest and latest value of the collection's first date-time property (the one `datetime` filters on). */
async function timeSpan(db: Database, schema: string, def: CollectionDef): Promise<{ start: Date | null; end: Date | null }> {
  const property = Object.keys(def.properties).find((name) => def.properties[name] === 'date-time');
  return property ? dateTimeSpan(db, schema, def.name, property) : { start: null, end: null };
}

export async function collectionsPage(deps: FeaturesApiDeps, request: FeatureRequest): Promise<FeatureResponse> {
  onlyFormat(request);
  const format = formatOf(request);
  const collections = await Promise.all((await listCollections(deps.db, request.schema)).map((def) => described(deps, request, def)));
  const self = `${request.baseUrl}/collections`;
  const links = [
    { href: self, rel: format === 'json' ? 'self' : 'alternate', type: 'application/json', title: 'the collections' },
    { href: `${self}?f=html`, rel: format === 'html' ? 'self' : 'alternate', type: 'text/html', title: 'the collections as HTML' },
  ];
  if (format === 'html') return html(collectionsHtml((await deps.describe(request.datasetId))?.name ?? request.slug, collections));
  return { status: 200, body: { links, collections } };
}

export async function collectionPage(deps: FeaturesApiDeps, request: FeatureRequest, def: CollectionDef): Promise<FeatureResponse> {
  onlyFormat(request);
  const document = await described(deps, request, def);
  return formatOf(request) === 'html' ? html(collectionHtml(document)) : { status: 200, body: document };
}

export function queryablesPage(request: FeatureRequest, def: CollectionDef): FeatureResponse {
  onlyFormat(request);
  const document = queryables(request.baseUrl, def);
  return formatOf(request) === 'html'
    ? html(conformanceHtml(Object.entries(document.properties).map(([name, schema]) => `${name}: ${JSON.stringify(schema)}`)))
    : { status: 200, headers: { 'content-type': 'application/schema+json' }, body: document };
}

export async function itemsPage(deps: FeaturesApiDeps, request: FeatureRequest, def: CollectionDef): Promise<FeatureResponse> {
  const format = formatOf(request);
  const query = await parseItemsQuery(request.query, def, deps.crs);
  const conditions = itemsConditions(query, def, deps.limits);
  const [features, matched] = await Promise.all([
    readFeatures(deps.db, request.schema, def, {
      conditions, limit: query.limit, position: query.position, output: { srid: query.crs.srid, latitudeFirst: query.crs.latitudeFirst },
    }),
    deps.counts.count(request.schema, selectionKey(def, request.query), () => countFeatures(deps.db, request.schema, def, conditions)),
  ]);
  const full = features.length === query.limit;
  // A page placed `before` a fid is followed by more; a page that ran short is the last.
  const next = 'before' in query.position ? features.at(-1)?.id ?? null : full ? features.at(-1)!.id : null;
  const first = features[0]?.id ?? null;
  const prev = first === null ? null : 'after' in query.position && query.position.after > 0 ? first
    : 'offset' in query.position && query.position.offset > 0 ? first : 'before' in query.position && full ? first : null;
  const itemsUrl = `${request.baseUrl}/collections/${def.name}/items`;
  const body = {
    type: 'FeatureCollection', numberMatched: matched, numberReturned: features.length, timeStamp: new Date().toISOString(),
    links: itemsLinks(itemsUrl, new URLSearchParams(request.query), { next, prev }, format),
    features,
  };
  const headers = { 'content-crs': `<${query.crs.uri}>` };
  if (format === 'html') return { status: 200, headers: { ...headers, 'content-type': HTML }, body: itemsHtml(def.title ?? def.name, Object.keys(def.properties), body) };
  return { status: 200, headers: { ...headers, 'content-type': GEOJSON }, body };
}

/** What selects an items page, less where the page is and how it is written: the key of its count. */
function selectionKey(def: CollectionDef, query: string): string {
  const params = [...new URLSearchParams(query)].filter(([name]) => !['limit', 'after', 'before', 'offset', 'f', 'crs'].includes(name));
  return `${def.name}?${new URLSearchParams(params.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))).toString()}`;
}

export async function itemPage(deps: FeaturesApiDeps, request: FeatureRequest, def: CollectionDef, fid: number, missing: () => Error): Promise<FeatureResponse> {
  const params = new URLSearchParams(request.query);
  for (const name of params.keys()) if (name !== 'f' && name !== 'crs') throw invalid(name, 'is not a parameter of a feature');
  const crs = await deps.crs.choose(params.get('crs'), def.srid, 'crs');
  const feature = await readFeature(deps.db, request.schema, def, fid, { srid: crs.srid, latitudeFirst: crs.latitudeFirst });
  if (!feature) throw missing();
  const self = `${request.baseUrl}/collections/${def.name}/items/${fid}`;
  const headers = { 'content-crs': `<${crs.uri}>` };
  if (formatOf(request) === 'html') return { status: 200, headers: { ...headers, 'content-type': HTML }, body: featureHtml(def.title ?? def.name, feature) };
  const links = [
    { href: self, rel: 'self', type: GEOJSON, title: 'this feature' },
    { href: `${self}?f=html`, rel: 'alternate', type: 'text/html', title: 'this feature as HTML' },
    { href: `${request.baseUrl}/collections/${def.name}`, rel: 'collection', type: 'application/json', title: 'its collection' },
  ];
  return { status: 200, headers: { ...headers, 'content-type': GEOJSON }, body: { ...feature, links } };
}
