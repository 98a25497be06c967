import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { datastream, location, multiDatastream, point, thing } from '../sta/fixtures.js';

/**
 * The bulk downloads of a SensorThings API (the contract's "Open data", Bulk downloads): every
 * Observation as CSV, ordered by Datastream and time, and every Thing at its latest Location as
 * GeoJSON; their validators; authorization as for the payload.
 */

type Json = Record<string, any>;

for (const kind of databaseKinds(import.meta.url)) {
  describe(`bulk downloads of a SensorThings API (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    let closed: PublishedDataset;
    let stem: string;
    const ids: Record<string, number> = {};
    before(async () => {
      t = await buildTestApp(kind);
      sta = await publishStaDataset(t, { slug: 'air', openDataAccess: true });
      closed = await publishStaDataset(t, { slug: 'closed', openDataAccess: false });
      stem = `${sta.datasetId.replaceAll('-', '').slice(0, 8)}-air`;
      const created = async (path: string, body: unknown) => {
        const response = await sta.request('POST', path, body);
        assert.equal(response.statusCode, 201, response.body);
        return Number(/\((\d+)\)$/.exec(String(response.headers.location))![1]);
      };
      ids['station'] = await created('/Things', thing('Weather station', {
        Locations: [location('Old yard', point(8.6, 50.1))],
        // Written out of time order: the download orders them.
        Datastreams: [datastream('Roof temperature', { Observations: [
          { phenomenonTime: '2020-01-01T02:00:00Z', result: 20.5 },
          { phenomenonTime: '2020-01-01T00:00:00Z', resultTime: '2020-01-01T00:05:00Z', result: 'cloudy, light rain' },
          { phenomenonTime: '2020-01-01T01:00:00Z/2020-01-01T01:30:00Z', result: { a: 1 } },
        ] }), datastream('Wind "gusts"', { Observations: [{ phenomenonTime: '2020-01-02T00:00:00Z', result: true }] })],
      }));
      // Moved: its current Location is the new one, and its HistoricalLocations say when.
      const newYard = await created('/Locations', location('New yard', point(8.7, 50.2)));
      const moved = await sta.request('PATCH', `/Things(${ids['station']})`, { Locations: [{ '@iot.id': newYard }] });
      assert.equal(moved.statusCode, 200, moved.body);
      ids['bare'] = await created('/Things', thing('Bare thing'));
      const streams = (await sta.request('GET', `/Things(${ids['station']})/Datastreams?$orderby=id&$select=id`)).json().value;
      ids['roof'] = streams[0]['@iot.id'];
      ids['wind'] = streams[1]['@iot.id'];
      const foi = (await sta.request('GET', `/Datastreams(${ids['roof']})/Observations?$top=1&$expand=FeatureOfInterest($select=id)`)).json().value[0];
      ids['feature'] = foi.FeatureOfInterest['@iot.id'];
      // A MultiDatastream's Observation: not a row of the CSV (one Datastream and one result per row).
      await created('/Things', thing('Anemometer mast', {
        Locations: [location('Mast', point(8.65, 50.15))],
        MultiDatastreams: [multiDatastream('Wind', { Observations: [{ phenomenonTime: '2020-01-03T00:00:00Z', result: [3.5, 270] }] })],
      }));
      assert.equal((await closed.request('POST', '/Things', thing('Hidden', { Locations: [location()] }))).statusCode, 201);
    });
    after(() => t?.close());

    const get = (dataset: PublishedDataset, path: string, headers: Record<string, string | null> = {}) =>
      dataset.request('GET', path, undefined, { authorization: null, ...headers });

    it('observations.csv: one row per Observation of a Datastream, ordered by Datastream and time, RFC 4180 quoting, as an attachment', async () => {
      const response = await get(sta, '/download/observations.csv');
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(response.headers['content-type'], 'text/csv; charset=utf-8');
      assert.equal(response.headers['content-disposition'], `attachment; filename="${stem}-observations.csv"`);
      assert.equal(response.headers['cache-control'], 'public, max-age=60');
      const { roof, wind, feature } = ids;
      assert.equal(response.body, [
        'datastream_id,datastream_name,phenomenon_time,result_time,result,feature_of_interest_id',
        `${roof},Roof temperature,2020-01-01T00:00:00.000Z,2020-01-01T00:05:00.000Z,"cloudy, light rain",${feature}`,
        `${roof},Roof temperature,2020-01-01T01:00:00.000Z/2020-01-01T01:30:00.000Z,,"{""a"": 1}",${feature}`,
        `${roof},Roof temperature,2020-01-01T02:00:00.000Z,,20.5,${feature}`,
        `${wind},"Wind ""gusts""",2020-01-02T00:00:00.000Z,,true,${feature}`,
        '',
      ].join('\r\n'));
    });

    it('observations.csv reads Datastreams in batches: a long stream comes whole, in time order', async () => {
      const count = 12_345;
      const long = await sta.request('POST', '/Things', thing('Busy station', { Locations: [location('Busy corner')], Datastreams: [datastream('Busy', {
        Observations: [{ phenomenonTime: '2021-01-01T00:00:00Z', result: -1 }],
      })] }));
      assert.equal(long.statusCode, 201, long.body.slice(0, 300));
      const busy = (await sta.request('GET', "/Datastreams?$filter=name eq 'Busy'&$expand=Observations($expand=FeatureOfInterest)")).json().value[0];
      // Written in one statement, newest first: more than a batch of the download.
      await sql`insert into ${sql.id(`ds_${sta.datasetId.replaceAll('-', '')}`, 'observations')}
          (datastream_id, phenomenon_time_start, phenomenon_time_end, result, feature_of_interest_id)
        select ${busy['@iot.id']}::bigint, t, t, to_jsonb(i), ${busy.Observations[0].FeatureOfInterest['@iot.id']}::bigint
        from generate_series(1, ${count - 1}) i, lateral (select timestamptz '2021-01-01T00:00:00Z' + (${count} - i) * interval '1 minute' as t) s`.execute(t.ctx.db);
      const rows = (await get(sta, '/download/observations.csv')).body.split('\r\n').filter((line) => line.includes(',Busy,'));
      assert.equal(rows.length, count);
      const times = rows.map((row) => row.split(',')[2]!);
      assert.deepEqual(times, [...times].sort());
      assert.equal(new Set(times).size, count);
      assert.equal(rows[0]!.split(',')[4], '-1', 'the earliest first');
      assert.equal(rows[1]!.split(',')[4], String(count - 1), 'then the earliest of those written later');
    });

    it('things.geojson: each Thing at its latest Location, a Thing without one with a null geometry', async () => {
      const response = await get(sta, '/download/things.geojson');
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers['content-type'], 'application/geo+json');
      assert.equal(response.headers['content-disposition'], `attachment; filename="${stem}-things.geojson"`);
      const body = response.json();
      assert.equal(body.type, 'FeatureCollection');
      const byId = new Map<number, Json>(body.features.map((feature: Json) => [feature.id, feature]));
      const station = byId.get(ids['station']!)!;
      assert.deepEqual(station.geometry, point(8.7, 50.2), 'the Location it was moved to');
      assert.equal(station.properties.name, 'Weather station');
      assert.deepEqual(station.properties.properties, { owner: 'city' });
      assert.equal(station.properties.locationName, 'New yard');
      assert.match(station.properties.locationTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const bare = byId.get(ids['bare']!)!;
      assert.equal(bare.geometry, null);
      assert.equal(bare.properties.locationId, null);
      const all = (await sta.request('GET', '/Things?$count=true&$top=1')).json()['@iot.count'];
      assert.equal(body.features.length, all);
    });

    it('validators from the data\'s last change: 304 while nothing changed; a new Observation moves the ETag', async () => {
      const first = await get(sta, '/download/observations.csv');
      const etag = String(first.headers.etag);
      assert.match(etag, /^W\/"\d+\.\d+"$/);
      const again = await get(sta, '/download/things.geojson', { 'if-none-match': etag });
      assert.equal(again.statusCode, 304);
      assert.equal(again.body, '');
      const added = await sta.request('POST', `/Datastreams(${ids['roof']})/Observations`, { phenomenonTime: '2020-01-05T00:00:00Z', result: 1 });
      assert.equal(added.statusCode, 201);
      const moved = await get(sta, '/download/observations.csv', { 'if-none-match': etag });
      assert.equal(moved.statusCode, 200);
      assert.notEqual(moved.headers.etag, etag);
      assert.match(moved.body, /2020-01-05T00:00:00\.000Z,,1,/);
    });

    it('authorization is the payload\'s; other paths and methods are refused', async () => {
      assert.equal((await get(closed, '/download/observations.csv')).statusCode, 401);
      const allowed = await closed.request('GET', '/download/things.geojson');
      assert.equal(allowed.statusCode, 200);
      assert.equal(allowed.headers['cache-control'], 'private, no-store');
      assert.equal(allowed.json().features.length, 1);
      assert.equal((await sta.request('DELETE', '/download/observations.csv')).statusCode, 405);
    });
  });
}
