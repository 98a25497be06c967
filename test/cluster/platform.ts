import { WEATHER_STATION } from '../data-api/mqtt-fixtures.js';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request } from '../faults/harness.js';
import { waitFor } from '../helpers/wait.js';

type Json = Record<string, any>;

/**
 * The cluster test's steps through nginx's public URLs, as a client of a deployment takes them
 * (the in-process helpers of test/helpers inject into an app; these speak HTTP).
 */
export class Platform {
  constructor(readonly apiUrl: string, readonly dataUrl: string, readonly token: string) {}

  /** A management API call that must answer `status` (POST 201, else 200 unless given). */
  async api(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown, status?: number): Promise<Json> {
    const answer = await request(`${this.apiUrl}${path}`, { method, token: this.token, ...(body === undefined ? {} : { body }) });
    assert.equal(answer.status, status ?? (method === 'POST' ? 201 : 200), `${method} ${path}: ${JSON.stringify(answer.body)}`);
    return (answer.body ?? {}) as Json;
  }

  /** A data API call below a dataset's named API that must answer `status`. */
  async data(method: 'GET' | 'POST', base: string, path: string, body?: unknown, status?: number): Promise<Json> {
    const answer = await request(`${this.dataUrl}${base}${path}`, { method, token: this.token, ...(body === undefined ? {} : { body }) });
    assert.equal(answer.status, status ?? (method === 'POST' ? 201 : 200), `${method} ${base}${path}: ${JSON.stringify(answer.body)}`);
    return (answer.body ?? {}) as Json;
  }

  /** An AVAILABLE MQTT data source reading `topics` of the broker at `url`. */
  async mqttSource(url: string, topics: string[]): Promise<Json> {
    const structure = await this.api('POST', '/v1/datastructures', { name: unique('Structure') });
    const version = await this.api('POST', `/v1/datastructures/${structure.id}/versions`, { dataStructureVersionSource: 'OWN', model: { type: 'object' } });
    await this.api('POST', `/v1/datastructures/${structure.id}/versions/${version.id}/release`, undefined, 200);
    await this.api('POST', `/v1/datastructures/${structure.id}/release`, undefined, 200);
    const source = await this.api('POST', '/v1/datasources', { name: unique('Source'), connectorType: 'MQTT', dataStructureVersionId: version.id, configuration: { urls: [url], topics, qos: 1 } });
    return this.api('POST', `/v1/datasources/${source.id}/release`, undefined, 200);
  }

  /** A DRAFT dataset with one STA named API `sensors`, once its CREATE saga provisioned it. */
  async draftDataset(): Promise<string> {
    const created = await this.api('POST', '/v1/datasets', {
      name: unique('cluster'), description: 'cluster test', namedApis: [{ name: 'Sensors', slug: 'sensors', standard: 'STA' }],
    });
    await this.settled(created.id);
    return created.id;
  }

  /** Adds a mapping and an MQTT pipeline into `sensors` to a DRAFT dataset; answers the pipeline's id. */
  async addPipeline(datasetId: string, sourceId: string, mapping: Json): Promise<string> {
    const stored = await this.api('POST', `/v1/datasets/${datasetId}/mappings`, { name: 'm', ...mapping }, 200);
    const pipeline = await this.api('POST', `/v1/datasets/${datasetId}/pipelines`, {
      name: unique('Pipeline'), mappingRef: stored.logicalUrn, namedApiSlug: 'sensors', dataSourceIds: [sourceId],
    });
    return pipeline.id;
  }

  async release(datasetId: string): Promise<void> {
    await this.api('POST', `/v1/datasets/${datasetId}/release`, undefined, 202);
  }

  /** Waits until no saga is pending on the dataset; fails on a saga error. Answers the dataset. */
  async settled(datasetId: string, timeoutMs = 20_000): Promise<Json> {
    let last: Json = {};
    return waitFor(async () => {
      last = await this.api('GET', `/v1/datasets/${datasetId}`);
      assert.equal(last.sagaError ?? null, null, `saga failed: ${JSON.stringify(last.sagaError)}`);
      return last.pendingSagaType ? undefined : last;
    }, { what: `the saga of dataset ${datasetId}`, timeoutMs, intervalMs: 100, last: () => JSON.stringify(last) });
  }

  /** Waits until the dataset's route answers on the data API (every replica's route table follows). */
  async routed(base: string): Promise<void> {
    await waitFor(async () => ((await request(`${this.dataUrl}${base}`, { token: this.token })).status === 200 ? true : undefined),
      { what: `${base} to be served`, timeoutMs: 10_000, intervalMs: 100 });
  }

  /** A Thing with one Datastream (and its Sensor and ObservedProperty); answers the Datastream's id. */
  async datastream(base: string): Promise<number> {
    const thing = await this.data('POST', base, '/Things', WEATHER_STATION);
    const datastreams = await this.data('GET', base, `/Things(${thing['@iot.id']})/Datastreams`);
    return datastreams.value[0]['@iot.id'];
  }

  async pipelineStatus(datasetId: string, pipelineId: string): Promise<Json | null> {
    return (await this.api('GET', `/v1/datasets/${datasetId}/pipelines/${pipelineId}`)).runtimeStatus;
  }
}

export const unique = (prefix: string) => `${prefix} ${randomBytes(4).toString('hex')}`;
