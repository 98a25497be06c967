import { withClient } from '../database.js';
import { copyChunks, copyIn } from './copy-in.js';

/**
 * SensorThings `CreateObservations` beside PostgreSQL's own `COPY` of the same rows into the same
 * table (the dataset's `<schema>.observations`): the bulk write path's cost over the database's
 * fastest way in. Target: CreateObservations >= 0.5x COPY (rows/s).
 *
 * Per round, in alternating order (A B, B A, …, so that a neighbour's load on the shared machine
 * falls on both alike): ROWS Observations through the gateway as REQUESTS bodies of PER_REQUEST
 * rows, IN_FLIGHT at a time (as bench:sta measures it), and ROWS rows of the same shape (stream,
 * FeatureOfInterest, phenomenonTime, result) in one `COPY … FROM STDIN` (text format) on one
 * connection. Bodies and COPY data are made before the clock starts; each round has its own times.
 */

export interface CreateVsCopyOptions {
  databaseUrl: string;
  /** The data API the STA base is served by (named in the report). */
  dataApiUrl: string;
  token: string;
  /** `{DATA_API_URL}/v1/datasets/{id}/sensors` */
  staBase: string;
  storageSchema: string;
  datastreamId: number;
  rounds: number;
}

const PER_REQUEST = 1_000;
const IN_FLIGHT = 10;
const ROWS = Number(process.env['BENCH_CREATE_VS_COPY_ROWS'] ?? 100_000);
const TARGET = 0.5;

interface Round {
  order: 'create first' | 'COPY first';
  createPerSecond: number;
  copyPerSecond: number;
}

/** Observation i of a round: one second apart, each round in its own year range. */
const timeOf = (round: number, i: number) => new Date(Date.UTC(2030 + round, 0, 1) + i * 1000).toISOString();
const resultOf = (i: number) => 20 + (i % 100) / 10;

function requestBodies(datastreamId: number, round: number): string[] {
  return Array.from({ length: Math.ceil(ROWS / PER_REQUEST) }, (_, r) => {
    const from = r * PER_REQUEST;
    const count = Math.min(PER_REQUEST, ROWS - from);
    return JSON.stringify([{
      Datastream: { '@iot.id': datastreamId },
      components: ['phenomenonTime', 'result'],
      'dataArray@iot.count': count,
      dataArray: Array.from({ length: count }, (_, k) => [timeOf(round, from + k), resultOf(from + k)]),
    }]);
  });
}

async function postAll(o: CreateVsCopyOptions, bodies: string[]): Promise<void> {
  const headers = { authorization: `Bearer ${o.token}`, 'content-type': 'application/json' };
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, bodies.length) }, async () => {
    for (let i = next++; i < bodies.length; i = next++) {
      const response = await fetch(`${o.staBase}/CreateObservations`, { method: 'POST', headers, body: bodies[i]! });
      const text = await response.text();
      if (response.status !== 201) throw new Error(`CreateObservations answered ${response.status}: ${text.slice(0, 300)}`);
      if (text.includes('"error')) throw new Error(`CreateObservations refused rows: ${text.slice(0, 300)}`);
    }
  }));
}

async function countRows(o: CreateVsCopyOptions): Promise<number> {
  return withClient(o.databaseUrl, async (db) => Number((await db.query<{ n: string }>(
    `select count(*) as n from "${o.storageSchema}".observations where datastream_id = $1`, [o.datastreamId])).rows[0]!.n));
}

async function timeCreate(o: CreateVsCopyOptions, round: number): Promise<number> {
  const bodies = requestBodies(o.datastreamId, round);
  const before = await countRows(o);
  const startedAt = performance.now();
  await postAll(o, bodies);
  const seconds = (performance.now() - startedAt) / 1000;
  const stored = (await countRows(o)) - before;
  if (stored !== ROWS) throw new Error(`CreateObservations stored ${stored} of ${ROWS} rows`);
  return ROWS / seconds;
}

async function timeCopy(o: CreateVsCopyOptions, round: number, featureOfInterestId: number): Promise<number> {
  // Round numbers of the COPY rows are offset so that they never share a time with the created ones.
  const lines = Array.from({ length: ROWS }, (_, i) => {
    const time = timeOf(round + 100, i);
    return `${o.datastreamId}\t${featureOfInterestId}\t${time}\t${time}\t${JSON.stringify(resultOf(i))}\n`;
  });
  const chunks = copyChunks(lines);
  return withClient(o.databaseUrl, async (db) => {
    const target = `"${o.storageSchema}".observations (datastream_id, feature_of_interest_id, phenomenon_time_start, phenomenon_time_end, result)`;
    const startedAt = performance.now();
    const copied = await copyIn(db, target, chunks);
    const seconds = (performance.now() - startedAt) / 1000;
    if (copied !== ROWS) throw new Error(`COPY stored ${copied} of ${ROWS} rows`);
    return ROWS / seconds;
  });
}

/** The FeatureOfInterest the server derives for the Datastream: what the COPY rows carry too. */
async function derivedFeature(o: CreateVsCopyOptions): Promise<number> {
  await postAll(o, [JSON.stringify([{ Datastream: { '@iot.id': o.datastreamId }, components: ['phenomenonTime', 'result'], dataArray: [[timeOf(-1, 0), 0]] }])]);
  return withClient(o.databaseUrl, async (db) => Number((await db.query<{ id: string }>(
    `select feature_of_interest_id as id from "${o.storageSchema}".observations where datastream_id = $1 and feature_of_interest_id is not null limit 1`,
    [o.datastreamId])).rows[0]!.id));
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const perSecond = (value: number) => Math.round(value).toLocaleString('en');

export async function measureCreateVsCopy(options: CreateVsCopyOptions): Promise<{ markdown: string; targetsMet: boolean }> {
  const foi = await derivedFeature(options);
  // Warm-up, untimed: the server's code paths and the table's first pages.
  await postAll(options, requestBodies(options.datastreamId, 50).slice(0, 2 * IN_FLIGHT));
  const rounds: Round[] = [];
  for (let round = 0; round < options.rounds; round++) {
    const createFirst = round % 2 === 0;
    let createPerSecond = 0;
    let copyPerSecond = 0;
    if (createFirst) {
      createPerSecond = await timeCreate(options, round);
      copyPerSecond = await timeCopy(options, round, foi);
    } else {
      copyPerSecond = await timeCopy(options, round, foi);
      createPerSecond = await timeCreate(options, round);
    }
    rounds.push({ order: createFirst ? 'create first' : 'COPY first', createPerSecond, copyPerSecond });
  }
  const ratios = rounds.map((r) => r.createPerSecond / r.copyPerSecond);
  const ratio = median(ratios);
  const targetsMet = ratio >= TARGET;
  const lines = [
    `CreateObservations through the data API (${options.dataApiUrl}) beside \`COPY ${options.storageSchema}.observations FROM STDIN\` (text format, one connection):`,
    `${ROWS.toLocaleString('en')} Observations per round each way; CreateObservations as ${Math.ceil(ROWS / PER_REQUEST)} requests of ${PER_REQUEST.toLocaleString('en')}, ${IN_FLIGHT} in flight; rounds in alternating order.`,
    '',
    '| round | order | CreateObservations rows/s | COPY rows/s | ratio |',
    '|---|---|---:|---:|---:|',
    ...rounds.map((r, i) => `| ${i + 1} | ${r.order} | ${perSecond(r.createPerSecond)} | ${perSecond(r.copyPerSecond)} | ${ratios[i]!.toFixed(2)} |`),
    `| median | | ${perSecond(median(rounds.map((r) => r.createPerSecond)))} | ${perSecond(median(rounds.map((r) => r.copyPerSecond)))} | **${ratio.toFixed(2)}** (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}) |`,
    '',
    `Target CreateObservations >= ${TARGET}x COPY (median ratio): ${targetsMet ? 'met' : 'not met'}.`,
  ];
  return { markdown: lines.join('\n'), targetsMet };
}
