/**
 * A quick measure of the SensorThings bulk path: one `CreateObservations` of 100,000 Observations
 * through the gateway (in process, no network) on a fresh PostgreSQL database. Not part of
 * `npm run bench`; run it with
 * `TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/sta-create-observations.ts`.
 */
import { buildTestApp } from '../test/helpers/test-app.js';
import { publishStaDataset } from '../test/helpers/sta-dataset.js';
import { datastream, location, thing } from '../test/sta/fixtures.js';

const ROWS = Number(process.env['ROWS'] ?? 100_000);
const ROUNDS = 3;

const t = await buildTestApp(process.env['TEST_DATABASE_URL'] ? 'postgres' : 'pglite');
try {
  const sta = await publishStaDataset(t);
  const created = await sta.request('POST', '/Things', thing('Bench', { Locations: [location()], Datastreams: [datastream('Bench stream')] }));
  const datastreamId = (await sta.request('GET', `/Things(${created.json()['@iot.id']})/Datastreams`)).json().value[0]['@iot.id'];
  for (let round = 0; round < ROUNDS; round++) {
    const start = Date.UTC(2020, 0, 1) + round * ROWS * 1000;
    const dataArray = Array.from({ length: ROWS }, (_, i) => [new Date(start + i * 1000).toISOString(), 20 + (i % 100) / 10]);
    const body = [{ Datastream: { '@iot.id': datastreamId }, components: ['phenomenonTime', 'result'], dataArray }];
    const began = performance.now();
    const response = await sta.request('POST', '/CreateObservations', body);
    const seconds = (performance.now() - began) / 1000;
    if (response.statusCode !== 201) throw new Error(response.body.slice(0, 500));
    console.log(`round ${round + 1}: ${ROWS} Observations in ${seconds.toFixed(2)} s = ${Math.round(ROWS / seconds)} Observations/s`);
  }
} finally {
  await t.close();
}
