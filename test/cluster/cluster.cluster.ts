import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import mqtt, { type MqttClient } from 'mqtt';
import pg from 'pg';
import { storageSchemaOf } from '../../src/modules/datasets/index.js';
import { request } from '../faults/harness.js';
import { MQTT_BROKER, missing, requireMosquitto } from '../helpers/requirements.js';
import { waitFor } from '../helpers/wait.js';
import { startCluster, type Cluster } from './harness.js';
import { pipelineLeaseHolder } from './lease-holder.js';
import { failed as failedOutcome, Load, type LoopSpec, type Outcome } from './load.js';
import { locateNginx } from './nginx.js';
import { Platform, unique } from './platform.js';
import { subscribe, type Subscriber } from './subscribers.js';
import { startTestRedis, type TestRedis } from '../helpers/redis-server.js';

/**
 * Issue 18, item 3: three replicas of the compiled service on one PostgreSQL behind Debian's
 * nginx, tried as an operator would: set up through nginx, then under a steady load of writes and
 * reads one replica (the one running the pipeline) is killed with SIGKILL and started again, then
 * all three are restarted one at a time with SIGTERM. Run by `npm run test:cluster` (not by
 * `npm test`: it takes the machine for about a minute).
 */

const nginxBinary = locateNginx();
const serverUrl = process.env['TEST_DATABASE_URL'];
const skip = missing(
  nginxBinary ? null : 'nginx is not installed (Debian packages: nginx)',
  serverUrl ? null : 'needs TEST_DATABASE_URL (the cluster creates its own database on that server)',
  await requireMosquitto(),
);

/** Bounds the figures must keep; the measured ones are printed. */
const KILL_FAILURE_SPAN_MS = 1_000;
const LEASE_MOVE_MS = 15_000;

const MAPPING = { fields: {
  'Datastream.name': '$substringAfter($topic, "/air/") & "-pm10"', result: 'n', phenomenonTime: 't',
  FeatureOfInterest: '{"name": "meter", "feature": {"type": "Point", "coordinates": [8.4, 49]}}',
} };

// Node's runner shows a test file's stdout as `# ` diagnostics in its TAP output.
const report = (line: string) => process.stdout.write(`${line}\n`);

// Twice: MQTT across replicas on PostgreSQL alone (the default), then on a Redis cluster (MQTT_CLUSTER,
// on a Redis of the test's own); CLUSTER_MQTT=redis (or postgres) runs one of them.
const transports = (process.env['CLUSTER_MQTT'] ?? 'postgres,redis').split(',') as Array<'postgres' | 'redis'>;
for (const transport of transports) describe(`three replicas behind nginx (MQTT on ${transport === 'postgres' ? 'PostgreSQL alone' : 'Redis'})`, { skip }, () => {
  let redis: TestRedis | null = null;
  let cluster: Cluster;
  let platform: Platform;
  let db: pg.Pool;
  const topicPrefix = `cluster-${transport}-${Date.now().toString(36)}`;
  let datasetId = '';
  let base = '';
  let pipelineId = '';
  let datastreamId = 0;
  let featureId = 0;
  let publisher: MqttClient;
  let subscribers: Subscriber[] = [];
  let failed = false;

  before(async () => {
    redis = transport === 'redis' ? await startTestRedis() : null;
    cluster = await startCluster({ replicas: 3, serverUrl: serverUrl!, nginxBinary: nginxBinary!, env: { PIPELINE_RECONCILE_MS: '250', ...(redis ? { MQTT_CLUSTER: redis.url } : {}) } });
    db = new pg.Pool({ connectionString: cluster.database.url, max: 2 });
    publisher = await mqtt.connectAsync(MQTT_BROKER.url, { protocolVersion: 4 });
  });
  after(async () => {
    if (failed) process.stderr.write(`${cluster?.logTails(25)}\n`);
    // Subscribers left by a failed step would reconnect for ever and keep this process alive.
    for (const subscriber of subscribers) if (!subscriber.client.disconnecting && !subscriber.client.disconnected) subscriber.client.end(true);
    await publisher?.endAsync();
    await db?.end();
    await cluster?.close();
    await redis?.kill();
  });
  /** Runs a step; on failure the replicas' and nginx's log tails are printed at the end. */
  const step = (name: string, body: () => Promise<void>) => it(name, async () => {
    try {
      await body();
    } catch (error) {
      failed = true;
      throw error;
    }
  });

  const publish = (station: string, n: number) => publisher.publishAsync(`${topicPrefix}/air/${station}`, JSON.stringify({ n, t: new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString() }), { qos: 1 });

  /** Observations of the pipeline's Datastream for `station`: how many, how many distinct. */
  async function pipelineRows(station: string): Promise<{ n: number; distinct: number }> {
    const schema = storageSchemaOf(datasetId);
    const { rows } = await db.query<{ n: number; distinct: number }>(`
      select count(*)::int as n, count(distinct o.result #>> '{}')::int as distinct
        from "${schema}".observations o join "${schema}".datastreams d on d.id = o.datastream_id where d.name = $1`, [`${station}-pm10`]);
    return rows[0]!;
  }

  /** The Observation results stored in the HTTP Datastream (the load's markers). */
  async function storedMarkers(): Promise<number[]> {
    const { rows } = await db.query<{ r: string }>(`select result #>> '{}' as r from "${storageSchemaOf(datasetId)}".observations where datastream_id = $1`, [datastreamId]);
    return rows.map((row) => Number(row.r));
  }

  function loops(phase: number, name: string): LoopSpec[] {
    const observations = (loop: number): LoopSpec => ({
      name: `observations-${loop}`,
      next: (n) => {
        const marker = phase * 10_000_000 + loop * 1_000_000 + n;
        return {
          method: 'POST', url: `${cluster.dataUrl}${base}/Datastreams(${datastreamId})/Observations`, marker,
          body: { result: marker, phenomenonTime: new Date(Date.UTC(2026, 1, 1) + marker).toISOString(), FeatureOfInterest: { '@iot.id': featureId } },
        };
      },
    });
    return [
      observations(0), observations(1),
      { name: 'groups', next: (n) => ({ method: 'POST', url: `${cluster.apiUrl}/v1/groups`, marker: `${name}-${n}`, body: { name: `${name}-${n}`, description: 'written under load' } }) },
      { name: 'reads', next: (n) => ({ method: 'GET', url: n % 2 ? `${cluster.apiUrl}/v1/groups?size=5` : `${cluster.dataUrl}${base}/Observations?$top=5` }) },
    ];
  }

  /** Every write answered 2xx is stored, once; nothing is stored that was not sent. Answers what failed writes left. */
  async function verifyWrites(load: Load, name: string): Promise<{ unknownStored: number; unknown: number }> {
    const ok = (outcome: Outcome) => outcome.status !== null && outcome.status >= 200 && outcome.status < 300;
    const unknown = load.outcomes.filter((o) => o.method === 'POST' && !ok(o));
    assert.ok(unknown.every((o) => o.status === null || o.status >= 500), `a write was refused: ${JSON.stringify(unknown.find((o) => o.status !== null && o.status < 500))}`);

    const observations = load.outcomes.filter((o) => o.loop.startsWith('observations-'));
    const markers = await storedMarkers();
    const stored = new Set(markers);
    assert.equal(stored.size, markers.length, 'no Observation stored twice');
    const missingObservations = observations.filter((o) => ok(o) && !stored.has(o.marker as number));
    assert.deepEqual(missingObservations, [], 'every Observation answered 201 is stored');

    const groups = load.outcomes.filter((o) => o.loop === 'groups');
    const page = await platform.api('GET', `/v1/groups?name=${encodeURIComponent(`${name}-`)}&size=1000`);
    assert.ok(page.totalElements <= 1000, 'one page holds every group of the phase');
    const storedGroups = new Map<string, string>(page.content.map((group: { id: string; name: string }) => [group.name, group.id]));
    const lostGroups = groups.filter((o) => ok(o) && storedGroups.get(o.marker as string) !== o.id);
    assert.deepEqual(lostGroups, [], 'every group answered 201 is stored, under the id answered');
    const sent = new Set(groups.map((o) => o.marker));
    assert.ok([...storedGroups.keys()].every((groupName) => sent.has(groupName)), 'no group stored that was not sent');

    const unknownStored = unknown.filter((o) => (o.loop === 'groups' ? storedGroups.has(o.marker as string) : stored.has(o.marker as number))).length;
    return { unknownStored, unknown: unknown.length };
  }

  step('through nginx: a token, the management API, a released dataset, Observations and a running MQTT pipeline', async () => {
    platform = new Platform(cluster.apiUrl, cluster.dataUrl, await cluster.token());
    const me = await platform.api('GET', '/v1/users/me');
    assert.equal(me.email, 'admin@example.com');
    const user = await platform.api('POST', '/v1/users', { email: `${unique('ada').replace(' ', '-')}@example.com`, firstName: 'Ada', lastName: 'Lovelace' });
    const group = await platform.api('POST', '/v1/groups', { name: unique('Planners'), description: 'cluster test', memberIds: [user.id] });
    assert.ok(JSON.stringify(await platform.api('GET', `/v1/groups/${group.id}`)).includes(user.id), 'the group names its member');

    const source = await platform.mqttSource(MQTT_BROKER.url, [`${topicPrefix}/air/+`]);
    datasetId = await platform.draftDataset();
    pipelineId = await platform.addPipeline(datasetId, source.id, MAPPING);
    await platform.release(datasetId);
    const released = await platform.settled(datasetId);
    assert.equal(released.dataSetStatus, 'AVAILABLE');
    base = `/v1/datasets/${datasetId}/sensors`;
    await platform.routed(base);

    datastreamId = await platform.datastream(base);
    const first = await platform.data('POST', base, `/Datastreams(${datastreamId})/Observations`, {
      result: -1, FeatureOfInterest: { name: 'roof', description: 'the roof', encodingType: 'application/geo+json', feature: { type: 'Point', coordinates: [7.1, 50.7] } },
    });
    featureId = (await platform.data('GET', base, `/Observations(${first['@iot.id']})/FeatureOfInterest`))['@iot.id'];

    await waitFor(async () => ((await platform.pipelineStatus(datasetId, pipelineId))?.state === 'RUNNING' ? true : undefined),
      { what: 'the pipeline to run', timeoutMs: 20_000, intervalMs: 100 });
    for (let n = 0; n < 5; n++) await publish('setup', n);
    await waitFor(async () => ((await pipelineRows('setup')).n === 5 ? true : undefined), { what: 'five pipeline Observations', timeoutMs: 15_000, intervalMs: 100 });
  });

  step('kill -9 of the replica running the pipeline, restarted after 1.5 s, under load: 2xx writes kept, 5xx brief, sagas once, MQTT exactly once, subscribers back', async () => {
    const pids = () => cluster.replicas.map((r) => cluster.pidOf(r.index)).filter((pid): pid is number => pid !== null);
    const holderPid = await waitFor(() => pipelineLeaseHolder(db, cluster.database.name, pids()), { what: 'the pipeline lease holder', timeoutMs: 10_000, intervalMs: 100 });
    const victim = cluster.replicas.findIndex((r) => cluster.pidOf(r.index) === holderPid);

    // Six WebSocket subscribers in a row: nginx's round robin puts two on each replica.
    const topic = `v1/datasets/${datasetId}/sensors/Datastreams(${datastreamId})/Observations`;
    for (let i = 0; i < 6; i++) subscribers.push(await subscribe(cluster.mqttUrl, platform.token, topic));
    // Datasets whose RELEASE saga runs while the replica dies (the first), or just after (the others).
    const drafts = await Promise.all([0, 1, 2].map(() => platform.draftDataset()));

    const load = new Load(platform.token);
    const loadStartedAt = Date.now();
    let published = 0;
    let publishing = true;
    let publishingDone: Promise<void> = Promise.resolve();
    let killedAt = 0;
    let leaseMovedMs = 0;
    let newHolder = 0;
    let backAt = 0;
    try {
      load.start(loops(1, 'kill'));
      publishingDone = (async () => {
        while (publishing) {
          await publish('kill', published++);
          await sleep(20);
        }
      })();
      await sleep(2_000);

      // The first release goes to the victim itself, on its own port: its saga worker starts the
      // saga at once (it kicks itself after an enqueue), and the kill follows the 202 right away.
      const viaVictim = await request(`http://127.0.0.1:${cluster.replicas[victim]!.ports.api}/v1/datasets/${drafts[0]}/release`, { method: 'POST', token: platform.token });
      assert.equal(viaVictim.status, 202, JSON.stringify(viaVictim.body));
      killedAt = Date.now();
      const killed = await cluster.stop(victim, 'SIGKILL');
      assert.equal(killed.signal, 'SIGKILL');
      await Promise.all(drafts.slice(1).map((id) => platform.release(id)));
      newHolder = await waitFor(async () => {
        const holder = await pipelineLeaseHolder(db, cluster.database.name, pids());
        return holder !== null && holder !== holderPid ? holder : undefined;
      }, { what: 'another replica to take the pipeline lease', timeoutMs: LEASE_MOVE_MS, intervalMs: 100 });
      leaseMovedMs = Date.now() - killedAt;
      await sleep(Math.max(0, 1_500 - (Date.now() - killedAt)));
      await cluster.start(victim);
      backAt = Date.now();
      await sleep(3_000);
    } finally {
      // Also after a failure: no load nor publisher left running into the next step.
      publishing = false;
      await publishingDone.catch(() => undefined);
      await load.stop();
    }

    const figures = load.figures();
    const failuresAfterKill = figures.failuresTo === null ? '' : `, the last ${figures.failuresTo - killedAt} ms after the kill`;
    report(`kill -9: ${figures.requests} requests (${figures.writes} writes) in ${((Date.now() - loadStartedAt) / 1000).toFixed(1)} s; failed ${figures.serverErrors} (5xx) + ${figures.connectionErrors} (no answer) ${JSON.stringify(figures.failureStatuses)}, answered within ${figures.failureSpanMs} ms${failuresAfterKill}; lease moved after ${leaseMovedMs} ms; replica back (ready) ${backAt - killedAt} ms after the kill`);
    assert.equal(figures.connectionErrors, 0, 'nginx answers every client');
    // Only requests in flight on the victim when it died may fail, and they fail as it dies.
    if (figures.failuresFrom !== null) {
      assert.ok(figures.failuresFrom >= killedAt && figures.failuresTo! <= killedAt + KILL_FAILURE_SPAN_MS,
        `5xx only within ${KILL_FAILURE_SPAN_MS} ms after the kill (from ${figures.failuresFrom - killedAt} ms to ${figures.failuresTo! - killedAt} ms)`);
    }
    const writes = await verifyWrites(load, 'kill');
    report(`kill -9: ${writes.unknown} writes answered 5xx, of which ${writes.unknownStored} were stored all the same (committed, the replica died before answering: why nginx must not retry a POST)`);

    for (const id of drafts) {
      const dataset = await platform.settled(id);
      assert.equal(dataset.dataSetStatus, 'AVAILABLE');
      const jobs = await db.query('select state, last_error from jobs where subject_id = $1', [id]);
      assert.deepEqual(jobs.rows, [], 'the saga finished and left no job');
      const events = await platform.api('GET', `/v1/audit-events?objectId=${id}&type=DATASET_RELEASED&size=100`);
      assert.equal(events.totalElements, 1, 'released once');
    }

    assert.notEqual(newHolder, holderPid);
    let rows = { n: 0, distinct: 0 };
    await waitFor(async () => {
      rows = await pipelineRows('kill');
      return rows.n >= published ? true : undefined;
    }, { what: `${published} pipeline Observations`, timeoutMs: 60_000, intervalMs: 200, last: () => JSON.stringify(rows) });
    await sleep(1_000); // a late redelivery must not add a row
    assert.deepEqual(await pipelineRows('kill'), { n: published, distinct: published }, 'every message published during the kill stored exactly once');
    report(`kill -9: ${published} MQTT messages published during the kill, each stored once`);

    const created = load.outcomes.filter((o) => o.loop.startsWith('observations-') && o.status === 201);
    const dropped = subscribers.filter((s) => s.drops.length > 0);
    assert.ok(dropped.length > 0, 'some subscriber was connected to the killed replica');
    // Announced after its commit, a change whose process died in between is not announced (best
    // effort, as the contract has it): a write the victim answered in its last second may lack its message.
    const announcedByVictimMaybe = (o: Outcome) => o.endedAt < killedAt && o.endedAt >= killedAt - 1_000;
    const lacks = (s: Subscriber, since: number) => created.filter((o) => o.startedAt >= since && !s.received.has(o.id as number));
    await waitFor(() => subscribers.every((s) => {
      const since = s.drops.length === 0 ? 0 : s.resubscribedAt.at(-1);
      return since !== undefined && lacks(s, since).every(announcedByVictimMaybe);
    }) || undefined, {
      what: 'every subscriber to receive what was written after it (re)subscribed', timeoutMs: 10_000, intervalMs: 100,
      // For each subscriber, the Observations it lacks: when each was sent and answered, and which replica stored it, against its reconnection.
      last: () => JSON.stringify(subscribers.map((s) => {
        const lacking = lacks(s, s.resubscribedAt.at(-1) ?? 0);
        return {
          drops: s.drops.map((at) => at - killedAt), back: s.resubscribedAt.map((at) => at - killedAt), received: s.received.size,
          lacking: lacking.slice(0, 20).map((o) => ({ id: o.id, sent: o.startedAt - killedAt, answered: o.endedAt - killedAt })),
        };
      })),
    });
    const unannounced = new Set(subscribers.flatMap((s) => lacks(s, s.resubscribedAt.at(-1) ?? 0).map((o) => o.id)));
    report(`kill -9: ${unannounced.size} Observations answered in the victim's last second were not announced`);
    report(`kill -9: ${dropped.length} of ${subscribers.length} MQTT subscribers were on the killed replica; all reconnected through nginx within ${Math.max(...dropped.map((s) => s.resubscribedAt.at(-1)! - s.drops[0]!))} ms`);
    await Promise.all(subscribers.map((s) => s.client.endAsync(true)));
    subscribers = [];
  });

  step('rolling restart, one replica at a time (out of nginx, SIGTERM, started, back in), under load: no failed request', async () => {
    const load = new Load(platform.token);
    load.start(loops(2, 'roll'));
    await sleep(1_000);
    const timings: string[] = [];
    const startedAt = Date.now();
    const events: string[] = [];
    const event = (what: string) => events.push(`${Date.now() - startedAt} ms ${what}`);
    for (const replica of cluster.replicas) {
      // As an operator does with nginx: out of the upstreams first, so that nothing new is sent to
      // it while it stops (see nginxConfig); what it holds, it finishes.
      await cluster.nginx.reload(new Set([replica.index]));
      event(`replica ${replica.index} out of nginx`);
      const stoppingAt = Date.now();
      event(`SIGTERM to replica ${replica.index}`);
      const stopped = await cluster.stop(replica.index, 'SIGTERM');
      assert.equal(stopped.code, 0, `replica ${replica.index} stopped cleanly`);
      const stoppedAt = Date.now();
      event(`replica ${replica.index} exited`);
      await cluster.start(replica.index);
      event(`replica ${replica.index} ready`);
      await cluster.nginx.reload(new Set());
      event(`replica ${replica.index} back in nginx`);
      timings.push(`replica ${replica.index}: drained in ${stoppedAt - stoppingAt} ms, ready again after ${Date.now() - stoppedAt} ms`);
    }
    await sleep(1_000);
    await load.stop();
    const figures = load.figures();
    report(`rolling restart: ${figures.requests} requests (${figures.writes} writes); failed ${figures.serverErrors} (5xx) + ${figures.connectionErrors} (no answer) ${JSON.stringify(figures.failureStatuses)}; ${timings.join('; ')}`);
    // Which request failed, when, and what it was told: a failure here is rare and must explain itself.
    const failures = load.outcomes.filter(failedOutcome).map((o) => `${o.method} ${o.status ?? o.error} sent at ${o.startedAt - startedAt} ms, answered at ${o.endedAt - startedAt} ms: ${o.detail ?? ''}`);
    assert.deepEqual([figures.serverErrors, figures.connectionErrors], [0, 0], `no failed request during the rolling restart; failed: ${failures.join(' | ')}; events: ${events.join(', ')}`);
    await verifyWrites(load, 'roll');
  });
});
