import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { AppError } from '../../src/errors.js';
import { databaseKinds } from '../helpers/test-app.js';
import { BASE, openStore, SCHEMA, type Store } from './store-harness.js';
import { location, stationWithObservations } from './fixtures.js';
import type { ExpandItem, QueryOptions } from '../../src/sta/query/ast.js';

/** The store's reads called below the parser: navigation, paging, selection, expansion. */

type Json = Record<string, any>;
const expand = (path: string, options: QueryOptions = {}): ExpandItem => ({ path: path.split('/'), options, pos: 0 });

for (const kind of databaseKinds(import.meta.url)) {
  describe(`SensorThings store reads (${kind})`, () => {
    let store: Store;
    let get: (path: string, options?: QueryOptions, query?: string) => Promise<Json>;
    let thingIds: number[];
    let streamId: number;
    before(async () => {
      store = await openStore(kind);
      get = async (path, options = {}, query = '') => (await store.call('GET', path, { options, query })).body as Json;
      thingIds = [];
      for (const [name, n] of [['Alpha', 5], ['Beta', 2], ['Gamma', 0]] as const) {
        thingIds.push(((await store.call('POST', '/Things', { body: stationWithObservations(n, name) })).body as Json)['@iot.id']);
      }
      streamId = (await get(`/Things(${thingIds[0]})/Datastreams`)).value[0]['@iot.id'];
    });
    after(() => store.close());

    test('navigation to collections, to single entities and through two steps', async () => {
      const observations = await get(`/Datastreams(${streamId})/Observations`);
      assert.equal(observations.value.length, 5);
      const firstObs = observations.value[0]['@iot.id'];
      assert.equal((await get(`/Observations(${firstObs})/Datastream/Thing`)).name, 'Alpha');
      assert.equal((await get(`/Things(${thingIds[0]})/Datastreams(${streamId})`))['@iot.id'], streamId);
      await assert.rejects(store.call('GET', `/Things(${thingIds[1]})/Datastreams(${streamId})`), (e: AppError) => e.status === 404);
      assert.equal((await get(`/Locations`)).value[0]['Things@iot.navigationLink'], `${BASE}/Locations(${(await get('/Locations')).value[0]['@iot.id']})/Things`);
    });

    test('a property, its $value and $ref', async () => {
      const response = await store.call('GET', `/Things(${thingIds[0]})/name`);
      assert.deepEqual(response.body, { name: 'Alpha' });
      const raw = await store.call('GET', `/Things(${thingIds[0]})/name/$value`);
      assert.equal(raw.body, 'Alpha');
      assert.match(raw.headers?.['content-type'] ?? '', /^text\/plain/);
      assert.deepEqual((await store.call('GET', `/Things(${thingIds[0]})/properties/$value`)).body, { owner: 'city' });
      assert.deepEqual(await get(`/Things(${thingIds[0]})/Locations/$ref`), { value: [{ '@iot.selfLink': `${BASE}/Locations(${(await get(`/Things(${thingIds[0]})/Locations`)).value[0]['@iot.id']})` }] });
      assert.deepEqual(await get(`/Things(${thingIds[0]})/$ref`), { '@iot.selfLink': `${BASE}/Things(${thingIds[0]})` });
      await assert.rejects(store.call('GET', `/Things(${thingIds[0]})/colour`), (e: AppError) => e.status === 404);
    });

    test('$top, $skip and $count page a collection; @iot.nextLink keeps the options with $skip advanced', async () => {
      const page = await get('/Things', { top: 2, count: true }, '$top=2&$count=true');
      assert.deepEqual(Object.keys(page), ['@iot.count', 'value', '@iot.nextLink']);
      assert.equal(page['@iot.count'], 3);
      assert.deepEqual(page.value.map((t: Json) => t.name), ['Alpha', 'Beta']);
      assert.equal(page['@iot.nextLink'], `${BASE}/Things?$top=2&$count=true&$skip=2`);
      const last = await get('/Things', { top: 2, skip: 2 }, '$skip=2&$top=2');
      assert.deepEqual(last.value.map((t: Json) => t.name), ['Gamma']);
      assert.equal(last['@iot.nextLink'], undefined);
      const beyond = await get('/Things', { skip: 10, count: true });
      assert.deepEqual(beyond, { '@iot.count': 3, value: [] });
    });

    test('$top above 1000 is served as 1000 with a next link; no $top means 100', async () => {
      const table = sql.id(SCHEMA, 'observations');
      const { rows } = await sql<{ max: number }>`select max(id) as max from ${table}`.execute(store.db);
      await sql`insert into ${sql.id(SCHEMA, 'observations')} (datastream_id, feature_of_interest_id, result, phenomenon_time_start, phenomenon_time_end)
        select ${streamId}, (select feature_of_interest_id from ${sql.id(SCHEMA, 'observations')} limit 1), to_jsonb(n), now(), now()
        from generate_series(1, 1100) as n`.execute(store.db);
      const capped = await get(`/Datastreams(${streamId})/Observations`, { top: 5000, select: ['id'] }, '$top=5000&$select=id');
      assert.equal(capped.value.length, 1000);
      assert.equal(capped['@iot.nextLink'], `${BASE}/Datastreams(${streamId})/Observations?$top=5000&$select=id&$skip=1000`);
      const byDefault = await get(`/Datastreams(${streamId})/Observations`, { select: ['result'] });
      assert.equal(byDefault.value.length, 100);
      assert.equal(byDefault['@iot.nextLink'], `${BASE}/Datastreams(${streamId})/Observations?$skip=100`);
      await sql`delete from ${table} where id > ${rows[0]!.max}`.execute(store.db);
    });

    test('$select shows only what it names, navigation links included; an unknown name is a 400', async () => {
      const selected = await get('/Things', { select: ['name', 'Datastreams'], top: 1 });
      assert.deepEqual(selected.value[0], { name: 'Alpha', 'Datastreams@iot.navigationLink': `${BASE}/Things(${thingIds[0]})/Datastreams` });
      const withId = await get(`/Things(${thingIds[1]})`, { select: ['@iot.id', 'description'] });
      assert.deepEqual(Object.keys(withId), ['@iot.id', '@iot.selfLink', 'description']);
      await assert.rejects(store.call('GET', '/Things', { options: { select: ['colour'] } }), (e: AppError) => e.status === 400 && /colour/.test(e.message));
    });

    test('$expand nests, each level with its own $top, $skip, $count, $select and next link', async () => {
      const things = await get('/Things', {
        expand: [
          expand('Datastreams', { expand: [expand('Observations', { top: 2, skip: 1, count: true, select: ['result'] })] }),
          expand('Locations', { select: ['name'] }),
        ],
      });
      const [alpha, beta, gamma] = things.value;
      const alphaObs = alpha.Datastreams[0];
      assert.equal(alphaObs['Observations@iot.count'], 5);
      assert.deepEqual(alphaObs.Observations, [{ result: 21 }, { result: 22 }]);
      assert.equal(alphaObs['Observations@iot.nextLink'], `${BASE}/Datastreams(${streamId})/Observations?$top=2&$skip=3&$count=true&$select=result`);
      assert.deepEqual(beta.Datastreams[0].Observations, [{ result: 21 }]);
      assert.equal(beta.Datastreams[0]['Observations@iot.count'], 2);
      assert.equal(beta.Datastreams[0]['Observations@iot.nextLink'], undefined);
      assert.deepEqual(gamma.Datastreams[0].Observations, []);
      assert.equal(gamma.Datastreams[0]['Observations@iot.count'], 0);
      assert.deepEqual(alpha.Locations, [{ name: 'Town hall' }]);

      const path = await get(`/Observations`, { top: 1, expand: [expand('Datastream/Thing', { select: ['name'] })] });
      assert.deepEqual(path.value[0].Datastream.Thing, { name: 'Alpha' });
      await assert.rejects(store.call('GET', '/Things', { options: { expand: [expand('Sensors')] } }), (e: AppError) => e.status === 400);
    });

    test('dataArray groups Observations by Datastream', async () => {
      const answer = await get(`/Datastreams(${streamId})/Observations`, { resultFormat: 'dataArray', select: ['id', 'result'], top: 3 });
      assert.equal(answer.value.length, 1);
      const [group] = answer.value;
      assert.equal(group['Datastream@iot.navigationLink'], `${BASE}/Datastreams(${streamId})`);
      assert.deepEqual(group.components, ['id', 'result']);
      assert.equal(group['dataArray@iot.count'], 3);
      assert.deepEqual(group.dataArray.map((row: unknown[]) => row[1]), [20, 21, 22]);
    });

    test('service root, HEAD and unknown ids', async () => {
      const root = await get('');
      assert.equal(root.value.length, 9, 'the eight entity sets of the core and MultiDatastreams');
      assert.deepEqual(root.value[0], { name: 'Things', url: `${BASE}/Things` });
      assert.ok(root.serverSettings.conformance.includes('http://www.opengis.net/spec/iot_sensing/1.1/req/request-data'));
      await assert.rejects(store.call('GET', '/Things(999999)'), (e: AppError) => e.status === 404);
      await assert.rejects(store.call('GET', '/Things(999999)/Datastreams'), (e: AppError) => e.status === 404);
      await assert.rejects(store.call('GET', '/Widgets'), (e: AppError) => e.status === 404);
      await store.call('POST', '/Locations', { body: location('Orphan') });
      assert.equal((await get('/Locations', { count: true }))['@iot.count'], 4);
      const head = await store.call('HEAD', '/Things');
      assert.equal(head.status, 200);
    });
  });
}
