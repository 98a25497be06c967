import assert from 'node:assert/strict';
import type { TestApp } from '../helpers/test-app.js';
import { bearer, uniqueName } from '../helpers/factories.js';

/** HTTP helpers shared by the tests of a dataset's parts (styles, mappings, pipelines). */

export type Json = Record<string, any>;
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export const ows = (slug = 'maps') => ({ name: 'Maps', slug, standard: 'OWS' });
export const sta = (slug = 'sensors') => ({ name: 'Sensors', slug, standard: 'STA', version: '1.1' });

export function datasetParts(app: () => TestApp) {
  const call = (method: Method, url: string, payload?: unknown, token = app().adminToken, headers: Record<string, string> = {}) =>
    app().app.inject({ method, url, headers: { ...bearer(token), ...headers }, ...(payload === undefined ? {} : { payload: payload as Json }) });
  const ok = async (method: Method, url: string, payload?: unknown, status?: number): Promise<Json> => {
    const response = await call(method, url, payload);
    assert.equal(response.statusCode, status ?? (method === 'POST' ? 201 : 200), response.body);
    return response.statusCode === 204 ? {} : response.json();
  };
  /** Polls until the dataset's saga has finished. */
  const settled = async (id: string): Promise<Json> => {
    for (let i = 0; i < 250; i++) {
      const dataset = await ok('GET', `/v1/datasets/${id}`);
      if (dataset.pendingSagaType === null) return dataset;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`the saga of dataset ${id} did not finish`);
  };
  /** A DRAFT dataset with provisioned storage. */
  const newDataset = async (fields: Json = {}): Promise<Json> => {
    const dataset = await ok('POST', '/v1/datasets', { name: uniqueName('Dataset'), description: 'Parts', namedApis: [ows()], ...fields });
    return settled(dataset.id);
  };
  const stage = (id: string) => ok('POST', `/v1/datasets/${id}/stage`, undefined, 200);
  const release = async (id: string) => { await ok('POST', `/v1/datasets/${id}/release`, undefined, 202); return settled(id); };
  const unrelease = async (id: string) => { await ok('POST', `/v1/datasets/${id}/unrelease`, undefined, 202); return settled(id); };
  return { call, ok, settled, newDataset, stage, release, unrelease };
}
