// The pool's fair share on the real mapserv: per-caller limits, round-robin lines, queue timeout.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { onePointMapFolder } from './one-point-map.js';
import { locateMapServer, MapServerPool, MapServerQueueTimeoutError, type MapServerPoolOptions } from '../../src/ows/mapserver-pool.js';
import { missing, requireMapServer } from '../helpers/requirements.js';

const binaries = locateMapServer();


describe('MapServerPool: fair share between callers (real mapserv)', { skip: missing(requireMapServer()) }, () => {
  let dir: string;
  const pools: MapServerPool[] = [];
  before(() => {
    ({ dir } = onePointMapFolder('mapserv-fair-'));
  });
  after(async () => {
    await Promise.all(pools.map((pool) => pool.stop()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const startPool = async (options: Partial<MapServerPoolOptions>) => {
    const pool = new MapServerPool({
      size: 1, runtimeDir: path.join(dir, `run-${pools.length}`), mapserv: binaries!.mapserv, spawnFcgi: binaries!.spawnFcgi,
      env: { MAPSERVER_CONFIG_FILE: path.join(dir, 'mapserver.conf') }, requestTimeoutMs: 30_000, maxQueue: 100,
      log: { info: () => {}, warn: () => {}, error: () => {} }, ...options,
    });
    pools.push(pool);
    await pool.start();
    // Listening for sure (spawn-fcgi's socket file exists a moment before it listens, and a request
    // refused then goes back to its line, which would change the orders compared below).
    assert.equal((await pool.run(request('SERVICE=WMS&VERSION=1.3.0&REQUEST=GetCapabilities'))).status, 200);
    return pool;
  };
  const request = (query: string) => ({
    REQUEST_METHOD: 'GET', SERVER_PROTOCOL: 'HTTP/1.1', SCRIPT_NAME: '/ows', SERVER_NAME: 'localhost', SERVER_PORT: '80', CONTENT_LENGTH: '0',
    QUERY_STRING: `map=M&${query}`,
  });
  const getMap = (size: number) => request(`SERVICE=WMS&VERSION=1.3.0&REQUEST=GetMap&LAYERS=pts&STYLES=&CRS=EPSG:4326&BBOX=-90,-180,90,180&WIDTH=${size}&HEIGHT=${size}&FORMAT=image/png`);
  const capabilities = () => request('SERVICE=WMS&VERSION=1.3.0&REQUEST=GetCapabilities');

  /** Runs the callers' requests (submitted in this order, at once) and returns who finished in which order. */
  async function finishingOrder(pool: MapServerPool, jobs: Array<[string, Record<string, string>]>): Promise<string[]> {
    const order: string[] = [];
    await Promise.all(jobs.map(([caller, params], i) => pool.run(params, undefined, undefined, undefined, caller).then((answer) => {
      assert.equal(answer.status, 200);
      order.push(`${caller}${i}`);
    })));
    return order;
  }

  test('one caller\'s backlog waits in its own line: another caller\'s request is served right after the one running', async () => {
    const pool = await startPool({ maxPerCaller: 1 });
    const order = await finishingOrder(pool, [
      ['a', getMap(2048)], ['a', getMap(2048)], ['a', getMap(2048)], ['a', getMap(2048)], ['b', capabilities()],
    ]);
    assert.deepEqual(order, ['a0', 'b4', 'a1', 'a2', 'a3']);
  });

  test('control: without a per-caller limit, a fills both places of the worker first and b waits for three of a\'s', async () => {
    const pool = await startPool({});
    const order = await finishingOrder(pool, [
      ['a', getMap(2048)], ['a', getMap(2048)], ['a', getMap(2048)], ['a', getMap(2048)], ['b', capabilities()],
    ]);
    // Lines still take turns: a2 was a's turn before b's.
    assert.deepEqual(order, ['a0', 'a1', 'a2', 'b4', 'a3']);
  });

  test('the share is work-conserving: a caller alone has every idle worker; once another caller waits, only its share', async () => {
    const pool = await startPool({ size: 3, maxPerCaller: 1 });
    const run = (caller: string, params: Record<string, string>) => pool.run(params, undefined, undefined, undefined, caller);
    // Three workers, a share of 1: the lone caller's three maps run at once, none waits.
    const alone = [run('a', getMap(2048)), run('a', getMap(2048)), run('a', getMap(2048))];
    assert.equal(pool.waiting, 0, 'no worker idles while a request waits');
    // Every worker busy: b, within its share, takes a place in a worker's backlog at once; a's
    // fourth waits in its line (a has more than its share running and b is served).
    const mixed = [run('b', capabilities()), run('a', getMap(2048))];
    assert.equal(pool.waiting, 1);
    for (const answer of await Promise.all([...alone, ...mixed])) assert.equal(answer.status, 200);
  });

  test('lines are served round-robin between callers with backlogs', async () => {
    const pool = await startPool({ maxPerCaller: 1 });
    const order = await finishingOrder(pool, [
      ['a', getMap(1024)], ['a', getMap(1024)], ['a', getMap(1024)], ['b', getMap(1024)], ['b', getMap(1024)], ['c', getMap(1024)],
    ]);
    // a0 and b3 are handed over at once (one served, one in the worker's backlog); then a place
    // goes to each line in turn, a caller with one running being passed over.
    assert.deepEqual(order, ['a0', 'b3', 'a1', 'b4', 'c5', 'a2']);
  });

  test('a request waiting longer than queueTimeoutMs fails with MapServerQueueTimeoutError; the running one is answered, the line empties', async () => {
    const pool = await startPool({ maxPerCaller: 1, queueTimeoutMs: 1 });
    const results = await Promise.allSettled([pool.run(getMap(1024), undefined, undefined, undefined, 'a'), pool.run(getMap(1024), undefined, undefined, undefined, 'a')]);
    assert.equal(results[0].status, 'fulfilled');
    assert.equal(results[1].status, 'rejected');
    assert.ok((results[1] as PromiseRejectedResult).reason instanceof MapServerQueueTimeoutError);
    assert.equal(pool.waiting, 0);
    assert.equal((await pool.run(capabilities(), undefined, undefined, undefined, 'a')).status, 200);
  });
});
