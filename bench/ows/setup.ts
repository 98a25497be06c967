import { setTimeout as sleep } from 'node:timers/promises';
import { median } from '../load.js';
import { aliasOf } from '../../src/ows/ows-server.js';

/**
 * The data of the OWS benchmark, made through the APIs as a data steward makes it: a dataset with
 * one OWS named API, released (management API), a `trees` Point collection in it, and features
 * POSTed to `{base}/collections/trees/items` in FeatureCollections of 10,000 (data API gateway).
 */

export interface OwsDataset {
  id: string;
  slug: string;
  /** `{DATA_API_URL}/v1/datasets/{id}/{slug}`: the OGC endpoint and the collections' root. */
  base: string;
  /** The map alias the service registers in `mapserver.conf`. */
  alias: string;
  openDataAccess: boolean;
}

const headers = (token: string, contentType = 'application/json') => ({ 'content-type': contentType, authorization: `Bearer ${token}` });

async function call<T>(method: string, url: string, token: string, body?: unknown, expect = [200, 201, 202]): Promise<T> {
  const response = await fetch(url, { method, headers: headers(token), ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await response.text();
  if (!expect.includes(response.status)) throw new Error(`${method} ${url} answered ${response.status}: ${text.slice(0, 500)}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

async function until(what: string, timeoutMs: number, probe: () => Promise<boolean>): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(50)) if (await probe()) return;
  throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
}

/** A dataset with one OWS named API, provisioned, released and served by the gateway, with an empty `trees` Point collection. */
export async function releasedOwsDataset(api: string, dataApi: string, token: string, opts: { name: string; slug: string; openDataAccess: boolean }): Promise<OwsDataset> {
  const { id } = await call<{ id: string }>('POST', `${api}/v1/datasets`, token, {
    name: opts.name, description: 'OWS benchmark', openDataAccess: opts.openDataAccess,
    namedApis: [{ name: 'Trees', slug: opts.slug, standard: 'OWS' }],
  });
  const dataset = `${api}/v1/datasets/${id}`;
  const idle = async () => {
    const d = await call<{ provisioned?: boolean; pendingSagaType?: string | null; sagaError?: unknown }>('GET', dataset, token, undefined, [200, 404]);
    if (d?.sagaError) throw new Error(`saga failed: ${JSON.stringify(d.sagaError)}`);
    return !d || (d.provisioned !== false && !d.pendingSagaType);
  };
  await until('CREATE saga', 30_000, idle);
  await call('POST', `${dataset}/release`, token);
  await until('RELEASE saga', 60_000, idle);
  const base = `${dataApi}/v1/datasets/${id}/${opts.slug}`;
  await until('the gateway serving the released dataset', 60_000, async () => {
    const response = await fetch(`${base}/collections`, { headers: headers(token) });
    await response.body?.cancel();
    return response.status === 200;
  });
  await call('POST', `${base}/collections`, token, { name: 'trees', geometryType: 'Point', properties: { name: 'string', height: 'number' } }, [201]);
  return { id, slug: opts.slug, base, alias: aliasOf({ datasetId: id, slug: opts.slug }), openDataAccess: opts.openDataAccess };
}

/** The query string of a WFS 2.0 GetFeature of the first `count` trees as GeoJSON. */
export const wfsGetFeature = (slug: string, count: number) => `SERVICE=WFS&VERSION=2.0.0&REQUEST=GetFeature&TYPENAMES=${slug}:trees&COUNT=${count}&OUTPUTFORMAT=application/json`;

/** Where the trees stand: a grid of 400 × 250 points over central Frankfurt (lon 8.60–8.80, lat 50.05–50.15). */
export const EXTENT = { minLon: 8.6, minLat: 50.05, maxLon: 8.8, maxLat: 50.15 };
const COLUMNS = 400;
const ROWS = 250;

/** The FeatureCollection of features `from` … `from + count - 1` of the grid, as a request body. */
export function treeBatch(from: number, count: number): string {
  const features = [];
  for (let n = from; n < from + count; n++) {
    const column = n % COLUMNS;
    const row = Math.floor(n / COLUMNS) % ROWS;
    features.push({
      type: 'Feature',
      geometry: { type: 'Point', coordinates: [
        +(EXTENT.minLon + (column + 0.5) * (EXTENT.maxLon - EXTENT.minLon) / COLUMNS).toFixed(6),
        +(EXTENT.minLat + (row + 0.5) * (EXTENT.maxLat - EXTENT.minLat) / ROWS).toFixed(6),
      ] },
      properties: { name: `Tree ${n + 1}`, height: 3 + (n % 250) / 10 },
    });
  }
  return JSON.stringify({ type: 'FeatureCollection', features });
}

export interface FeatureLoad {
  features: number;
  requests: number;
  /** Requests in flight at once. */
  concurrency: number;
  /** Wall time of the whole load. */
  seconds: number;
  /** features / seconds. */
  totalPerSecond: number;
  /** The median over requests of featuresPerRequest / its own time. */
  medianPerSecond: number;
  minPerSecond: number;
  maxPerSecond: number;
  requestMs: number[];
}

/**
 * `batches` (prepared bodies) POSTed to the collection's items endpoint, `concurrency` at a time,
 * each timed from the request to the end of its 201 answer.
 */
export async function loadFeatures(dataset: OwsDataset, token: string, batches: string[], perBatch: number, concurrency: number): Promise<FeatureLoad> {
  const url = `${dataset.base}/collections/trees/items`;
  const requestMs: number[] = new Array(batches.length);
  let next = 0;
  const startedAt = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    for (let i = next++; i < batches.length; i = next++) {
      const t0 = performance.now();
      const response = await fetch(url, { method: 'POST', headers: headers(token, 'application/geo+json'), body: batches[i]! });
      const text = await response.text();
      requestMs[i] = performance.now() - t0;
      if (response.status !== 201) throw new Error(`POST ${url} answered ${response.status}: ${text.slice(0, 300)}`);
      const ids = (JSON.parse(text) as { ids?: unknown[] }).ids;
      if (ids?.length !== perBatch) throw new Error(`POST ${url}: ${ids?.length} ids for ${perBatch} features`);
    }
  }));
  const seconds = (performance.now() - startedAt) / 1000;
  const rates = requestMs.map((ms) => perBatch / (ms / 1000));
  return {
    features: perBatch * batches.length, requests: batches.length, concurrency, seconds,
    totalPerSecond: (perBatch * batches.length) / seconds,
    medianPerSecond: median(rates), minPerSecond: Math.min(...rates), maxPerSecond: Math.max(...rates), requestMs,
  };
}

/** The collection's feature count as the collections endpoint reports it. */
export async function featureCount(dataset: OwsDataset, token: string): Promise<number> {
  return (await call<{ featureCount: number }>('GET', `${dataset.base}/collections/trees`, token)).featureCount;
}
