import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { bearer, expectFieldError, expectProblem, uniqueName } from '../helpers/factories.js';
import { freePort } from '../faults/harness.js';
import { publishDataset } from '../helpers/sta-dataset.js';

// Upstream mode: an STA named API answered by an existing SensorThings server (a small real HTTP
// server here, in FROST-Server's shapes), proxied by the gateway with its links rewritten.
interface Seen { method: string; url: string; authorization: string | undefined; body: string }

async function fakeFrost() {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization, body });
      const root = `http://${req.headers.host}/FROST-Server/v1.1`;
      if (req.url!.startsWith('/slow/')) return void setTimeout(() => res.end('{}'), 5_000).unref();
      res.setHeader('content-type', 'application/json; charset=utf-8');
      if (req.method === 'POST') {
        res.statusCode = 201;
        res.setHeader('location', `${root}/Things(7)`);
        return void res.end(JSON.stringify({ '@iot.id': 7, '@iot.selfLink': `${root}/Things(7)` }));
      }
      res.end(JSON.stringify({
        '@iot.nextLink': `${root}/Things?$top=1&$skip=1`,
        value: [{ '@iot.id': 1, '@iot.selfLink': `${root}/Things(1)`, 'Datastreams@iot.navigationLink': `${root}/Things(1)/Datastreams`, name: 'elsewhere: http://other.example/FROST-Server/v1.1' }],
        // JSON may escape '/' as '\/': the rewrite must catch that spelling too.
      }).replace(`${root}/Things(1)/Datastreams`, `${root}/Things(1)/Datastreams`.replaceAll('/', '\\/')));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { seen, origin, close: () => new Promise((resolve) => server.close(resolve)) };
}

for (const kind of databaseKinds(import.meta.url)) {
  describe(`STA upstream mode (${kind})`, () => {
    let t: TestApp;
    let frost: Awaited<ReturnType<typeof fakeFrost>>;
    let closedOrigin: string;
    before(async () => {
      frost = await fakeFrost();
      closedOrigin = `http://127.0.0.1:${await freePort()}`;
      t = await buildTestApp(kind, { STA_UPSTREAM_ORIGINS: `${frost.origin},${closedOrigin}`, UPSTREAM_TIMEOUT_MS: '400' });
    });
    after(async () => {
      await t.close();
      await frost.close();
    });

    const withUpstream = (upstreamUrl: string | null, slug = 'frost') => publishDataset(t, { slug, ...(upstreamUrl ? { upstreamUrl } : {}) });

    test('reads and writes are forwarded without the caller\'s token; every link comes back on the public route', async () => {
      const published = await withUpstream(`${frost.origin}/FROST-Server/v1.1`);
      const read = await published.request('GET', '/v1.1/Things?$top=1&$filter=name%20eq%20%27a%27');
      assert.equal(read.statusCode, 200, read.body);
      const last = frost.seen.at(-1)!;
      assert.deepEqual([last.method, last.url, last.authorization], ['GET', '/FROST-Server/v1.1/Things?$top=1&$filter=name%20eq%20%27a%27', undefined]);
      const body = read.json();
      assert.equal(body['@iot.nextLink'], `${published.publicBase}/Things?$top=1&$skip=1`);
      assert.equal(body.value[0]['@iot.selfLink'], `${published.publicBase}/Things(1)`);
      assert.equal(body.value[0]['Datastreams@iot.navigationLink'], `${published.publicBase}/Things(1)/Datastreams`);
      assert.equal(body.value[0].name, 'elsewhere: http://other.example/FROST-Server/v1.1');
      assert.doesNotMatch(read.body, new RegExp(frost.origin.replace(/[.:/]/g, '\\$&')));

      const created = await published.request('POST', '/Things', { name: 'n', description: 'd' });
      assert.equal(created.statusCode, 201, created.body);
      assert.equal(created.headers['location'], `${published.publicBase}/Things(7)`);
      assert.equal(created.json()['@iot.selfLink'], `${published.publicBase}/Things(7)`);
      assert.deepEqual(JSON.parse(frost.seen.at(-1)!.body), { name: 'n', description: 'd' });
    });

    test('a refused upstream answers 502, a slow one 504 within UPSTREAM_TIMEOUT_MS; other routes carry on', async () => {
      const refused = await withUpstream(`${closedOrigin}/v1.1`, 'refused');
      const slow = await withUpstream(`${frost.origin}/slow/v1.1`, 'slow');
      const own = await withUpstream(null, 'own');
      const started = Date.now();
      const [down, late, fine] = await Promise.all([
        refused.request('GET', '/Things'),
        slow.request('GET', '/Things'),
        (async () => {
          const answer = await own.request('GET', '');
          return { answer, ms: Date.now() - started };
        })(),
      ]);
      const problem = expectProblem(down, 502, 'UPSTREAM_UNAVAILABLE');
      assert.doesNotMatch(JSON.stringify(problem), /127\.0\.0\.1/);
      expectProblem(late, 504, 'UPSTREAM_TIMEOUT');
      assert.ok(Date.now() - started < 2_000, `answered after ${Date.now() - started} ms`);
      assert.equal(fine.answer.statusCode, 200);
      assert.ok(fine.ms < 400, `the route of our own server waited ${fine.ms} ms`);
    });

    test('an upstream must be on an allowed origin and only for STA; consumers never see it', async () => {
      const create = (namedApi: Record<string, unknown>) => t.app.inject({
        method: 'POST', url: '/v1/datasets', headers: bearer(t.adminToken),
        payload: { name: uniqueName('upstream'), description: 'd', namedApis: [{ name: 'A', slug: 'a', ...namedApi }] },
      });
      expectFieldError(await create({ standard: 'STA', upstreamUrl: 'http://169.254.169.254/latest' }), 'namedApis[0].upstreamUrl');
      expectFieldError(await create({ standard: 'OWS', upstreamUrl: `${frost.origin}/x` }), 'namedApis[0].upstreamUrl');
      expectFieldError(await create({ standard: 'STA', upstreamUrl: 'ftp://x' }), 'namedApis[0].upstreamUrl');
      const published = await withUpstream(`${frost.origin}/FROST-Server/v1.1`, 'hidden');
      const dataset = await t.app.inject({ method: 'GET', url: `/v1/datasets/${published.datasetId}`, headers: bearer(t.adminToken) });
      assert.equal(dataset.json().namedApis[0].upstreamUrl, `${frost.origin}/FROST-Server/v1.1`);
      const apis = await t.app.inject({ method: 'GET', url: `/v1/datasets/${published.datasetId}/apis`, headers: bearer(t.adminToken) });
      assert.equal(apis.json()[0].upstreamUrl, undefined, apis.body);
    });
  });
}

describe('STA_UPSTREAM_URL (global)', () => {
  let t: TestApp;
  let frost: Awaited<ReturnType<typeof fakeFrost>>;
  before(async () => {
    frost = await fakeFrost();
    t = await buildTestApp('pglite', { STA_UPSTREAM_URL: `${frost.origin}/FROST-Server/v1.1/` });
  });
  after(async () => {
    await t.close();
    await frost.close();
  });

  test('every STA API without its own upstream is proxied to it', async () => {
    const published = await publishDataset(t, { slug: 'global' });
    const read = await published.request('GET', '/Things(1)/Datastreams');
    assert.equal(read.statusCode, 200, read.body);
    assert.equal(frost.seen.at(-1)!.url, '/FROST-Server/v1.1/Things(1)/Datastreams');
    assert.equal(read.json().value[0]['@iot.selfLink'], `${published.publicBase}/Things(1)`);
  });
});
