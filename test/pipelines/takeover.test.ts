import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../helpers/ports.js';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import mqtt from 'mqtt';
import { sql } from 'kysely';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { pipelineDataset, releasedDataSource } from '../helpers/pipelines.js';
import { storageSchemaOf } from '../../src/modules/datasets/index.js';
import { waitFor } from '../helpers/wait.js';
import { mosquittoMissing, startMosquitto, type OwnBroker } from '../ingest/mosquitto.js';
import { REPOSITORY } from '../helpers/repository.js';
import { nodeArgumentsFor } from '../helpers/programs.js';

/**
 * Issue 17: two processes of the service share one PostgreSQL; the one running an MQTT pipeline
 * is killed with SIGKILL while 2,000 QoS 1 messages are being published. The other takes the
 * pipeline over (its lease went with the dead process's connection), its persistent session gets
 * what the broker kept, and every message is stored exactly once: what the dead process had
 * written but not acknowledged is redelivered and recognised. The broker is the test's own, with
 * room for the messages queued while no process is connected (Mosquitto keeps 1,000 by default).
 */

const MESSAGES = 2000;
const ROOT = REPOSITORY;

interface Worker { child: ChildProcess; running: string[]; startedAt: Map<string, number>; ready: Promise<void> }

function startWorker(databaseUrl: string): Worker {
  // tsx (where used) as a loader of this node process, not its CLI (which runs the script in a child: SIGKILL would miss it).
  const child = spawn(process.execPath, nodeArgumentsFor('test/pipelines/pipeline-process.ts'), {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, PIPELINE_RECONCILE_MS: '250' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const worker: Worker = { child, running: [], startedAt: new Map(), ready: Promise.resolve() };
  worker.ready = new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`pipeline process exited (${code}) before it was ready`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line === 'ready') resolve();
      else if (line.startsWith('running ')) {
        worker.running = JSON.parse(line.slice('running '.length));
        for (const id of worker.running) if (!worker.startedAt.has(id)) worker.startedAt.set(id, Date.now());
      }
    });
  });
  return worker;
}

describe('takeover after kill -9 (postgres)', { skip: !process.env['TEST_DATABASE_URL'] ? 'needs TEST_DATABASE_URL' : mosquittoMissing }, () => {
  let t: TestApp;
  let broker: OwnBroker;
  const workers: Worker[] = [];
  before(async () => {
    broker = await startMosquitto(await freePort(), { maxQueuedMessages: 10_000, maxInflightMessages: 100 });
    t = await buildTestApp('postgres');
    // This process only administers: the two worker processes run the pipelines.
    await t.ctx.pipelines.stop();
    workers.push(startWorker(t.ctx.databaseUrl!), startWorker(t.ctx.databaseUrl!));
    await Promise.all(workers.map((w) => w.ready));
  });
  after(async () => {
    for (const worker of workers) if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => (w.child.exitCode === null && w.child.signalCode === null ? new Promise((r) => w.child.once('exit', r)) : null)));
    await t?.close();
    await broker?.stop();
  });

  it('another process takes the pipeline over; every one of 2,000 QoS 1 messages is stored exactly once', async () => {
    const source = await releasedDataSource(t, 'MQTT', { urls: [broker.url], topics: ['load/+'], qos: 1 });
    const dataset = await pipelineDataset(t, {
      dataSourceIds: [source.id],
      mapping: { fields: {
        'Datastream.name': '"load"', result: 'n', phenomenonTime: 't',
        FeatureOfInterest: '{"name": "meter", "feature": {"type": "Point", "coordinates": [8.4, 49]}}',
      } },
    });
    await dataset.statusUntil((s) => s?.state === 'RUNNING', 'the pipeline to run');
    const holder = await waitFor(async () => workers.find((w) => w.running.includes(dataset.pipelineId)), { what: 'a worker to report the pipeline' });
    const other = workers.find((w) => w !== holder)!;

    const publisher = await mqtt.connectAsync(broker.url, { clientId: 'takeover-publisher' });
    const base = Date.parse('2026-06-01T00:00:00Z');
    const publish = (n: number) => publisher.publishAsync(`load/${n % 7}`, JSON.stringify({ n, t: new Date(base + n * 1000).toISOString() }), { qos: 1 });
    let killedAt = 0;
    for (let n = 0; n < MESSAGES; n++) {
      await publish(n);
      if (n === 700) {
        holder.child.kill('SIGKILL');
        killedAt = Date.now();
      }
    }
    await publisher.endAsync();

    await waitFor(async () => (other.running.includes(dataset.pipelineId) ? true : undefined), { what: 'the other process to take the pipeline over', timeoutMs: 20_000 });
    const takeoverMs = other.startedAt.get(dataset.pipelineId)! - killedAt;
    const table = sql.id(storageSchemaOf(dataset.datasetId), 'observations');
    const stored = async () => (await sql<{ n: number; distinct_times: number }>`select count(*)::int as n, count(distinct phenomenon_time_start)::int as distinct_times from ${table}`.execute(t.ctx.db)).rows[0]!;
    let last = { n: 0, distinct_times: 0 };
    await waitFor(async () => {
      last = await stored();
      return last.n >= MESSAGES ? true : undefined;
    }, { what: `${MESSAGES} observations`, timeoutMs: 60_000, last: () => JSON.stringify(last) });
    // A little longer: a redelivery arriving late must not add a row.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.deepEqual(await stored(), { n: MESSAGES, distinct_times: MESSAGES }, 'every message once');
    const results = await sql<{ n: number }>`select count(distinct (result #>> '{}'))::int as n from ${table}`.execute(t.ctx.db);
    assert.equal(results.rows[0]!.n, MESSAGES);
    t.app.log.info({ takeoverMs }, 'takeover');
    process.stdout.write(`# takeover after kill -9: the other process ran the pipeline ${takeoverMs} ms after the kill was sent (publishing went on meanwhile)\n`);
  });
});
