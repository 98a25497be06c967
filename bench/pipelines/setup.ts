import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The pipeline benchmark's datasets, made through the management API as a data steward makes
 * them: an AVAILABLE data source, a dataset with an STA API, a mapping and a pipeline, released.
 */

type Json = Record<string, any>;

export async function call<T = Json>(method: string, url: string, token: string, body?: unknown, expect = [200, 201, 202]): Promise<T> {
  const response = await fetch(url, {
    method, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!expect.includes(response.status)) throw new Error(`${method} ${url} answered ${response.status}: ${text.slice(0, 500)}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

export async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, everyMs = 50): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(everyMs)) {
    const value = await probe();
    if (value !== undefined) return value;
  }
  throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
}

let structureVersion: string | null = null;

export async function availableSource(api: string, token: string, name: string, connectorType: 'MQTT' | 'SQL', configuration: Json): Promise<string> {
  if (!structureVersion) {
    const structure = await call(`POST`, `${api}/v1/datastructures`, token, { name: 'bench records' });
    const version = await call('POST', `${api}/v1/datastructures/${structure.id}/versions`, token, { dataStructureVersionSource: 'OWN', model: { type: 'object' } });
    await call('POST', `${api}/v1/datastructures/${structure.id}/versions/${version.id}/release`, token);
    await call('POST', `${api}/v1/datastructures/${structure.id}/release`, token);
    structureVersion = version.id as string;
  }
  const source = await call('POST', `${api}/v1/datasources`, token, { name, connectorType, dataStructureVersionId: structureVersion, configuration });
  await call('POST', `${api}/v1/datasources/${source.id}/release`, token);
  return source.id as string;
}

export interface PipelineTarget {
  datasetId: string;
  pipelineId: string;
  /** `{DATA_API_URL}/v1/datasets/{id}/sensors` */
  base: string;
  schema: string;
}

/** The mapping every scenario uses: one Datastream per sensor, the time and value from the record. */
export const BENCH_MAPPING = {
  fields: {
    'Datastream.name': '"sensor-" & s',
    result: 'v',
    phenomenonTime: 't',
    FeatureOfInterest: '{"name": "bench site", "feature": {"type": "Point", "coordinates": [8.4, 49]}}',
  },
};

export async function releasedPipeline(api: string, dataApi: string, token: string, name: string, sourceId: string, schedule?: string): Promise<PipelineTarget> {
  const dataset = await call('POST', `${api}/v1/datasets`, token, { name, description: 'pipeline benchmark', namedApis: [{ name: 'Sensors', slug: 'sensors', standard: 'STA' }] });
  const id = dataset.id as string;
  await until('CREATE saga', 30_000, async () => ((await call(`GET`, `${api}/v1/datasets/${id}`, token)).provisioned ? true : undefined));
  const mapping = await call('POST', `${api}/v1/datasets/${id}/mappings`, token, { name: 'bench', ...BENCH_MAPPING });
  const pipeline = await call('POST', `${api}/v1/datasets/${id}/pipelines`, token, {
    name, dataSourceIds: [sourceId], mappingRef: mapping.logicalUrn, namedApiSlug: 'sensors', ...(schedule ? { schedule } : {}),
  });
  await call('POST', `${api}/v1/datasets/${id}/release`, token);
  await until(`pipeline ${name} running`, 60_000, async () => {
    const status = (await call(`GET`, `${api}/v1/datasets/${id}/pipelines/${pipeline.id}`, token)).runtimeStatus;
    return status?.state === 'RUNNING' ? true : undefined;
  });
  return { datasetId: id, pipelineId: pipeline.id, base: `${dataApi}/v1/datasets/${id}/sensors`, schema: `ds_${id.replaceAll('-', '')}` };
}
