/**
 * A quick figure for feature writes: POST …/collections/{name}/items with 10,000 Points (two
 * attributes) through the gateway (in-process inject: body parsing, validation and the one
 * unnest insert, no network), on a fresh database of the local PostgreSQL server with PostGIS.
 * `TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/ows/insert.ts`
 *
 * 2026-11-23, local PostgreSQL 15 + PostGIS 3 (the full test suite not running): median 80,745
 * features/s over 10 requests (min 69,283, max 98,145).
 */
import { buildTestApp } from '../../test/helpers/test-app.js';
import { publishDataset } from '../../test/helpers/sta-dataset.js';

const BATCH = 10_000;
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 10);

const t = await buildTestApp('postgres');
try {
  const ows = await publishDataset(t, { standard: 'OWS', slug: 'bench' });
  const created = await ows.request('POST', '/collections', { name: 'points', geometryType: 'Point', properties: { label: 'string', rank: 'integer' } });
  if (created.statusCode !== 201) throw new Error(created.body);
  const body = JSON.stringify({
    type: 'FeatureCollection',
    features: Array.from({ length: BATCH }, (_, i) => ({
      type: 'Feature', geometry: { type: 'Point', coordinates: [6 + (i % 100) * 0.01, 50 + Math.floor(i / 100) * 0.01] }, properties: { label: `p${i}`, rank: i },
    })),
  });
  const rates: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const started = process.hrtime.bigint();
    const response = await ows.gateway.inject({
      method: 'POST', url: `${ows.base}/collections/points/items`, payload: body,
      headers: { authorization: `Bearer ${t.adminToken}`, 'content-type': 'application/geo+json' },
    });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    if (response.statusCode !== 201) throw new Error(response.body);
    rates.push(BATCH / seconds);
  }
  rates.sort((a, b) => a - b);
  const median = rates[Math.floor(rates.length / 2)]!;
  console.log(`${ROUNDS} requests of ${BATCH} features: median ${Math.round(median)} features/s (min ${Math.round(rates[0]!)}, max ${Math.round(rates.at(-1)!)})`);
} finally {
  await t.close();
}
