import assert from 'node:assert/strict';
import type { TestApp } from './test-app.js';
import { bearer } from './factories.js';

type Json = Record<string, any>;
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * Request helpers for one test app: `call` answers the raw response; `ok` asserts the success
 * status (201 for a POST that creates, 200 otherwise, including POST …/release and …/unrelease)
 * and answers the JSON body; `deleted` asserts 204.
 */
export function requestsOf(t: () => TestApp) {
  const call = (method: Method, url: string, payload?: unknown, token = t().adminToken) =>
    t().app.inject({ method, url, headers: bearer(token), ...(payload === undefined ? {} : { payload: payload as Json }) });
  const ok = async (method: Method, url: string, payload?: unknown, status?: number, token = t().adminToken) => {
    const response = await call(method, url, payload, token);
    assert.equal(response.statusCode, status ?? (method === 'POST' && !/release$/.test(url) ? 201 : 200), response.body);
    return response.json();
  };
  const deleted = async (url: string) => {
    const response = await call('DELETE', url);
    assert.equal(response.statusCode, 204, response.body);
  };
  return { call, ok, deleted };
}
