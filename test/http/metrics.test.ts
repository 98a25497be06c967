import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { bearer, expectProblem } from '../helpers/factories.js';
import { publishStaDataset } from '../helpers/sta-dataset.js';
import { waitFor } from '../helpers/wait.js';

// GET /metrics on the management listener, read as Prometheus reads it: every line parsed, every
// sample tied to a family with HELP and TYPE, the request series labelled by route pattern.

interface Sample { name: string; labels: Record<string, string>; value: number }
interface Exposition { help: Map<string, string>; types: Map<string, string>; samples: Sample[] }

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/y;

/** Parses the text format strictly: a line that is neither a comment, a sample nor blank fails the test. */
function parseExposition(text: string): Exposition {
  const exposition: Exposition = { help: new Map(), types: new Map(), samples: [] };
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (comment) {
      const [, kind, name, rest] = comment;
      (kind === 'HELP' ? exposition.help : exposition.types).set(name!, rest!);
      continue;
    }
    const sample = SAMPLE.exec(line);
    assert.ok(sample, `not a line of the text format: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    const labelText = sample[2] ?? '';
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < labelText.length) {
      const label = LABEL.exec(labelText);
      assert.ok(label, `malformed labels in ${JSON.stringify(line)}`);
      labels[label[1]!] = label[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    // Go's ParseFloat, which Prometheus uses, takes NaN and Inf in any case (prom-client writes "Nan").
    const text = sample[3]!;
    assert.match(text, /^([+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|[+-]?inf|nan)$/i, `not a number in ${JSON.stringify(line)}`);
    const value = /^nan$/i.test(text) ? NaN : /inf$/i.test(text) ? (text.startsWith('-') ? -Infinity : Infinity) : Number(text);
    exposition.samples.push({ name: sample[1]!, labels, value });
  }
  for (const sample of exposition.samples) {
    const family = [sample.name, sample.name.replace(/_(bucket|sum|count)$/, '')].find((name) => exposition.types.has(name));
    assert.ok(family, `sample ${sample.name} has no # TYPE`);
    assert.ok(exposition.help.has(family), `family ${family} has no # HELP`);
  }
  return exposition;
}

async function scrape(t: TestApp, headers: Record<string, string> = {}): Promise<Exposition & { text: string }> {
  const response = await t.app.inject({ method: 'GET', url: '/metrics', headers });
  assert.equal(response.statusCode, 200, response.body);
  assert.match(String(response.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  return { ...parseExposition(response.body), text: response.body };
}

const matches = (labels: Record<string, string>, wanted: Record<string, string>) => Object.entries(wanted).every(([key, value]) => labels[key] === value);

/** The value of the one sample of `name` whose labels include `wanted` (0 when absent). */
function valueOf(exposition: Exposition, name: string, wanted: Record<string, string>): number {
  const found = exposition.samples.filter((sample) => sample.name === name && matches(sample.labels, wanted));
  assert.ok(found.length <= 1, `${found.length} samples of ${name} match ${JSON.stringify(wanted)}`);
  return found[0]?.value ?? 0;
}

for (const kind of databaseKinds(import.meta.url)) {
  describe(`GET /metrics (${kind})`, () => {
    let t: TestApp;
    before(async () => { t = await buildTestApp(kind); });
    after(async () => { await t?.close(); });

    test('answers the Prometheus text format: HELP and TYPE for every family, Node\'s process metrics, and no entry in the OpenAPI document', async () => {
      const exposition = await scrape(t);
      assert.equal(exposition.types.get('http_requests_total'), 'counter');
      assert.equal(exposition.types.get('http_request_duration_seconds'), 'histogram');
      assert.equal(exposition.types.get('db_pool_connections'), 'gauge');
      assert.equal(exposition.types.get('process_cpu_user_seconds_total'), 'counter');
      assert.ok(exposition.samples.some((sample) => sample.name === 'nodejs_heap_size_used_bytes' && sample.value > 0));
      const openapi = await t.app.inject({ method: 'GET', url: '/openapi.json' });
      assert.equal(openapi.statusCode, 200);
      assert.deepEqual(Object.keys(openapi.json().paths).filter((path) => !path.startsWith('/v1/')), []);
      assert.match(openapi.json().info.description, /`GET \/metrics` \(Prometheus text format; a bearer token equal to METRICS_TOKEN/);
    });

    test('a request to /v1/datasets/{uuid} is counted under the route pattern /v1/datasets/:id with its status, never under its raw path', async () => {
      const missing = randomUUID();
      const before = await scrape(t);
      const labels = { listener: 'management', route: '/v1/datasets/:id', method: 'GET' };
      const answered = await t.app.inject({ method: 'GET', url: `/v1/datasets/${missing}`, headers: bearer(t.adminToken) });
      expectProblem(answered, 404, 'NOT_FOUND');
      const created = await t.app.inject({ method: 'POST', url: '/v1/datasets', headers: bearer(t.adminToken), payload: { name: `metrics-${missing}`, description: 'counted' } });
      assert.equal(created.statusCode, 201, created.body);
      const found = await t.app.inject({ method: 'GET', url: `/v1/datasets/${created.json().id}`, headers: bearer(t.adminToken) });
      assert.equal(found.statusCode, 200);

      const after = await scrape(t);
      assert.equal(valueOf(after, 'http_requests_total', { ...labels, status: '404' }) - valueOf(before, 'http_requests_total', { ...labels, status: '404' }), 1);
      assert.equal(valueOf(after, 'http_requests_total', { ...labels, status: '200' }) - valueOf(before, 'http_requests_total', { ...labels, status: '200' }), 1);
      assert.equal(valueOf(after, 'http_requests_total', { listener: 'management', route: '/v1/datasets', method: 'POST', status: '201' }), valueOf(before, 'http_requests_total', { listener: 'management', route: '/v1/datasets', method: 'POST', status: '201' }) + 1);
      assert.ok(!after.text.includes(missing), 'the raw id appears in the metrics');
      assert.ok(!after.text.includes(created.json().id), 'the raw id appears in the metrics');
    });

    test('requests no route matches share one "unmatched" series, whatever their paths', async () => {
      const labels = { listener: 'management', route: 'unmatched', method: 'GET', status: '404' };
      const before = await scrape(t);
      const paths = [1, 2, 3].map(() => `/nowhere-${randomUUID()}`);
      for (const path of paths) assert.equal((await t.app.inject({ method: 'GET', url: path })).statusCode, 404);
      const after = await scrape(t);
      assert.equal(valueOf(after, 'http_requests_total', labels) - valueOf(before, 'http_requests_total', labels), 3);
      for (const path of paths) assert.ok(!after.text.includes(path), `${path} became a label`);
      const routes = new Set(after.samples.filter((sample) => sample.name === 'http_requests_total').map((sample) => sample.labels['route']));
      assert.deepEqual([...routes].filter((route) => route !== 'unmatched' && !route!.startsWith('/')), []);
    });

    test('the duration histogram has cumulative buckets ending in +Inf, which equals its count and http_requests_total', async () => {
      assert.equal((await t.app.inject({ method: 'GET', url: '/health/live' })).statusCode, 200);
      const exposition = await scrape(t);
      const labels = { listener: 'management', route: '/health/live', method: 'GET', status: '200' };
      const buckets = exposition.samples.filter((sample) => sample.name === 'http_request_duration_seconds_bucket' && matches(sample.labels, labels));
      assert.ok(buckets.length >= 5, `only ${buckets.length} buckets`);
      const bounds = buckets.map((bucket) => Number(bucket.labels['le'] === '+Inf' ? Infinity : bucket.labels['le']));
      assert.deepEqual(bounds, [...bounds].sort((a, b) => a - b));
      assert.equal(bounds.at(-1), Infinity);
      for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]!.value >= buckets[i - 1]!.value, 'buckets are not cumulative');
      const count = valueOf(exposition, 'http_request_duration_seconds_count', labels);
      assert.ok(count >= 1);
      assert.equal(buckets.at(-1)!.value, count);
      assert.equal(valueOf(exposition, 'http_requests_total', labels), count, 'the counter and the histogram disagree');
      assert.ok(valueOf(exposition, 'http_request_duration_seconds_sum', labels) > 0);
    });

    test('db_pool_connections reports total, idle and waiting connections, and sees one held by a transaction', async () => {
      const idle = await scrape(t);
      const total = valueOf(idle, 'db_pool_connections', { state: 'total' });
      assert.ok(total >= 1, `total ${total}`);
      if (kind === 'pglite') assert.equal(total, 1, 'PGlite has one connection');
      assert.ok(valueOf(idle, 'db_pool_connections', { state: 'idle' }) >= 1);
      assert.equal(valueOf(idle, 'db_pool_connections', { state: 'waiting' }), 0);

      let release!: () => void;
      const held = new Promise<void>((resolve) => { release = resolve; });
      let inside!: () => void;
      const entered = new Promise<void>((resolve) => { inside = resolve; });
      const transaction = t.ctx.db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx);
        inside();
        await held;
      });
      await entered;
      let queued: Promise<unknown> | undefined;
      try {
        const busy = await scrape(t);
        const busyTotal = valueOf(busy, 'db_pool_connections', { state: 'total' });
        assert.ok(busyTotal - valueOf(busy, 'db_pool_connections', { state: 'idle' }) >= 1, 'the held connection is not counted as busy');
        if (kind === 'pglite') {
          // A second statement must wait for PGlite's one connection: it shows as waiting.
          queued = sql`select 1`.execute(t.ctx.db);
          await waitFor(async () => valueOf(await scrape(t), 'db_pool_connections', { state: 'waiting' }) === 1, { what: 'a waiting statement to be counted' });
        }
      } finally {
        release();
        await transaction;
        await queued;
      }
    });

    test('the pipeline metrics are declared with no sample until a pipeline starts, then every outcome at 0; they drop its series when it is deleted', async () => {
      const quiet = await scrape(t);
      assert.equal(quiet.types.get('pipeline_records_total'), 'counter');
      assert.equal(quiet.types.get('pipeline_last_record_age_seconds'), 'gauge');
      assert.deepEqual(quiet.samples.filter((sample) => sample.name.startsWith('pipeline_')), []);

      const pipeline = randomUUID();
      t.ctx.metrics.pipelines.started(pipeline);
      const started = await scrape(t);
      for (const outcome of ['received', 'written', 'rejected', 'skipped']) {
        assert.equal(valueOf(started, 'pipeline_records_total', { pipeline, outcome }), 0, `${outcome} at 0 before any record`);
      }
      t.ctx.metrics.pipelines.count(pipeline, 'received', 3, Date.now() - 5_000);
      t.ctx.metrics.pipelines.count(pipeline, 'written', 2);
      const reported = await scrape(t);
      assert.equal(valueOf(reported, 'pipeline_records_total', { pipeline, outcome: 'received' }), 3);
      assert.equal(valueOf(reported, 'pipeline_records_total', { pipeline, outcome: 'written' }), 2);
      assert.ok(valueOf(reported, 'pipeline_last_record_age_seconds', { pipeline }) >= 5);
      t.ctx.metrics.pipelines.stopped(pipeline);
      const stopped = await scrape(t);
      assert.equal(stopped.samples.filter((sample) => sample.name === 'pipeline_last_record_age_seconds').length, 0);
      assert.equal(valueOf(stopped, 'pipeline_records_total', { pipeline, outcome: 'written' }), 2, 'a stopped pipeline keeps its counts');
      t.ctx.metrics.pipelines.deleted(pipeline);
      assert.deepEqual((await scrape(t)).samples.filter((sample) => sample.name.startsWith('pipeline_')), []);
    });

    test('the data API\'s requests are counted through the gateway under their route patterns, on listener "data"', async () => {
      const dataset = await publishStaDataset(t);
      const before = await scrape(t);
      const things = await dataset.request('GET', '/Things');
      assert.equal(things.statusCode, 200, things.body);
      const unknown = await dataset.gateway.inject({ method: 'GET', url: `/nowhere-${randomUUID()}` });
      assert.equal(unknown.statusCode, 404);
      const after = await scrape(t);
      const below = { listener: 'data', route: '/v1/datasets/:id/:slug/*', method: 'GET', status: '200' };
      assert.equal(valueOf(after, 'http_requests_total', below) - valueOf(before, 'http_requests_total', below), 1);
      const unmatched = { listener: 'data', route: 'unmatched', method: 'GET', status: '404' };
      assert.equal(valueOf(after, 'http_requests_total', unmatched) - valueOf(before, 'http_requests_total', unmatched), 1);
      assert.ok(!after.text.includes(dataset.datasetId), 'the raw dataset id appears in the metrics');
    });
  });
}

describe('GET /metrics with METRICS_TOKEN', () => {
  const token = `metrics-${randomUUID()}`;
  let t: TestApp;
  before(async () => { t = await buildTestApp('pglite', { METRICS_TOKEN: token }); });
  after(async () => { await t?.close(); });

  test('answers 401 without the token, with a wrong one, a longer one or another scheme; 200 with it', async () => {
    for (const authorization of [undefined, 'Bearer wrong', `Bearer ${token}x`, `Bearer ${token.slice(0, -1)}`, `Basic ${token}`, token]) {
      const response = await t.app.inject({ method: 'GET', url: '/metrics', headers: authorization === undefined ? {} : { authorization } });
      expectProblem(response, 401, 'UNAUTHORIZED');
      assert.match(String(response.headers['www-authenticate']), /^Bearer /);
      assert.ok(!response.body.includes(token), 'the answer gives the token away');
    }
    const exposition = await scrape(t, { authorization: `Bearer ${token}` });
    assert.ok(exposition.types.has('http_requests_total'));
  });

  test('a token for the API is no token for /metrics', async () => {
    expectProblem(await t.app.inject({ method: 'GET', url: '/metrics', headers: bearer(t.adminToken) }), 401, 'UNAUTHORIZED');
  });
});

describe('GET /metrics per context', () => {
  test('two apps in one process keep their own counts', async () => {
    const [first, second] = await Promise.all([buildTestApp('pglite'), buildTestApp('pglite')]);
    try {
      const labels = { listener: 'management', route: '/health/live', method: 'GET', status: '200' };
      const baseline = valueOf(await scrape(second), 'http_requests_total', labels);
      for (let i = 0; i < 3; i++) await first.app.inject({ method: 'GET', url: '/health/live' });
      assert.equal(valueOf(await scrape(first), 'http_requests_total', labels), 3);
      assert.equal(valueOf(await scrape(second), 'http_requests_total', labels), baseline);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });
});
