import type { Database } from '../db/client.js';
import type { Download } from '../util/download.js';

/**
 * One request to a dataset's feature collections (`{base}/collections[/…]`), as the gateway hands
 * it over: authorized already, with the route's public base and the dataset's storage schema.
 */
export interface FeatureRequest {
  method: 'GET' | 'HEAD' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** Below the base, percent-decoded: `''` (the landing page), `/conformance`, `/api`, `/collections`, `/collections/roads/items/7`. */
  path: string;
  /** The raw query string without `?` (still percent-encoded), `''` when none. */
  query: string;
  /** The parsed JSON body, `undefined` when none. */
  body: unknown;
  /** The public base of this route: `{DATA_API_URL}/v1/datasets/{id}/{slug}`; Location headers start with it. */
  baseUrl: string;
  /** The dataset and the named API (the landing page names the dataset). */
  datasetId: string;
  slug: string;
  /** The request's Accept header (JSON or HTML), when it has one. */
  accept?: string;
  /** The dataset's storage schema (`ds_…`), provisioned by `provision`. */
  schema: string;
  /**
   * Whether the caller may read this dataset's payload. A caller who may only write gets no
   * stored data in an answer: an item's PUT answers 204 without a body.
   */
  callerMayRead: boolean;
}

/** The answer: a status, headers (Location, Content-Type) and a JSON body, or none (204). Errors are thrown as AppError. */
export interface FeatureResponse {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

/** A bulk download of an OWS API, as the gateway asks for it. */
export interface FeatureDownloadRequest {
  schema: string;
  /** `/download.gpkg` or `/collections/{name}/download.{geojson|csv}`. */
  path: string;
  /** The start of the file's name (the dataset's and the API's). */
  fileStem: string;
  /** The schema's data version (files made once per version are shared). */
  version: number;
}

/** What the gateway and the RELEASE saga need of the feature store; `runtime.ts` wires the real one. */
export interface FeatureStore {
  /** Whether the store can serve at all (PostGIS present); without it every OWS request answers 503. */
  readonly available: boolean;
  handle(request: FeatureRequest): Promise<FeatureResponse>;
  /** Creates the collection catalogue in a dataset's schema; idempotent (a RELEASE saga step). */
  provision(trx: Database, schema: string): Promise<void>;
  /** A bulk download (`isFeatureDownloadPath`); authorized already, NOT_FOUND for a collection that does not exist. */
  download(request: FeatureDownloadRequest): Promise<Download>;
}

export const GEOMETRY_TYPES = ['Point', 'LineString', 'Polygon', 'MultiPoint', 'MultiLineString', 'MultiPolygon'] as const;
export type GeometryType = (typeof GEOMETRY_TYPES)[number];

export const ATTRIBUTE_TYPES = ['string', 'integer', 'number', 'boolean', 'date-time'] as const;
export type AttributeType = (typeof ATTRIBUTE_TYPES)[number];

/** A collection as its catalogue row describes it. */
export interface CollectionDef {
  name: string;
  title: string | null;
  geometryType: GeometryType;
  srid: number;
  /** Attribute name → type; each attribute is a column of the same name. */
  properties: Record<string, AttributeType>;
}
