import { AppError } from '../errors.js';
import type { Database } from '../db/client.js';
import { isUniqueViolation } from '../db/constraint-errors.js';
import { NAME_PATTERN, parseCollectionDef } from './collection-definition.js';
import {
  collectionSummary, createCollectionTable, dropCollection, findCollection, insertCollection, isKnownSrid, provisionCatalogue,
} from './collections.repo.js';
import { featureDownload } from './downloads.js';
import type { GeoPackageMaker } from './geopackage.js';
import { deleteFeature, insertFeatures, readFeature, replaceFeature } from './features.repo.js';
import { parseFeatureBatch, parseSingleFeature } from './geojson.js';
import { CrsRegistry } from './ogc-api/crs.js';
import {
  apiDefinition, collectionPage, collectionsPage, conformancePage, itemPage, itemsPage, landing, queryablesPage, type FeaturesApiDeps,
} from './ogc-api/features-api.js';
import type { FilterLimits } from './ogc-api/items-where.js';
import { MatchCounts } from './ogc-api/match-counts.js';
import type { CollectionDef, FeatureRequest, FeatureResponse, FeatureStore } from './types.js';

export interface FeatureStoreDeps {
  db: Database;
  /** PostGIS present (PostgreSQL with the extension); without it the store serves nothing. */
  postgis: boolean;
  /**
   * A collection was created or dropped: `announce` runs in its transaction (every gateway process
   * rewrites its maps), `committed` after it (this process's maps, at once).
   */
  catalogueChange?: { announce(trx: Database): Promise<void>; committed(): void };
  /** The dataset's name and description, for OGC API's landing page. */
  describe?: FeaturesApiDeps['describe'];
  /** Bounds of a CQL2 filter (those of a SensorThings `$filter`). */
  filterLimits?: FilterLimits;
  /** Items pages' numberMatched, shared with the pipelines' feature writer, which says when it wrote. */
  matchCounts?: MatchCounts;
  /** Makes the GeoPackage downloads (null: not on this database). */
  geopackages?: GeoPackageMaker | null;
}

const GEOJSON = { 'content-type': 'application/geo+json' };

/** The feature collections of OWS named APIs, stored in PostGIS tables of each dataset's schema. */
export function createFeatureStore(deps: FeatureStoreDeps): FeatureStore {
  const { db } = deps;
  // Datasets released before this store existed (or before PostGIS was) have no catalogue yet:
  // each process makes sure once per schema, which is a no-op after the RELEASE step.
  const provisioned = new Set<string>();
  const counts = deps.matchCounts ?? new MatchCounts(1000);
  const api: FeaturesApiDeps = {
    db, crs: new CrsRegistry(db), counts, limits: deps.filterLimits ?? { maxBytes: 8192, maxDepth: 64 }, describe: deps.describe ?? (async () => undefined),
  };
  return {
    available: deps.postgis,
    provision: (trx, schema) => provisionCatalogue(trx, schema),
    async download(request) {
      if (!deps.postgis) throw unavailable();
      return featureDownload(db, deps.geopackages ?? null, request);
    },
    async handle(request) {
      if (!deps.postgis) throw unavailable();
      if (!provisioned.has(request.schema)) {
        await provisionCatalogue(db, request.schema);
        provisioned.add(request.schema);
      }
      const response = await route(db, api, request, deps.catalogueChange).catch((error: unknown) => { throw withOgcMembers(error); });
      // A write (committed by now) changes what the schema's items pages count.
      if (request.method !== 'GET' && request.method !== 'HEAD') counts.changed(request.schema);
      if (request.method !== 'HEAD') return response;
      const { body: _body, ...head } = response;
      return head;
    },
  };
}

export const unavailable = () =>
  new AppError('SERVICE_UNAVAILABLE', 'OWS named APIs need PostgreSQL with PostGIS: set DATABASE_URL to a PostgreSQL server with the postgis extension');

/**
 * Problems of these routes carry OGC API's exception members too: `code` and `description` beside
 * the problem's own `detail`.
 */
function withOgcMembers(error: unknown): unknown {
  if (!(error instanceof AppError)) return error;
  return new AppError(error.code, error.message, { ...error.options, extensions: { ...error.options.extensions, code: error.code, description: error.message } });
}

type CatalogueChange = FeatureStoreDeps['catalogueChange'];

/**
 * `''` (landing page), `/conformance`, `/api`, `/collections`, `/collections/{name}`,
 * `/collections/{name}/queryables`, `/collections/{name}/items`, `/collections/{name}/items/{fid}`.
 */
async function route(db: Database, api: FeaturesApiDeps, request: FeatureRequest, catalogueChange: CatalogueChange): Promise<FeatureResponse> {
  const method = request.method === 'HEAD' ? 'GET' : request.method;
  if (request.path === '' || request.path === '/conformance' || request.path === '/api') {
    if (method !== 'GET') throw notAllowed('GET');
    return request.path === '' ? landing(api, request) : request.path === '/api' ? apiDefinition(api, request) : conformancePage(request);
  }
  const [, first, name, items, fid, ...extra] = request.path.split('/');
  if (first !== 'collections' || extra.length > 0 || (items !== undefined && items !== 'items' && items !== 'queryables') || (items === 'queryables' && fid !== undefined)) {
    throw new AppError('NOT_FOUND', `Nothing at ${request.path}`);
  }
  if (name === undefined) {
    if (method === 'GET') return collectionsPage(api, request);
    if (method === 'POST') return createCollection(db, request, catalogueChange);
    throw notAllowed('GET, POST');
  }
  const collection = await collectionNamed(db, request.schema, name);
  if (items === 'queryables') {
    if (method !== 'GET') throw notAllowed('GET');
    return queryablesPage(request, collection);
  }
  if (items === undefined) {
    if (method === 'GET') return collectionPage(api, request, collection);
    if (method === 'DELETE') {
      await db.transaction().execute(async (trx) => {
        await dropCollection(trx as Database, request.schema, collection.name);
        await catalogueChange?.announce(trx as Database);
      });
      catalogueChange?.committed();
      return { status: 204 };
    }
    throw notAllowed('GET, DELETE');
  }
  if (fid === undefined) {
    if (method === 'GET') return itemsPage(api, request, collection);
    if (method === 'POST') {
      const rows = parseFeatureBatch(request.body, collection);
      const ids = await db.transaction().execute((trx) => insertFeatures(trx as Database, request.schema, collection, rows));
      return { status: 201, body: { ids } };
    }
    throw notAllowed('GET, POST');
  }
  const id = featureId(fid, collection);
  if (method === 'GET') return itemPage(api, request, collection, id, () => missingFeature(collection, id));
  if (method === 'PUT') {
    const row = parseSingleFeature(request.body, collection);
    if (!(await replaceFeature(db, request.schema, collection, id, row))) throw missingFeature(collection, id);
    if (!request.callerMayRead) return { status: 204 };
    return { status: 200, headers: GEOJSON, body: await featureOrThrow(db, request.schema, collection, id) };
  }
  if (method === 'DELETE') {
    if (!(await deleteFeature(db, request.schema, collection, id))) throw missingFeature(collection, id);
    return { status: 204 };
  }
  throw notAllowed('GET, PUT, DELETE');
}

async function createCollection(db: Database, request: FeatureRequest, catalogueChange: CatalogueChange): Promise<FeatureResponse> {
  const def = parseCollectionDef(request.body);
  if (!(await isKnownSrid(db, def.srid))) {
    throw new AppError('VALIDATION_FAILED', `SRID ${def.srid} is unknown`, { fieldErrors: [{ field: 'srid', message: 'is not in spatial_ref_sys' }] });
  }
  const taken = () => new AppError('UNIQUE_CONSTRAINT_VIOLATION', `A collection named ${def.name} exists already`);
  try {
    await db.transaction().execute(async (trx) => {
      if (!(await insertCollection(trx as Database, request.schema, def))) throw taken();
      await createCollectionTable(trx as Database, request.schema, def);
      await catalogueChange?.announce(trx as Database);
    });
    catalogueChange?.committed();
  } catch (error) {
    // 42P07: a table of that name (not a collection) is already in the schema; 23505: a concurrent create.
    if (isUniqueViolation(error) || (error as { code?: string }).code === '42P07') throw taken();
    throw error;
  }
  return {
    status: 201,
    headers: { location: `${request.baseUrl}/collections/${def.name}` },
    body: await describe(db, request.schema, def),
  };
}

async function describe(db: Database, schema: string, def: CollectionDef) {
  const { featureCount, bbox } = await collectionSummary(db, schema, def);
  return { ...def, featureCount, bbox };
}

async function collectionNamed(db: Database, schema: string, name: string): Promise<CollectionDef> {
  const collection = NAME_PATTERN.test(name) ? await findCollection(db, schema, name) : undefined;
  if (!collection) throw new AppError('NOT_FOUND', `Collection ${name.slice(0, 80)} does not exist`);
  return collection;
}

function featureId(text: string, collection: CollectionDef): number {
  const id = /^[1-9]\d{0,15}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(id)) throw new AppError('NOT_FOUND', `Feature ${text.slice(0, 40)} of ${collection.name} does not exist`);
  return id;
}

async function featureOrThrow(db: Database, schema: string, collection: CollectionDef, id: number) {
  const feature = await readFeature(db, schema, collection, id);
  if (!feature) throw missingFeature(collection, id);
  return feature;
}

const missingFeature = (collection: CollectionDef, id: number) => new AppError('NOT_FOUND', `Feature ${id} of ${collection.name} does not exist`);

const notAllowed = (allowed: string) => new AppError('MALFORMED_REQUEST', `This path takes ${allowed}`, { status: 405 });
