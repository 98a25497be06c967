import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
import pg from 'pg';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { eventually } from '../faults/harness.js';
import { connect, mqttGateway, subscribeOne, topicOf } from './mqtt-helpers.js';
import { createSensorChain, feature } from './mqtt-fixtures.js';
import { pruneOutbox } from '../../src/data-api/mqtt/outbox.repo.js';
import { MIN_READ_INTERVAL_MS, NOTIFY_EVERY_MS, OUTBOX_KEEP_MS, OutboxWriter } from '../../src/data-api/mqtt/outbox.js';

/**
 * Render once, on PostgreSQL alone (contract "MQTT across replicas"): the committing process
 * renders a change into `mqtt_outbox` only when some process follows its route; every broker
 * reads the rows after its last (woken by a coalesced NOTIFY, else by its poll, a row whose insert
 * committed late included) and delivers them as written, without reading the entity again. The
 * delivery across two processes is in mqtt-cluster.test.ts.
 */
describe('MQTT outbox (postgres)', { skip: !process.env['TEST_DATABASE_URL'] && 'needs TEST_DATABASE_URL' }, () => {
  let t: TestApp;
  let dataset: PublishedDataset;
  let gateway: { app: { close(): Promise<unknown> }; mqttUrl: string };
  let chain: { thingId: number; datastreamId: number };
  let sql: pg.Client;
  let subscriber: MqttClient | null = null;
  /** Every message received, per topic, in order (the raw text). */
  const received = new Map<string, string[]>();
  const topic = (path: string) => topicOf(dataset.datasetId, dataset.slug, path);
  const messagesOn = (path: string) => received.get(topic(path)) ?? [];
  const outboxRows = async () => Number((await sql.query('select count(*) from mqtt_outbox where dataset_id = $1', [dataset.datasetId])).rows[0].count);
  /** A row as a writer leaves it, with a body of the test's choosing; nothing is notified. */
  const insertRow = (client: pg.Client | pg.PoolClient, id: number, body: string) => client.query(
    `insert into mqtt_outbox (dataset_id, slug, entity_set, entity_id, kind, body, link_ids) values ($1, $2, 'Things', $3, 'create', $4, '{}') returning id`,
    [dataset.datasetId, dataset.slug, id, body]);
  const metric = async (name: string) => {
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    assert.ok(line, `${name} in /metrics`);
    return Number(line.split(' ')[1]);
  };

  before(async () => {
    t = await buildTestApp('postgres');
    dataset = await publishStaDataset(t, { slug: 'outbox' });
    gateway = await mqttGateway(t);
    chain = await createSensorChain(dataset);
    sql = new pg.Client({ connectionString: t.ctx.databaseUrl! });
    await sql.connect();
  });
  after(async () => {
    await subscriber?.endAsync(true).catch(() => {});
    await sql?.end();
    await gateway?.app.close();
    await t?.close();
  });

  test('a write to a route nobody follows renders nothing; once a subscriber follows it, each change is rendered once and delivered', async () => {
    const post = (result: number) => dataset.request('POST', `/Datastreams(${chain.datastreamId})/Observations`, { result, FeatureOfInterest: feature(`f${result}`) });
    assert.equal((await post(1)).statusCode, 201);
    // Given time to be rendered, were it wrongly rendered.
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(await outboxRows(), 0, 'nothing rendered without a subscriber');

    subscriber = await connect(gateway.mqttUrl, t.adminToken);
    subscriber.on('message', (name, payload) => received.set(name, [...(received.get(name) ?? []), payload.toString('utf8')]));
    assert.equal(await subscribeOne(subscriber, topic('/Observations')), 0);
    assert.equal(await subscribeOne(subscriber, topic('/Things')), 0);
    // The broker noted its route, for the writers of every process.
    const prefix = `v1/datasets/${dataset.datasetId}/${dataset.slug}/`;
    await eventually('the route noted in mqtt_interest', 5_000, async () =>
      (Number((await sql.query('select count(*) from mqtt_interest where route_prefix = $1', [prefix])).rows[0].count) === 1 ? true : undefined));

    const created = await post(2);
    assert.equal(created.statusCode, 201);
    await eventually('the Observation over MQTT', 5_000, () => (messagesOn('/Observations').length > 0 ? true : undefined));
    const id = created.json()['@iot.id'];
    assert.deepEqual(messagesOn('/Observations'), [(await dataset.request('GET', `/Observations(${id})`)).body]);
    // One row for the Observation, one for its new FeatureOfInterest: each change rendered once.
    const rows = await sql.query('select entity_set, entity_id from mqtt_outbox where dataset_id = $1 order by id', [dataset.datasetId]);
    assert.deepEqual(rows.rows.map((row) => row.entity_set).sort(), ['FeaturesOfInterest', 'Observations']);
  });

  test('a broker delivers a row as written, without reading the entity, found by its poll when no NOTIFY came', async () => {
    // No entity 900001 exists: a broker that looked the entity up again would send nothing.
    const body = JSON.stringify({ '@iot.id': 900001, name: 'only in the outbox' });
    await insertRow(sql, 900001, body);
    await eventually('the row over MQTT', 5_000, () => (messagesOn('/Things').includes(body) ? true : undefined));
  });

  test('a row whose insert commits after a later row\'s is delivered too', async () => {
    const late = new pg.Client({ connectionString: t.ctx.databaseUrl! });
    await late.connect();
    try {
      await late.query('begin');
      const early = JSON.stringify({ '@iot.id': 900002, name: 'id taken first, committed last' });
      await insertRow(late, 900002, early);
      const next = JSON.stringify({ '@iot.id': 900003, name: 'id taken second, committed first' });
      await insertRow(sql, 900003, next);
      await sql.query(`select pg_notify('mqtt_outbox', 'rows')`);
      await eventually('the later row', 5_000, () => (messagesOn('/Things').includes(next) ? true : undefined));
      assert.ok(!messagesOn('/Things').includes(early));
      await late.query('commit');
      await eventually('the row committed late', 5_000, () => (messagesOn('/Things').includes(early) ? true : undefined));
      assert.equal(messagesOn('/Things').filter((text) => text === early).length, 1, 'delivered once');
    } finally {
      await late.end();
    }
  });

  test('a burst of writes from twelve clients reaches the subscriber whole, read at most once per 100 ms; the metrics count it', async () => {
    const writtenBefore = await metric('mqtt_outbox_written_total');
    const readsBefore = await metric('mqtt_outbox_reads_total');
    const started = Date.now();
    const things = Array.from({ length: 120 }, (_, n) => n);
    // Twelve writers at once: each commit is its own change, rendered as it comes.
    await Promise.all(Array.from({ length: 12 }, async (_, lane) => {
      for (const n of things.filter((m) => m % 12 === lane)) {
        assert.equal((await dataset.request('POST', '/Things', { name: `burst ${n}`, description: 'x' })).statusCode, 201);
      }
    }));
    await eventually('every Thing over MQTT', 10_000, () => (messagesOn('/Things').filter((text) => text.includes('"burst ')).length === 120 ? true : undefined));
    const elapsed = Date.now() - started;
    assert.equal((await metric('mqtt_outbox_written_total')) - writtenBefore, 120);
    // Wake-ups come up to every 10 ms; reads at most every 100 ms, and the poll's once a second.
    const reads = (await metric('mqtt_outbox_reads_total')) - readsBefore;
    assert.ok(reads <= Math.ceil(elapsed / MIN_READ_INTERVAL_MS) + Math.ceil(elapsed / 1000) + 1, `${reads} reads in ${elapsed} ms`);
    assert.ok((await metric('mqtt_outbox_read_rows_total')) >= 120);
    assert.ok((await metric('mqtt_outbox_notifies_total')) >= 1);
    assert.ok((await metric('mqtt_outbox_lag_seconds')) >= 0);
    // The cluster's gauge is MQTT_CLUSTER's alone.
    assert.equal(await metric('mqtt_cluster_delivery_lag_seconds'), 0);
  });

  test('a writer wakes the readers at most once per 10 ms, however fast it writes', async () => {
    let notifies = 0;
    const counting = { notified: () => {}, read: () => {}, written: () => {} };
    const writer = new OutboxWriter(() => t.ctx.db, async () => void notifies++, counting, { warn: () => {} });
    const change = (id: number) => ({ datasetId: dataset.datasetId, slug: 'elsewhere', entitySet: 'Things', id, kind: 'create' as const, text: '{}', linkIds: {} });
    const started = Date.now();
    // 200 inserts one after the other (a process's inserts take turns): about one per millisecond.
    await Promise.all(Array.from({ length: 200 }, (_, n) => writer.write([change(n)])));
    const elapsed = Date.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 2 * NOTIFY_EVERY_MS));
    writer.close();
    assert.ok(notifies >= 1, 'woken at least once');
    assert.ok(notifies <= Math.ceil(elapsed / NOTIFY_EVERY_MS) + 1, `${notifies} wake-ups for 200 inserts in ${elapsed} ms`);
  });

  test('rows older than the time kept are pruned, newer ones stay', async () => {
    const old = await sql.query(`insert into mqtt_outbox (created_at, dataset_id, slug, entity_set, entity_id, kind, body, link_ids)
      values (now() - interval '2 minutes', $1, $2, 'Things', 1, 'create', '{}', '{}') returning id`, [dataset.datasetId, dataset.slug]);
    const fresh = await insertRow(sql, 1, '{}');
    await pruneOutbox(t.ctx.db, OUTBOX_KEEP_MS);
    const left = await sql.query('select id from mqtt_outbox where id = any($1::bigint[])', [[old.rows[0].id, fresh.rows[0].id]]);
    assert.deepEqual(left.rows.map((row) => row.id), [fresh.rows[0].id]);
  });

  test('a route another process announces as followed is wanted at once, until a read of mqtt_interest issued after the announcement', async () => {
    const interest = t.ctx.staChanges.interest;
    const prefix = `v1/datasets/${dataset.datasetId}/announced/`;
    assert.equal(interest.wanted(prefix), false);
    // A read issued before the announcement cannot hold its row: it must not drop what was heard.
    const readBefore = interest.reload();
    interest.heardOf(prefix);
    assert.equal(interest.wanted(prefix), true, 'counted as soon as heard');
    await readBefore;
    assert.equal(interest.wanted(prefix), true, 'a read issued before the announcement keeps it');
    // No process has a row for it (a subscriber that left at once): a later read decides.
    await interest.reload();
    assert.equal(interest.wanted(prefix), false, 'a read issued after the announcement decides');
  });
});
