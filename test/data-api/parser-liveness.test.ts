import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';

/**
 * Issue 16, finding 4: a parser blow-up froze every listener of the process for 10–20 s. Here a
 * real listening data API takes hostile requests in a loop (maximal expressions, maximal and
 * oversized `$expand`s, big `$batch`es, deep JSON) for a few seconds, while `/health/live` is asked
 * again and again: its worst latency shows whether one request held the event loop.
 */

const HOSTILE_FOR_MS = 4000;
const WORKERS = 3;
// The contract's turn is ~50 ms per request; the bound proves no freeze on a loaded 2-core machine.
const WORST_LIVE_MS = 1000;

describe('the data API stays live while hostile parser input runs', () => {
  let t: TestApp;
  let sta: PublishedDataset;
  let origin: string;
  before(async () => {
    t = await buildTestApp('pglite');
    sta = await publishStaDataset(t);
    for (const name of ['North', 'South']) {
      const created = await sta.request('POST', '/Things', { name, description: name, properties: { owner: 'city' } });
      assert.equal(created.statusCode, 201, created.body);
    }
    await sta.gateway.listen({ host: '127.0.0.1', port: 0 });
    origin = `http://127.0.0.1:${(sta.gateway.server.address() as AddressInfo).port}`;
  });
  after(() => t.close());

  test(`/health/live answers within ${WORST_LIVE_MS} ms throughout`, async (context) => {
    const base = `${origin}${sta.base}`;
    const auth = { authorization: `Bearer ${t.adminToken}` };
    // Within 8 KiB each ('+' is a space in a query): too deep, or flat and valid.
    const deepNot = `Things?$filter=${'not+'.repeat(2000)}true`;
    const flatOr = `Things?$filter=${'id+eq+0+or+'.repeat(740)}id+eq+1`;
    const eightLevels = `Things?$expand=${'Datastreams($expand=Thing($expand='.repeat(3)}Datastreams($expand=Thing)${'))'.repeat(3)}`;
    const hugeExpand = `Things?$expand=${'Datastreams($expand=Thing($expand='.repeat(30_000)}Datastreams${'))'.repeat(30_000)}`;
    const bigBatch = JSON.stringify({ requests: Array.from({ length: 1000 }, (_, k) => ({ id: `r${k}`, method: 'get', url: k % 2 ? deepNot : `Things?$filter=${'('.repeat(4000)}` })) });
    const mixedBatch = JSON.stringify({ requests: [hugeExpand, flatOr, eightLevels, deepNot].map((url, k) => ({ id: `m${k}`, method: 'get', url })) });
    const deepJson = `{"name":"n","description":"d","properties":${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}}`;
    const hostile: Array<() => Promise<Response>> = [
      () => fetch(`${base}/${deepNot}`, { headers: auth }),
      () => fetch(`${base}/${flatOr}`, { headers: auth }),
      () => fetch(`${base}/${eightLevels}`, { headers: auth }),
      () => fetch(`${base}/$batch`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: bigBatch }),
      () => fetch(`${base}/$batch`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: mixedBatch }),
      () => fetch(`${base}/Things`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: deepJson }),
    ];

    const statuses = new Map<number, number>();
    const deadline = Date.now() + HOSTILE_FOR_MS;
    const worker = async (offset: number) => {
      for (let k = offset; Date.now() < deadline; k++) {
        const response = await hostile[k % hostile.length]!();
        await response.arrayBuffer();
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      }
    };
    const latencies: number[] = [];
    const probe = async () => {
      while (Date.now() < deadline) {
        const started = performance.now();
        const response = await fetch(`${origin}/health/live`);
        await response.arrayBuffer();
        latencies.push(performance.now() - started);
        assert.equal(response.status, 200);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    await Promise.all([probe(), ...Array.from({ length: WORKERS }, (_, k) => worker(k * 2))]);

    const sorted = [...latencies].sort((a, b) => a - b);
    const worst = sorted[sorted.length - 1]!;
    const p99 = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!;
    const answered = [...statuses.values()].reduce((a, b) => a + b, 0);
    context.diagnostic(`/health/live: ${latencies.length} probes, max ${worst.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms; hostile answers by status: ${JSON.stringify(Object.fromEntries(statuses))}`);
    // The hostile side really ran: every kind at least once, and none answered 5xx.
    assert.ok(answered >= hostile.length, `only ${answered} hostile requests answered`);
    assert.deepEqual([...statuses.keys()].filter((status) => status >= 500), []);
    assert.ok(statuses.has(400) && statuses.has(200), JSON.stringify(Object.fromEntries(statuses)));
    assert.ok(latencies.length >= 10, `only ${latencies.length} probes`);
    assert.ok(worst < WORST_LIVE_MS, `worst /health/live latency ${worst.toFixed(0)} ms`);
  });
});
