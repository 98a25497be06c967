import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { sql } from 'kysely';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { raceInDatabase } from '../helpers/race.js';
import { storageSchemaOf } from '../../src/modules/datasets/index.js';
import { createObservationWriter } from '../../src/sta/index.js';
import { compareDerived } from './derived-check.js';
import { copyChunks, copyIn } from '../../bench/limits/copy-in.js';
import { datastream, location, multiDatastream, point, thing } from './fixtures.js';

/**
 * A stream's phenomenonTime, resultTime and observedArea are stored in its row and kept by triggers
 * (src/sta/derived.ts). After every kind of write through the gateway (and the writers that do not
 * go through HTTP: pipelines, a bulk COPY) the stored values must equal the same properties computed
 * from scratch over the Observations, as the reads computed them before.
 */

type Json = Record<string, any>;

const at = (hour: number, minute = 0) => new Date(Date.UTC(2024, 0, 1, hour, minute)).toISOString();
const place = (name: string, x: number, y: number) => ({ name, description: 'observed here', encodingType: 'application/geo+json', feature: point(x, y) });

for (const kind of databaseKinds(import.meta.url)) {
  describe(`SensorThings stored stream properties (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    let schema: string;
    before(async () => {
      t = await buildTestApp(kind);
      sta = await publishStaDataset(t);
      schema = storageSchemaOf(sta.datasetId);
    });
    after(() => t.close());

    /** Stored equals computed for every stream of the dataset; the comparison's counts for the caller to check it proved something. */
    const check = async (what: string) => {
      const comparison = await compareDerived(t.ctx.db, schema, t.ctx.postgis);
      assert.deepEqual(comparison.mismatches, [], what);
      return comparison;
    };
    const ok = async (response: Promise<{ statusCode: number; body: string }>, status = 201) => {
      const answered = await response;
      assert.equal(answered.statusCode, status, answered.body);
      return JSON.parse(answered.body || 'null') as Json;
    };
    const idOf = (body: Json) => Number(body['@iot.id']);
    /** A new Thing (at a Location) with one Datastream; the Datastream's id. */
    const newStream = async (name: string) => {
      const created = await ok(sta.request('POST', '/Things', thing(name, { Locations: [location(name, point(2, 2))], Datastreams: [datastream(name)] })));
      return idOf((await ok(sta.request('GET', `/Things(${idOf(created)})/Datastreams`), 200)).value[0]);
    };
    const observe = (stream: number, body: Json) => ok(sta.request('POST', `/Datastreams(${stream})/Observations`, body));
    const streamJson = async (stream: number, set = 'Datastreams') => ok(sta.request('GET', `/${set}(${stream})`), 200);

    test('POST, PATCH, PUT and DELETE of Observations, and of their FeaturesOfInterest', async () => {
      const stream = await newStream('Single');
      await check('a new stream');
      assert.equal((await streamJson(stream)).phenomenonTime, null);

      const first = idOf(await observe(stream, { result: 1, phenomenonTime: at(5), resultTime: at(6), FeatureOfInterest: place('A', 1, 1) }));
      await check('first Observation');
      const read = await streamJson(stream);
      assert.equal(read.phenomenonTime, at(5));
      assert.equal(read.resultTime, at(6));
      const featureA = idOf(await ok(sta.request('GET', `/Observations(${first})/FeatureOfInterest`), 200));

      const second = idOf(await observe(stream, { result: 2, phenomenonTime: at(2), FeatureOfInterest: place('B', 3, 1) }));
      const third = idOf(await observe(stream, { result: 3, phenomenonTime: `${at(8)}/${at(9)}`, resultTime: at(1), FeatureOfInterest: { '@iot.id': featureA } }));
      const comparison = await check('a new earliest time, an interval, a known feature');
      assert.equal((await streamJson(stream)).phenomenonTime, `${at(2)}/${at(9)}`);
      assert.equal((await streamJson(stream)).resultTime, `${at(1)}/${at(6)}`);
      if (t.ctx.postgis) assert.deepEqual((await streamJson(stream)).observedArea.type, 'LineString');
      else assert.equal((await streamJson(stream)).observedArea, null);
      assert.ok(comparison.observed > 0);

      await ok(sta.request('PATCH', `/Observations(${second})`, { phenomenonTime: at(10) }), 200);
      await check('PATCH moves the earliest Observation to the latest');
      assert.equal((await streamJson(stream)).phenomenonTime, `${at(5)}/${at(10)}`);
      const featureC = idOf(await ok(sta.request('POST', '/FeaturesOfInterest', place('C', 1, 4))));
      await ok(sta.request('PATCH', `/Observations(${first})`, { FeatureOfInterest: { '@iot.id': featureC } }), 200);
      await check('PATCH changes the FeatureOfInterest');
      await ok(sta.request('PUT', `/Observations(${third})`, { result: 4, phenomenonTime: at(0), FeatureOfInterest: { '@iot.id': featureC } }), 200);
      await check('PUT clears the resultTime and sets an earlier time');
      assert.equal((await streamJson(stream)).phenomenonTime, `${at(0)}/${at(10)}`);
      await ok(sta.request('DELETE', `/Observations(${third})`), 204);
      await check('DELETE of the earliest Observation');
      assert.equal((await streamJson(stream)).phenomenonTime, `${at(5)}/${at(10)}`);

      // The FeatureOfInterest's geometry makes the area: changing it recomputes the streams observing it.
      await ok(sta.request('PATCH', `/FeaturesOfInterest(${featureC})`, { feature: point(6, 6) }), 200);
      const moved = await check('PATCH of a FeatureOfInterest\'s feature');
      if (t.ctx.postgis) assert.ok(moved.withArea > 0);
      // A feature PostGIS cannot read (a GeoJSON Feature wraps the point) fails neither the write nor the read.
      await observe(stream, { result: 5, phenomenonTime: at(11), FeatureOfInterest: { ...place('Wrapped', 7, 7), feature: { type: 'Feature', properties: {}, geometry: point(7, 7) } } });
      await check('a GeoJSON Feature as the feature');
      const odd = idOf(await observe(stream, { result: 6, phenomenonTime: at(11), FeatureOfInterest: { ...place('Odd', 0, 0), feature: { type: 'Blob' } } }));
      await check('a feature that is no geometry');
      await ok(sta.request('DELETE', `/Observations(${odd})`), 204);
      // Deleting a FeatureOfInterest takes its Observations along.
      await ok(sta.request('DELETE', `/FeaturesOfInterest(${featureC})`), 204);
      await check('DELETE of a FeatureOfInterest cascades to its Observations');
      assert.equal((await streamJson(stream)).phenomenonTime, `${at(10)}/${at(11)}`);

      // Still derived: a write that sets them is refused as before, and nothing changes.
      const refused = await sta.request('PATCH', `/Datastreams(${stream})`, { phenomenonTime: `${at(0)}/${at(1)}` });
      assert.equal(refused.statusCode, 400, refused.body);
      assert.equal((await streamJson(stream)).phenomenonTime, `${at(10)}/${at(11)}`);
    });

    test('deep insert, CreateObservations, $batch and MultiDatastreams', async () => {
      const deep = await ok(sta.request('POST', '/Things', thing('Deep', {
        Locations: [location('Deep', point(4, 4))],
        Datastreams: [datastream('Deep stream', { Observations: [
          { result: 1, phenomenonTime: at(3) },
          { result: 2, phenomenonTime: at(4), resultTime: at(4, 30), FeatureOfInterest: place('Deep field', 5, 4) },
        ] })],
        MultiDatastreams: [multiDatastream('Deep wind', { Observations: [{ result: [1, 2], phenomenonTime: at(7), FeatureOfInterest: place('Deep mast', 4, 6) }] })],
      })));
      await check('deep insert');
      const thingId = idOf(deep);
      const streamA = idOf((await ok(sta.request('GET', `/Things(${thingId})/Datastreams`), 200)).value[0]);
      const multi = idOf((await ok(sta.request('GET', `/Things(${thingId})/MultiDatastreams`), 200)).value[0]);
      assert.equal((await streamJson(multi, 'MultiDatastreams')).phenomenonTime, at(7));
      const streamB = await newStream('Bulk');

      const group = (key: string, id: number, rows: unknown[][]) =>
        ({ [key]: { '@iot.id': id }, components: ['phenomenonTime', 'result', 'resultTime'], 'dataArray@iot.count': rows.length, dataArray: rows });
      const links = await ok(sta.request('POST', '/CreateObservations', [
        group('Datastream', streamB, [[at(1), 1, null], [at(12), 2, at(13)]]),
        group('Datastream', streamA, [[at(0), 3, null]]),
        group('MultiDatastream', multi, [[at(8), [3, 4], at(9)]]),
      ]));
      assert.equal((links as unknown as string[]).length, 4);
      await check('CreateObservations over three streams in one statement');

      const batch = await ok(sta.request('POST', '/$batch', { requests: [
        { id: 'a', atomicityGroup: 'g', method: 'post', url: `Datastreams(${streamA})/Observations`, body: { result: 5, phenomenonTime: at(20), FeatureOfInterest: place('Batch field', 9, 9) } },
        { id: 'b', atomicityGroup: 'g', method: 'post', url: `Datastreams(${streamB})/Observations`, body: { result: 6, phenomenonTime: at(0, 30) } },
        { id: 'c', atomicityGroup: 'g', method: 'post', url: `MultiDatastreams(${multi})/Observations`, body: { result: [5, 6], phenomenonTime: at(21) } },
      ] }), 200);
      assert.deepEqual(batch['responses'].map((r: Json) => r['status']), [201, 201, 201]);
      await check('$batch atomicity group');
      // A rolled-back group leaves nothing behind.
      const failed = await ok(sta.request('POST', '/$batch', { requests: [
        { id: 'x', atomicityGroup: 'h', method: 'post', url: `Datastreams(${streamB})/Observations`, body: { result: 7, phenomenonTime: '1999-01-01T00:00:00Z' } },
        { id: 'y', atomicityGroup: 'h', method: 'post', url: 'Datastreams(987654)/Observations', body: { result: 8 } },
      ] }), 200);
      assert.ok(failed['responses'].some((r: Json) => r['status'] >= 400));
      await check('rolled-back $batch');
      assert.equal((await streamJson(streamB)).phenomenonTime, `${at(0, 30)}/${at(12)}`);

      // An Observation moved from a Datastream to the MultiDatastream leaves the one and joins the other.
      const movable = idOf((await ok(sta.request('GET', `/Datastreams(${streamB})/Observations?$orderby=phenomenonTime desc&$top=1`), 200)).value[0]);
      await ok(sta.request('PATCH', `/Observations(${movable})`, { result: [0, 0], MultiDatastream: { '@iot.id': multi } }), 200);
      await check('an Observation moved between streams');
      assert.equal((await streamJson(multi, 'MultiDatastreams')).phenomenonTime, `${at(7)}/${at(21)}`);

      // $filter and $orderby on the stored properties answer as the computed ones did.
      const names = async (query: string) => (await ok(sta.request('GET', `/Datastreams?$select=name&${query}`), 200)).value.map((s: Json) => s.name);
      const both = `$filter=${encodeURIComponent("name eq 'Bulk' or name eq 'Deep stream'")}`;
      assert.deepEqual(await names(`${both}&$orderby=phenomenonTime desc`), ['Bulk', 'Deep stream']);
      assert.deepEqual(await names(`${both}&$orderby=phenomenonTime asc`), ['Deep stream', 'Bulk']);
      assert.deepEqual(await names(`$filter=${encodeURIComponent("resultTime eq null and (name eq 'Bulk' or name eq 'Deep stream')")}`), ['Bulk']);

      // Deleting a stream takes its Observations along; the other streams keep their values.
      await ok(sta.request('DELETE', `/Datastreams(${streamA})`), 204);
      await check('a Datastream delete cascading to its Observations');
    });

    test('the pipeline writer, a bulk COPY, and a Thing delete cascading through its streams', async () => {
      const writer = createObservationWriter({ postgis: t.ctx.postgis });
      const records = [0, 1, 2].map((minute) => ({
        value: { result: minute, phenomenonTime: at(15, minute), FeatureOfInterest: place(`Pipe ${minute}`, minute, 0),
          Datastream: { name: 'Piped', Thing: { name: 'Pipe station' }, Sensor: { name: 'Pipe sensor' }, ObservedProperty: { name: 'Pipe heat' } } },
        receivedAt: new Date(at(16)),
      }));
      const result = await t.ctx.db.transaction().execute((trx) => writer.write(trx, schema, records));
      result.committed();
      assert.ok(result.outcomes.every((outcome) => outcome.outcome === 'written'), JSON.stringify(result.outcomes));
      await check('pipeline writes');
      const piped = (await ok(sta.request('GET', `/Datastreams?$filter=name eq 'Piped'`), 200)).value[0];
      assert.equal(piped.phenomenonTime, `${at(15, 0)}/${at(15, 2)}`);

      // A bulk load straight into the table, as an operator's COPY would.
      const stream = await newStream('Copied');
      const { rows: [feature] } = await sql<{ id: string }>`select id from ${sql.id(schema, 'features_of_interest')} order by id limit 1`.execute(t.ctx.db);
      const lines = Array.from({ length: 50 }, (_, i) => `${stream}\t${feature!.id}\t${at(30, i)}\t${at(30, i)}\t${i}`).join('\n');
      const columns = '(datastream_id, feature_of_interest_id, phenomenon_time_start, phenomenon_time_end, result)';
      if (t.ctx.databaseUrl) {
        const client = new pg.Client({ connectionString: t.ctx.databaseUrl });
        await client.connect();
        try {
          assert.equal(await copyIn(client, `${pg.escapeIdentifier(schema)}.observations ${columns}`, copyChunks(lines.split('\n').map((line) => `${line}\n`))), 50);
        } finally {
          await client.end();
        }
      } else {
        // PGlite has no COPY from a client stream; one multi-row insert is the same statement-level write.
        const values = lines.split('\n').map((line) => { const [d, f, s, e, r] = line.split('\t'); return sql`(${Number(d)}, ${Number(f)}, ${s}::timestamptz, ${e}::timestamptz, ${r}::jsonb)`; });
        await sql`insert into ${sql.id(schema, 'observations')} ${sql.raw(columns)} values ${sql.join(values)}`.execute(t.ctx.db);
      }
      await check('bulk load');
      assert.equal((await streamJson(stream)).phenomenonTime, `${at(30, 0)}/${at(30, 49)}`);

      await ok(sta.request('DELETE', `/Things(${idOf((await ok(sta.request('GET', `/Datastreams(${stream})/Thing`), 200)))})`), 204);
      await check('a Thing delete cascading through its Datastreams');
    });

    test('two $batch groups writing the same two streams in opposite orders both commit (a deadlock is run again)', async () => {
      const [first, second] = [await newStream('Batch order A'), await newStream('Batch order B')];
      const group = (streams: number[], round: number) => ({
        requests: streams.map((stream, i) => ({
          id: `o${i}`, atomicityGroup: 'g', method: 'post', url: `Datastreams(${stream})/Observations`,
          body: { result: round * 10 + i, phenomenonTime: at(30 + round, i) },
        })),
      });
      for (let round = 0; round < 2; round++) {
        // Each group locks its first stream, then asks for the other's: PostgreSQL aborts one after
        // its deadlock timeout, and that group runs again instead of answering 500.
        const answers = await raceInDatabase(t, [schema, 'datastreams'], [
          () => sta.request('POST', '/$batch', group([first, second], round)),
          () => sta.request('POST', '/$batch', group([second, first], round)),
        ], { atLeast: 2 });
        for (const answer of answers) {
          assert.equal(answer.statusCode, 200, answer.body);
          assert.deepEqual(answer.json().responses.map((r: Json) => r.status), [201, 201]);
        }
      }
      const counts = await Promise.all([first, second].map(async (stream) => (await ok(sta.request('GET', `/Datastreams(${stream})/Observations?$count=true&$top=0`), 200))['@iot.count']));
      assert.deepEqual(counts, [4, 4]);
      await check('after the crossed batches');
    });

    test('two statements of one transaction adding the same new feature to a stream recompute its area', async () => {
      const stream = await newStream('Twice new');
      const feature = idOf(await ok(sta.request('POST', '/FeaturesOfInterest', place('Twice new', 7, 7))));
      await observe(stream, { result: 0, phenomenonTime: at(50) });
      // Each statement's rows see the other's as rows of the same feature outside their own ids: only
      // the transaction's whole range tells that the feature is new to the stream.
      const batch = await sta.request('POST', '/$batch', {
        requests: [0, 1].map((i) => ({
          id: `o${i}`, atomicityGroup: 'g', method: 'post', url: `Datastreams(${stream})/Observations`,
          body: { result: i + 1, phenomenonTime: at(51 + i), FeatureOfInterest: { '@iot.id': feature } },
        })),
      });
      assert.equal(batch.statusCode, 200, batch.body);
      assert.deepEqual(batch.json().responses.map((r: Json) => r.status), [201, 201]);
      const comparison = await check('after one transaction added a feature twice');
      if (t.ctx.postgis) assert.match(JSON.stringify((await streamJson(stream)).observedArea), /7/);
      assert.ok(comparison.observed >= 1);
    });

    // A second connection holds the delete open: PostgreSQL only (PGlite has one).
    if (kind === 'postgres') test('an insert committing while a delete holds its stream waits for it, then widens what the delete left', async () => {
      const stream = await newStream('Commit order');
      const earliest = idOf(await observe(stream, { result: 0, phenomenonTime: at(40) }));
      await observe(stream, { result: 1, phenomenonTime: at(48) });
      // The delete's trigger locks the stream and narrows its bounds to what it sees; left open.
      const other = new pg.Client({ connectionString: t.ctx.databaseUrl! });
      await other.connect();
      try {
        await other.query('begin');
        await other.query(`delete from ${sql.id(schema, 'observations').compile(t.ctx.db).sql} where id = $1`, [earliest]);
        // Inside the bounds the delete began from, outside those it leaves: an insert that did not
        // wait for the delete would see nothing to widen.
        const inserting = observe(stream, { result: 2, phenomenonTime: at(44) });
        await new Promise((resolve) => setTimeout(resolve, 300));
        await other.query('commit');
        await inserting;
      } finally {
        await other.end();
      }
      assert.equal((await streamJson(stream)).phenomenonTime, `${at(44)}/${at(48)}`);
      await check('after an insert committed across a delete');
    });

    test('concurrent inserts, deletes and moves on the same streams lose no bound and never deadlock', async () => {
      const streamA = await newStream('Race A');
      const streamB = await newStream('Race B');
      const fields = await Promise.all([0, 1, 2, 3].map(async (i) => idOf(await ok(sta.request('POST', '/FeaturesOfInterest', place(`Race ${i}`, i, i % 2))))));
      let hour = 100;
      const seed = async (stream: number) => idOf(await observe(stream, { result: 0, phenomenonTime: at(hour++), resultTime: at(hour), FeatureOfInterest: { '@iot.id': fields[hour % 4] } }));
      const statuses: number[] = [];
      for (let round = 0; round < 12; round++) {
        // Each round deletes the current earliest and latest of A (their bounds must be recomputed)
        // while others widen both streams, in one statement over both streams, and move one over.
        const earliestA = idOf((await ok(sta.request('GET', `/Datastreams(${streamA})/Observations?$orderby=phenomenonTime asc&$top=1`), 200)).value[0] ?? { '@iot.id': await seed(streamA) });
        const latestA = await seed(streamA);
        const moving = await seed(streamB);
        const [early, late] = [at(hour - 200 - round), at(hour + 50)];
        const bulk = [streamB, streamA].map((stream, i) => ({
          Datastream: { '@iot.id': stream }, components: ['phenomenonTime', 'result', 'FeatureOfInterest/id'], 'dataArray@iot.count': 1,
          dataArray: [[i === 0 ? late : early, round, fields[(round + i) % 4]]],
        }));
        const responses = await raceInDatabase(t, [schema, 'datastreams'], [
          () => sta.request('DELETE', `/Observations(${earliestA})`),
          () => sta.request('DELETE', `/Observations(${latestA})`),
          () => sta.request('POST', '/CreateObservations', bulk),
          () => sta.request('POST', `/Datastreams(${streamB})/Observations`, { result: 1, phenomenonTime: early, FeatureOfInterest: { '@iot.id': fields[round % 4] } }),
          () => sta.request('PATCH', `/Observations(${moving})`, { Datastream: { '@iot.id': streamA }, phenomenonTime: at(hour + round) }),
        // The pool has five connections and the gateway's route poll may hold one.
        ], { atLeast: 4 });
        statuses.push(...responses.map((response) => response.statusCode));
        await check(`race round ${round}`);
      }
      assert.deepEqual(statuses.filter((status) => status >= 500), []);
      const comparison = await check('after the races');
      assert.ok(comparison.observed >= 2);
      if (t.ctx.postgis) assert.ok(comparison.withArea >= 2);
    });
  });
}
