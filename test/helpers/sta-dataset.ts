import assert from 'node:assert/strict';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { TestApp } from './test-app.js';
import { bearer, uniqueName } from './factories.js';
import { waitFor } from './wait.js';

type Json = Record<string, any>;
export type PayloadMethod = 'GET' | 'HEAD' | 'POST' | 'PATCH' | 'PUT' | 'DELETE' | 'OPTIONS';

export interface PublishedDataset {
  datasetId: string;
  slug: string;
  /** The route's path on the data API: `/v1/datasets/{id}/{slug}`. */
  base: string;
  /** The route's public base URL (`previewUrl`): every link the gateway answers starts with it. */
  publicBase: string;
  gateway: FastifyInstance;
  /**
   * A request through the gateway below the base (`/Things`, `/Things(1)?$expand=Datastreams`),
   * with the admin's token unless `headers` sets another `authorization` (or `null`: anonymous).
   */
  request(method: PayloadMethod, path: string, body?: unknown, headers?: Record<string, string | null>): Promise<LightMyRequestResponse>;
}

export interface PublishOptions {
  standard?: 'STA' | 'OWS';
  openDataAccess?: boolean;
  datapoolId?: string;
  slug?: string;
  /** Upstream mode: the SensorThings server the API is proxied to. */
  upstreamUrl?: string;
  /** SLD styles added while the dataset is DRAFT (OWS draws its layers with them). */
  styles?: Array<{ name: string; sldContent: string }>;
  /** Runs while the dataset is DRAFT, after the styles (adds its mappings and pipelines, say). */
  beforeRelease?: (datasetId: string) => Promise<void>;
}

/**
 * A dataset released through the real management API with one named API (STA by default), once
 * its RELEASE saga has finished and the gateway serves its route.
 */
export async function publishDataset(t: TestApp, options: PublishOptions = {}): Promise<PublishedDataset> {
  const slug = options.slug ?? 'sensors';
  const created = await t.app.inject({
    method: 'POST', url: '/v1/datasets', headers: bearer(t.adminToken),
    payload: {
      name: uniqueName('published'), description: 'published for payload tests',
      openDataAccess: options.openDataAccess ?? false,
      ...(options.datapoolId ? { datapoolId: options.datapoolId } : {}),
      namedApis: [{ name: 'Payload', slug, standard: options.standard ?? 'STA', ...(options.upstreamUrl ? { upstreamUrl: options.upstreamUrl } : {}) }],
    },
  });
  assert.equal(created.statusCode, 201, created.body);
  const datasetId: string = created.json().id;
  await waitForNoSaga(t, datasetId);
  for (const style of options.styles ?? []) {
    const added = await t.app.inject({ method: 'POST', url: `/v1/datasets/${datasetId}/styles`, headers: bearer(t.adminToken), payload: style });
    assert.equal(added.statusCode, 201, added.body);
  }
  await options.beforeRelease?.(datasetId);
  const released = await t.app.inject({ method: 'POST', url: `/v1/datasets/${datasetId}/release`, headers: bearer(t.adminToken) });
  assert.equal(released.statusCode, 202, released.body);
  await waitForNoSaga(t, datasetId);
  const gateway = await t.dataApi();
  const base = `/v1/datasets/${datasetId}/${slug}`;
  const request: PublishedDataset['request'] = (method, path, body, headers = {}) => {
    const { authorization = `Bearer ${t.adminToken}`, ...rest } = headers;
    return gateway.inject({
      method, url: `${base}${path}`,
      headers: { ...(authorization === null ? {} : { authorization }), ...(rest as Record<string, string>) },
      ...(body === undefined ? {} : { payload: body as Json }),
    });
  };
  await waitForRoute(() => request('GET', ''), (status) => status !== 404);
  return { datasetId, slug, base, publicBase: `${t.ctx.config.dataApi.baseUrl}${base}`, gateway, request };
}

/** A dataset with an STA named API, published (the SensorThings tests' starting point). */
export const publishStaDataset = (t: TestApp, options: Omit<PublishOptions, 'standard'> = {}) => publishDataset(t, { ...options, standard: 'STA' });

/** Polls until the dataset has no pending saga (or is gone); fails at once on a saga error, and on timeout. */
export async function waitForNoSaga(t: TestApp, datasetId: string, timeoutMs = 10_000): Promise<Json> {
  let last: Json = {};
  return waitFor(async () => {
    const response = await t.app.inject({ method: 'GET', url: `/v1/datasets/${datasetId}`, headers: bearer(t.adminToken) });
    last = response.json();
    if (response.statusCode === 404) return last;
    assert.equal(last.sagaError ?? null, null, `saga failed: ${JSON.stringify(last.sagaError)}`);
    return last.pendingSagaType ? undefined : last;
  }, { what: `the saga of dataset ${datasetId} to finish`, timeoutMs, last: () => `pendingSagaType ${last.pendingSagaType}, status ${last.status}` });
}

/**
 * Polls until the answer's status satisfies `done` (the route table follows changes within its poll
 * period, or at once on a NOTIFY) and answers that response; throws on timeout naming the last status.
 */
export async function waitForRoute(probe: () => Promise<LightMyRequestResponse>, done: (status: number) => boolean, timeoutMs = 3_000): Promise<LightMyRequestResponse> {
  let last: LightMyRequestResponse | undefined;
  return waitFor(async () => {
    last = await probe();
    return done(last.statusCode) ? last : undefined;
  }, {
    what: `the route's answer to change (${done.toString()})`, timeoutMs,
    last: () => `${last?.statusCode} ${last?.body.slice(0, 200)}`,
  });
}
