import { setTimeout as sleep } from 'node:timers/promises';
import { withClient } from '../database.js';

/**
 * The data of the SensorThings benchmark: a released dataset with an STA named API (through the
 * management API, as a data steward makes one), one Thing with its Location and 100 Datastreams
 * (one deep insert through the STA API), then a million Observations in one Datastream with bulk
 * SQL into the dataset's own schema (`ds_<id without dashes>`, tables of src/sta/storage.ts), then
 * `vacuum (analyze)`.
 */

export interface StaDataset {
  id: string;
  /** `{DATA_API_URL}/v1/datasets/{id}/sensors`: the service root on the gateway. */
  base: string;
  schema: string;
}

export interface StaSeed {
  thingId: number;
  /** Ascending; the first holds the big series (so that the Thing's `$expand` meets it too). */
  datastreamIds: number[];
  bigDatastreamId: number;
  /** A Datastream for the write scenarios, so that they never touch the read series. */
  writeDatastreamId: number;
  observations: number;
  /** Observations in each other Datastream (for the `$expand`'s latest 3 of each). */
  observationsPerOtherDatastream: number;
  /** phenomenonTime of the first Observation; the n-th is n seconds later. */
  firstTime: Date;
  seconds: number;
}

const json = (token: string | null) => ({
  'content-type': 'application/json',
  ...(token ? { authorization: `Bearer ${token}` } : {}),
});

async function call<T>(method: string, url: string, token: string, body?: unknown, expect = [200, 201, 202]): Promise<{ status: number; body: T; headers: Headers }> {
  const response = await fetch(url, { method, headers: json(token), ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await response.text();
  if (!expect.includes(response.status)) throw new Error(`${method} ${url} answered ${response.status}: ${text.slice(0, 500)}`);
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as T, headers: response.headers };
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(50)) {
    const value = await probe();
    if (value !== undefined) return value;
  }
  throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
}

/** A DRAFT dataset with one STA named API, provisioned by its CREATE saga, then released and served by the gateway. */
export async function releasedStaDataset(api: string, dataApi: string, token: string, name: string): Promise<StaDataset> {
  const created = await call<{ id: string }>('POST', `${api}/v1/datasets`, token, {
    name, description: 'SensorThings benchmark',
    namedApis: [{ name: 'Sensors', slug: 'sensors', standard: 'STA', version: '1.1' }],
  });
  const id = created.body.id;
  const dataset = `${api}/v1/datasets/${id}`;
  await until('CREATE saga', 30_000, async () => ((await call<{ provisioned: boolean; pendingSagaType: string | null }>('GET', dataset, token)).body.provisioned ? true : undefined));
  await call('POST', `${dataset}/release`, token);
  const base = `${dataApi}/v1/datasets/${id}/sensors`;
  await until('the gateway serving the released dataset', 60_000, async () => {
    const response = await fetch(base, { headers: json(token) });
    await response.body?.cancel();
    return response.status === 200 ? true : undefined;
  });
  return { id, base, schema: `ds_${id.replaceAll('-', '')}` };
}

/** Flips `openDataAccess` on a released dataset and waits until the gateway serves it anonymously. */
/** A personal access token of the caller of `token`, created through the management API. */
export async function personalAccessToken(api: string, token: string): Promise<string> {
  const created = await call<{ token: string }>('POST', `${api}/v1/users/me/tokens`, token, { name: 'benchmark' });
  return created.body.token;
}

export async function openForAnonymousReads(api: string, token: string, dataset: StaDataset, probePath: string): Promise<void> {
  await call('PATCH', `${api}/v1/datasets/${dataset.id}/released/meta`, token, { openDataAccess: true });
  await until('anonymous reads after openDataAccess', 30_000, async () => {
    const response = await fetch(dataset.base + probePath);
    await response.body?.cancel();
    return response.status === 200 ? true : undefined;
  });
}

const datastream = (n: number) => ({
  name: `Datastream ${n}`, description: `Channel ${n} of the station`,
  observationType: 'http://www.opengis.net/def/observationType/OGC-OM/2.0/OM_Measurement',
  unitOfMeasurement: { name: 'degree Celsius', symbol: '°C', definition: 'http://unitsofmeasure.org/ucum.html#para-30' },
  Sensor: { name: `Sensor ${n}`, description: 'thermometer', encodingType: 'application/pdf', metadata: `https://example.org/sensor-${n}.pdf` },
  ObservedProperty: { name: `Property ${n}`, definition: `https://example.org/property-${n}`, description: 'air temperature' },
});

/**
 * The Thing (one deep insert: Location, 100 Datastreams with Sensor and ObservedProperty), one
 * Observation through the API (its FeatureOfInterest derived from the Location, as the server
 * makes it), then the series with bulk SQL reusing that FeatureOfInterest, and `vacuum (analyze)`.
 */
export async function seedSta(databaseUrl: string, dataset: StaDataset, token: string, opts: { datastreams: number; observations: number; perOtherDatastream: number }): Promise<StaSeed> {
  const startedAt = performance.now();
  const thing = await call<{ '@iot.id': number }>('POST', `${dataset.base}/Things`, token, {
    name: 'Station 1', description: 'Benchmark station',
    Locations: [{ name: 'Town hall', description: 'roof', encodingType: 'application/geo+json', location: { type: 'Point', coordinates: [8.68, 50.11] } }],
    Datastreams: Array.from({ length: opts.datastreams }, (_, i) => datastream(i + 1)),
  });
  const thingId = thing.body['@iot.id'];
  const streams = await call<{ value: Array<{ '@iot.id': number }> }>('GET', `${dataset.base}/Things(${thingId})/Datastreams?$select=id&$top=${opts.datastreams}`, token);
  const datastreamIds = streams.body.value.map((d) => d['@iot.id']).sort((a, b) => a - b);
  if (datastreamIds.length !== opts.datastreams) throw new Error(`expected ${opts.datastreams} Datastreams, read ${datastreamIds.length}`);
  const bigDatastreamId = datastreamIds[0]!;
  const writeDatastreamId = datastreamIds.at(-1)!;
  // One Observation through the API: the server derives the FeatureOfInterest from the Location.
  await call('POST', `${dataset.base}/Datastreams(${bigDatastreamId})/Observations`, token, { result: 0, phenomenonTime: '2025-12-31T23:59:59Z' });

  const firstTime = new Date('2026-01-01T00:00:00Z');
  const s = (name: string) => `"${dataset.schema}".${name}`;
  await withClient(databaseUrl, async (db) => {
    const foi = (await db.query<{ id: number }>(`select feature_of_interest_id as id from ${s('observations')} limit 1`)).rows[0]!.id;
    await db.query('begin');
    await db.query(`
      insert into ${s('observations')} (datastream_id, feature_of_interest_id, phenomenon_time_start, phenomenon_time_end, result_time, result)
      select $1::bigint, $2::bigint, t, t, t, to_jsonb(round((15 + 10 * sin(n / 3600.0) + (n % 7) / 10.0)::numeric, 2))
      from generate_series(0, $3::int - 1) n, lateral (select $4::timestamptz + n * interval '1 second' as t) time`,
    [bigDatastreamId, foi, opts.observations - 1, firstTime.toISOString()]);
    await db.query(`
      insert into ${s('observations')} (datastream_id, feature_of_interest_id, phenomenon_time_start, phenomenon_time_end, result_time, result)
      select d, $2::bigint, t, t, t, to_jsonb(round((15 + (n % 50) / 10.0)::numeric, 2))
      from unnest($1::bigint[]) d, generate_series(0, $3::int - 1) n, lateral (select $4::timestamptz + n * interval '1 minute' as t) time`,
    [datastreamIds.slice(1), foi, opts.perOtherDatastream, firstTime.toISOString()]);
    await db.query('commit');
    // The state autovacuum leaves a bulk-loaded table in soon after: statistics and the visibility map.
    await db.query(`vacuum (analyze) ${s('observations')}`);
    await db.query(`analyze ${s('datastreams')}`);
  });
  return {
    thingId, datastreamIds, bigDatastreamId, writeDatastreamId,
    observations: opts.observations, observationsPerOtherDatastream: opts.perOtherDatastream,
    firstTime, seconds: (performance.now() - startedAt) / 1000,
  };
}

/** A further Datastream of the Thing, with no Observation: for writes that must leave the read series as seeded. */
export async function emptyDatastream(dataset: StaDataset, token: string, thingId: number, n: number): Promise<number> {
  const created = await call<{ '@iot.id'?: number }>('POST', `${dataset.base}/Things(${thingId})/Datastreams`, token, datastream(n), [201]);
  const id = created.body?.['@iot.id'] ?? Number(/\((\d+)\)$/.exec(created.headers.get('location') ?? '')?.[1]);
  if (!Number.isInteger(id)) throw new Error(`POST Things(${thingId})/Datastreams: no @iot.id in the answer`);
  return id;
}

/** The number of Observations a Datastream holds now (after the write scenarios). */
export async function countObservations(databaseUrl: string, schema: string, datastreamId: number): Promise<number> {
  return withClient(databaseUrl, async (db) => Number((await db.query<{ n: number }>(`select count(*) as n from "${schema}".observations where datastream_id = $1`, [datastreamId])).rows[0]!.n));
}
