import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { freePort } from '../helpers/ports.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { waitFor } from '../helpers/wait.js';
import { datastream, location, thing } from '../sta/fixtures.js';

/**
 * observations.csv on PostgreSQL: streamed by COPY while a slot is free (DOWNLOAD_COPY_CONCURRENCY,
 * here 1), else read in keyset batches, and both ways write the same bytes. A COPY holds a
 * connection of its own while its client reads: a client that goes away ends it, and a backend
 * terminated in the middle breaks the transfer off instead of ending it as a whole file.
 */

const OBSERVATIONS = 300_000;

/** A download read over a real socket, paused after its first chunk until `resume()`. */
interface HeldDownload {
  first: Buffer;
  /** Reads the rest: resolves with the whole body, or rejects when the transfer breaks off. */
  rest(): Promise<Buffer>;
  /** Goes away, as a client closing its window does. */
  leave(): void;
}

function holdDownload(url: string): Promise<HeldDownload> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, (response) => {
      if (response.statusCode !== 200) return reject(new Error(`status ${response.statusCode}`));
      response.once('data', (first: Buffer) => {
        response.pause();
        const chunks: Buffer[] = [first];
        resolve({
          first,
          rest: () => new Promise((done, failed) => {
            response.on('data', (chunk: Buffer) => chunks.push(chunk));
            response.once('end', () => (response.complete ? done(Buffer.concat(chunks)) : failed(new Error('the body ended incomplete'))));
            response.once('aborted', () => failed(new Error('the transfer broke off')));
            response.once('error', failed);
            response.resume();
          }),
          leave: () => request.destroy(),
        });
      });
    });
    request.once('error', reject);
  });
}

describe('observations.csv by COPY (postgres)', { skip: !process.env['TEST_DATABASE_URL'] && 'needs TEST_DATABASE_URL' }, () => {
  let t: TestApp;
  let sta: PublishedDataset;
  let url: string;

  before(async () => {
    const port = await freePort();
    t = await buildTestApp('postgres', { DATA_API_URL: `http://127.0.0.1:${port}`, DOWNLOAD_COPY_CONCURRENCY: '1' });
    await (await t.dataApi()).listen({ host: '127.0.0.1', port });
    sta = await publishStaDataset(t, { slug: 'counts', openDataAccess: true });
    url = `http://127.0.0.1:${port}${sta.base}/download/observations.csv`;
    const created = await sta.request('POST', '/Things', thing('Counter', {
      Locations: [location('Bridge')],
      Datastreams: [
        // Fields that need quoting, a line break inside one, a backslash, an empty text and a JSON null.
        datastream('Cyclists, "per hour"', { Observations: [
          { phenomenonTime: '2020-01-01T00:00:00Z', result: 'two\nlines, a \\ backslash' },
          { phenomenonTime: '2020-01-01T01:00:00Z/2020-01-01T02:00:00Z', resultTime: '2020-01-01T02:00:00.123Z', result: '' },
          { phenomenonTime: '2020-01-01T03:00:00Z', result: null },
          { phenomenonTime: '2020-01-01T04:00:00Z', result: { list: [1, 'a,b'] } },
        ] }),
        datastream('', { Observations: [{ phenomenonTime: '2020-01-01T00:00:00Z', result: 7 }] }),
      ],
    }));
    assert.equal(created.statusCode, 201, created.body);
    const busy = (await sta.request('GET', "/Datastreams?$filter=name eq ''&$expand=Observations($expand=FeatureOfInterest)")).json().value[0];
    // More than the sockets' buffers hold: a paused reader keeps the COPY waiting.
    await sql`insert into ${sql.id(`ds_${sta.datasetId.replaceAll('-', '')}`, 'observations')}
        (datastream_id, phenomenon_time_start, phenomenon_time_end, result, feature_of_interest_id)
      select ${busy['@iot.id']}::bigint, t, t, to_jsonb(i), ${busy.Observations[0].FeatureOfInterest['@iot.id']}::bigint
      from generate_series(1, ${OBSERVATIONS}) i, lateral (select timestamptz '2021-01-01T00:00:00Z' + i * interval '1 second' as t) s`.execute(t.ctx.db);
  });
  after(() => t?.close());

  /** The connections running this dataset's COPY (not their parallel workers). */
  const copying = async () => (await sql<{ pid: number }>`
    select pid from pg_stat_activity where backend_type = 'client backend' and query like 'copy (%'
      and query like ${`%ds_${sta.datasetId.replaceAll('-', '')}%`}`.execute(t.ctx.db)).rows;

  it('COPY and keyset batches write the same file; COPY only while its slot is free', async () => {
    const held = await holdDownload(url);
    await waitFor(async () => (await copying()).length === 1, { what: 'the held download\'s COPY' });
    // The slot is taken: this one is read in batches, and holds no connection after it.
    const batched = await sta.request('GET', '/download/observations.csv', undefined, { authorization: null });
    assert.equal(batched.statusCode, 200);
    assert.equal((await copying()).length, 1);
    const copied = (await held.rest()).toString();
    assert.equal(copied, batched.body, 'the same bytes both ways');

    const lines = copied.split('\r\n');
    assert.equal(lines.length, 1 + 4 + 1 + OBSERVATIONS + 1, 'the header, every Observation, and a last line end');
    assert.equal(lines[0], 'datastream_id,datastream_name,phenomenon_time,result_time,result,feature_of_interest_id');
    const cyclists = lines.slice(1, 5).map((line) => line.split(',')[0]);
    assert.equal(new Set(cyclists).size, 1);
    assert.match(copied, /,"Cyclists, ""per hour""",2020-01-01T00:00:00\.000Z,,"two\nlines, a \\ backslash",\d+\r\n/, 'a line break inside quotes stays LF');
    assert.match(copied, /,2020-01-01T01:00:00\.000Z\/2020-01-01T02:00:00\.000Z,2020-01-01T02:00:00\.123Z,"",\d+\r\n/, 'an empty text is ""');
    assert.match(copied, /,2020-01-01T03:00:00\.000Z,,,\d+\r\n/, 'a JSON null is an empty field');
    assert.match(copied, /,2020-01-01T04:00:00\.000Z,,"{""list"": \[1, ""a,b""\]}",\d+\r\n/);
    assert.match(copied, /^\d+,"",2020-01-01T00:00:00\.000Z,,7,\d+$/m, 'an empty name is ""');
    assert.equal(lines.at(-1), '');
    await waitFor(async () => (await copying()).length === 0, { what: 'the COPY connection to close' });
  });

  it('a client that goes away ends its COPY, and the slot serves the next download', async () => {
    const held = await holdDownload(url);
    await waitFor(async () => (await copying()).length === 1, { what: 'the held download\'s COPY' });
    held.leave();
    await waitFor(async () => (await copying()).length === 0, { what: 'the COPY to end after its client left', timeoutMs: 10_000 });
    const next = await holdDownload(url);
    await waitFor(async () => (await copying()).length === 1, { what: 'the next download to COPY' });
    const body = await next.rest();
    assert.equal(body.toString().split('\r\n').length, 1 + 5 + OBSERVATIONS + 1);
  });

  it('a backend terminated in the middle: the transfer breaks off, and the next download is whole', async () => {
    const held = await holdDownload(url);
    const [backend] = await waitFor(async () => {
      const found = await copying();
      return found.length === 1 ? found : undefined;
    }, { what: 'the held download\'s COPY' });
    await sql`select pg_terminate_backend(${backend!.pid})`.execute(t.ctx.db);
    await assert.rejects(held.rest(), 'the body breaks off instead of ending');
    const whole = await sta.request('GET', '/download/observations.csv', undefined, { authorization: null });
    assert.equal(whole.statusCode, 200);
    assert.equal(whole.body.split('\r\n').length, 1 + 5 + OBSERVATIONS + 1);
  });
});
