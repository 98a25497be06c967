// Runs the real mapserv under spawn-fcgi; no mocks. Skipped only when either binary is missing.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  locateMapServer,
  MapServerBusyError,
  MapServerFailedError,
  MapServerPool,
  MapServerTimeoutError,
  type MapServerPoolOptions,
} from '../../src/ows/mapserver-pool.js';
import { missing, requireMapServer } from '../helpers/requirements.js';
import { REPOSITORY } from '../helpers/repository.js';

const binaries = locateMapServer();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const mapfile = (name: string, layer: string) => `MAP
  NAME "${name}"
  EXTENT -180 -90 180 90
  SIZE 256 256
  PROJECTION "init=epsg:4326" END
  WEB
    METADATA
      "ows_enable_request" "*"
      "ows_onlineresource" "http://example/ows?"
      "ows_title" "${name}"
      "ows_srs" "EPSG:4326"
    END
  END
  LAYER
    NAME "${layer}"
    TYPE POINT
    STATUS ON
    PROJECTION "init=epsg:4326" END
    METADATA "ows_title" "${layer}" END
    FEATURE POINTS 10 50 END END
    CLASS STYLE COLOR 255 0 0 SIZE 8 END END
  END
END
`;

const config = (dir: string, maps: Record<string, string>) => `CONFIG
  ENV
    MS_MAP_PATTERN "^${dir}/"
  END
  MAPS
${Object.entries(maps)
  .map(([alias, file]) => `    ${alias} "${file}"`)
  .join('\n')}
  END
END
`;

const get = (query: string) => ({
  REQUEST_METHOD: 'GET',
  QUERY_STRING: query,
  SCRIPT_NAME: '/mapserv',
  SERVER_NAME: 'localhost',
  SERVER_PORT: '80',
  SERVER_PROTOCOL: 'HTTP/1.1',
  CONTENT_LENGTH: '0',
});
const capabilities = (map = 'M1') => get(`map=${map}&SERVICE=WMS&VERSION=1.3.0&REQUEST=GetCapabilities`);
const getMap = (size: number) =>
  get(`map=M1&SERVICE=WMS&VERSION=1.3.0&REQUEST=GetMap&LAYERS=pts&STYLES=&CRS=EPSG:4326&BBOX=-90,-180,90,180&WIDTH=${size}&HEIGHT=${size}&FORMAT=image/png`);
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function until(what: string, check: () => boolean, ms = 5000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** SO_ACCEPTCON in /proc/net/unix's flags: the socket listens. */
const UNIX_LISTENING = 0x10000;

/**
 * The Unix sockets that listen (read from /proc/net/unix; null where there is no such file).
 * The pool counts a worker ready once spawn-fcgi's socket file exists, which is from bind(), a moment
 * before listen(): a request then is refused and tried again on a new connection, so the tests that
 * count connections wait for every socket to listen first.
 */
function listeningSockets(): Set<string> | null {
  let table: string;
  try {
    table = fs.readFileSync('/proc/net/unix', 'utf8');
  } catch {
    return null;
  }
  const found = new Set<string>();
  for (const line of table.split('\n').slice(1)) {
    const [, , , flags, , , , socketPath] = line.trim().split(/\s+/);
    if (socketPath && (Number.parseInt(flags ?? '0', 16) & UNIX_LISTENING) !== 0) found.add(socketPath);
  }
  return found;
}

describe('MapServerPool (real mapserv over FastCGI)', { skip: missing(requireMapServer()) }, () => {
  let dir: string;
  let configFile: string;
  const pools: MapServerPool[] = [];
  const logs: { level: string; obj: object; msg: string }[] = [];

  const startPool = async (o: Partial<MapServerPoolOptions> = {}, { awaitListening = true } = {}) => {
    const runtimeDir = path.join(dir, `run-${pools.length}`);
    const pool = new MapServerPool({
      size: 2,
      runtimeDir,
      mapserv: binaries!.mapserv,
      spawnFcgi: binaries!.spawnFcgi,
      env: { MAPSERVER_CONFIG_FILE: configFile },
      requestTimeoutMs: 10_000,
      maxQueue: 100,
      log: {
        info: (obj, msg) => logs.push({ level: 'info', obj, msg }),
        warn: (obj, msg) => logs.push({ level: 'warn', obj, msg }),
        error: (obj, msg) => logs.push({ level: 'error', obj, msg }),
      },
      ...o,
    });
    pools.push(pool);
    await pool.start();
    if (!awaitListening) return pool;
    const sockets = Array.from({ length: pool.pids().length }, (_, i) => path.join(o.runtimeDir ?? runtimeDir, `mapserv-${i}.sock`));
    await until('every worker to listen', () => {
      const listening = listeningSockets();
      return listening === null || sockets.every((socket) => listening.has(socket));
    });
    return pool;
  };

  before(() => {
    dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'mapserv-pool-')));
    fs.writeFileSync(path.join(dir, 'm1.map'), mapfile('m1', 'pts'));
    configFile = path.join(dir, 'mapserver.conf');
    fs.writeFileSync(configFile, config(dir, { M1: path.join(dir, 'm1.map') }));
  });
  after(async () => {
    await Promise.all(pools.map((p) => p.stop()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('answers WMS capabilities, OWS exceptions with status 400, PNG maps and XML POSTs', async () => {
    const pool = await startPool();

    const caps = await pool.run(capabilities());
    assert.equal(caps.status, 200);
    assert.match(caps.headers['content-type']!, /text\/xml/);
    assert.match(caps.body.toString(), /<WMS_Capabilities[\s\S]*<Name>pts<\/Name>/);

    const bad = await pool.run(get('map=M1&SERVICE=WFS&VERSION=2.0.0&REQUEST=Foo'));
    assert.equal(bad.status, 400);
    assert.match(bad.body.toString(), /ExceptionReport/);

    const png = await pool.run(getMap(64));
    assert.equal(png.status, 200);
    assert.equal(png.headers['content-type'], 'image/png');
    assert.deepEqual(png.body.subarray(0, 8), PNG_SIGNATURE);

    // The query string names only the map: everything else must come through FastCGI STDIN.
    const xml = Buffer.from(
      '<?xml version="1.0"?><GetFeature xmlns="http://www.opengis.net/wfs/2.0" service="WFS" version="2.0.0"><Query typeNames="pts"/></GetFeature>',
    );
    const post = await pool.run({ ...get('map=M1'), REQUEST_METHOD: 'POST', CONTENT_TYPE: 'text/xml', CONTENT_LENGTH: String(xml.length) }, xml);
    assert.equal(post.status, 200);
    assert.match(post.body.toString(), /<wfs:FeatureCollection[\s\S]*numberReturned="1"[\s\S]*<ms:pts/);
  });

  test('50 concurrent requests on 2 workers: the same 2 processes answer all, a connection per request', async () => {
    const pool = await startPool({ size: 2 });
    const before = pool.pids();
    assert.equal(before.length, 2);
    const answers = await Promise.all(Array.from({ length: 50 }, () => pool.run(capabilities())));
    for (const a of answers) {
      assert.equal(a.status, 200);
      assert.match(a.body.toString(), /<Name>pts<\/Name>/);
    }
    assert.deepEqual(pool.pids(), before);
    assert.equal(pool.connects, 50);
  });

  test('spawn-fcgi -n execs mapserv in place: the pids are mapserv processes', { skip: process.platform !== 'linux' && 'reads /proc (Linux only)' }, async () => {
    const pool = await startPool({ size: 1 });
    const [pid] = pool.pids();
    // spawn-fcgi listens before it execs, and the pool counts a worker ready once a connection is
    // accepted into its backlog: right after start() the process may still be spawn-fcgi. An answered request proves the
    // exec has happened (spawn-fcgi itself speaks no FastCGI); the pid must then be mapserv, unchanged.
    assert.equal((await pool.run(capabilities())).status, 200);
    assert.deepEqual(pool.pids(), [pid], 'no other process took the worker\'s place');
    assert.equal(fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim(), 'mapserv');
    assert.equal(fs.realpathSync(`/proc/${pid}/exe`), fs.realpathSync(binaries!.mapserv));
  });

  /** A stand-in for spawn-fcgi that binds the socket, waits `seconds`, then listens and execs mapserv on it. */
  const slowSpawnFcgi = (seconds: number) => {
    const file = path.join(dir, `slow-spawn-fcgi-${seconds}`);
    fs.writeFileSync(
      file,
      [
        '#!/usr/bin/env python3',
        'import os, socket, sys, time',
        'args = sys.argv[1:]',
        "program = args[args.index('--') + 1:]",
        'listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)',
        "listener.bind(args[args.index('-s') + 1])",
        `time.sleep(${seconds})`,
        'listener.listen(16)',
        'os.dup2(listener.fileno(), 0)',
        'os.execv(program[0], program)',
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    return file;
  };

  test('a worker is ready once it listens, not when its socket file appears: its first requests are the ones it serves', async () => {
    // spawn-fcgi binds, then listens: this stand-in holds the gap open for 300 ms. A worker counted
    // ready in the gap got a refused connection, its request went back to the queue, and the one
    // written behind it was taken for the request being served (and failed when the worker died).
    const pool = await startPool({ size: 1, spawnFcgi: slowSpawnFcgi(0.3) }, { awaitListening: false });
    const socket = path.join(dir, `run-${pools.length - 1}`, 'mapserv-0.sock');
    const listening = listeningSockets();
    if (listening) assert.ok(listening.has(socket), 'start() resolved before the worker listened');
    const [pid] = pool.pids();
    const served = pool.run(getMap(4096));
    const waiting = pool.run(capabilities());
    process.kill(pid!, 'SIGKILL');
    await assert.rejects(served, MapServerFailedError);
    const answer = await waiting;
    assert.equal(answer.status, 200);
    assert.match(answer.body.toString(), /<Name>pts<\/Name>/);
  });

  test('a worker slow to start, as on a busy machine, is waited for: the pool starts and serves', async () => {
    // Two seconds between bind and listen: the pool once gave up after a hundred 10 ms tries (about
    // a second), so that a busy machine's slow process start failed the whole pool.
    const pool = await startPool({ size: 1, spawnFcgi: slowSpawnFcgi(2) }, { awaitListening: false });
    const answer = await pool.run(capabilities());
    assert.equal(answer.status, 200);
    assert.match(answer.body.toString(), /<Name>pts<\/Name>/);
  });

  test('queue beyond maxQueue is refused with MapServerBusyError', async () => {
    const pool = await startPool({ size: 1, maxQueue: 1 });
    // The worker takes two (one served, one in its backlog), the queue one more; the fourth is refused.
    const results = await Promise.allSettled([pool.run(getMap(512)), pool.run(capabilities()), pool.run(capabilities()), pool.run(capabilities())]);
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'fulfilled', 'rejected']);
    assert.ok((results[3] as PromiseRejectedResult).reason instanceof MapServerBusyError);
  });

  test('a worker killed with SIGKILL is respawned while requests keep succeeding', async () => {
    const pool = await startPool({ size: 2 });
    const [victim, survivor] = pool.pids();
    const noticed = () => logs.some((l) => l.msg === 'MapServer worker exited' && (l.obj as { pid?: number }).pid === victim);
    process.kill(victim!, 'SIGKILL');
    // A request sent between the kill and Node seeing the exit still goes to the dead worker and fails
    // (no retry: MapServer requests need not be idempotent), so wait for the pool to notice.
    await until('the exit to be noticed', noticed);
    assert.deepEqual(pool.pids(), [survivor], 'respawn is delayed, so only the survivor serves meanwhile');
    const during = await Promise.all(Array.from({ length: 10 }, () => pool.run(capabilities())));
    for (const a of during) assert.equal(a.status, 200);
    await until('a new worker', () => pool.pids().length === 2 && !pool.pids().includes(victim!));
    assert.ok(pool.pids().includes(survivor!));
    const afterwards = await Promise.all(Array.from({ length: 10 }, () => pool.run(capabilities())));
    for (const a of afterwards) assert.match(a.body.toString(), /<Name>pts<\/Name>/);
    assert.ok(logs.some((l) => l.msg === 'MapServer worker exited' && (l.obj as { pid?: number; signal?: string }).pid === victim && (l.obj as { signal?: string }).signal === 'SIGKILL'));
  });

  test('the request in flight when its worker dies rejects with MapServerFailedError', async () => {
    const pool = await startPool({ size: 1 });
    const [pid] = pool.pids();
    const inFlight = pool.run(getMap(4096));
    process.kill(pid!, 'SIGKILL');
    await assert.rejects(inFlight, MapServerFailedError);
    const next = await pool.run(capabilities());
    assert.equal(next.status, 200);
    assert.notDeepEqual(pool.pids(), [pid]);
  });

  test('when a worker dies, the request waiting in its backlog was never read: another worker answers it', async () => {
    const pool = await startPool({ size: 2 });
    const [first] = pool.pids();
    const served = pool.run(getMap(4096)); // the first worker
    const other = pool.run(getMap(1024)); // the second
    const waiting = pool.run(capabilities()); // the first worker's backlog
    process.kill(first!, 'SIGKILL');
    await assert.rejects(served, MapServerFailedError);
    const answer = await waiting;
    assert.equal(answer.status, 200);
    assert.match(answer.body.toString(), /<Name>pts<\/Name>/);
    assert.equal((await other).status, 200);
  });

  test('a request over the timeout rejects with MapServerTimeoutError, its worker is replaced', async () => {
    const pool = await startPool({ size: 1, requestTimeoutMs: 1 });
    const [pid] = pool.pids();
    await assert.rejects(pool.run(getMap(4096)), MapServerTimeoutError);
    await until('the stuck worker to be killed', () => !alive(pid!));
    const next = await pool.run(capabilities(), undefined, 10_000);
    assert.equal(next.status, 200);
    assert.equal(pool.pids().length, 1);
    assert.notEqual(pool.pids()[0], pid);
  });

  test('a queued request whose client went away is dropped, never drawn; the one in progress finishes', async () => {
    const pool = await startPool({ size: 1 });
    const busy = pool.run(getMap(2048));
    const next = pool.run(capabilities()); // in the worker's backlog
    const gone = new AbortController();
    const queued = pool.run(getMap(2048), undefined, undefined, gone.signal);
    gone.abort();
    await assert.rejects(queued, MapServerFailedError);
    assert.equal((await busy).status, 200);
    assert.equal((await next).status, 200);
    assert.equal((await pool.run(capabilities())).status, 200);
    assert.equal(pool.connects, 3, 'the dropped request never reached MapServer');
  });

  test('stop() kills every worker, removes the sockets, and is safe to call twice', async () => {
    const pool = await startPool({ size: 3 });
    const pids = pool.pids();
    const runtimeDir = path.join(dir, `run-${pools.length - 1}`);
    assert.equal(fs.readdirSync(runtimeDir).filter((f) => f.endsWith('.sock')).length, 3);
    const started = Date.now();
    await Promise.all([pool.stop(), pool.stop()]);
    // Idle mapserv ignores its first SIGTERM until a request comes; the second one must do it, not the 2 s SIGKILL.
    assert.ok(Date.now() - started < 1500, `stop took ${Date.now() - started} ms`);
    for (const pid of pids) assert.equal(alive(pid), false, `worker ${pid} still alive`);
    assert.deepEqual(fs.readdirSync(runtimeDir), []);
    assert.deepEqual(pool.pids(), []);
    await assert.rejects(pool.run(capabilities()), MapServerFailedError);
    await pool.stop();
  });

  test('a running worker sees mapfile edits on the next request (no restart needed)', async () => {
    const file = path.join(dir, 'edit.map');
    fs.writeFileSync(file, mapfile('edit', 'before'));
    const pool = await startPool({ size: 1 });
    const pid = pool.pids()[0];
    assert.match((await pool.run(get(`map=${file}&SERVICE=WMS&VERSION=1.3.0&REQUEST=GetCapabilities`))).body.toString(), /<Name>before<\/Name>/);
    fs.writeFileSync(file, mapfile('edit', 'after'));
    const caps = (await pool.run(get(`map=${file}&SERVICE=WMS&VERSION=1.3.0&REQUEST=GetCapabilities`))).body.toString();
    assert.match(caps, /<Name>after<\/Name>/);
    assert.doesNotMatch(caps, /<Name>before<\/Name>/);
    assert.deepEqual(pool.pids(), [pid]);
  });

  test('a running worker does NOT see a new MAPS alias; reload() replaces workers without failing requests', async () => {
    const pool = await startPool({ size: 2 });
    const oldPids = pool.pids();
    // mapserv loads the config file on its first request, not at exec: warm both workers first.
    await Promise.all([pool.run(capabilities()), pool.run(capabilities())]);
    fs.writeFileSync(path.join(dir, 'm2.map'), mapfile('m2', 'pts2'));
    fs.writeFileSync(configFile, config(dir, { M1: path.join(dir, 'm1.map'), M2: path.join(dir, 'm2.map') }));

    // The config is read once per process: M2 is unknown to the running workers, which treat it as a
    // map path failing MS_MAP_PATTERN and answer an HTML "MapServer Message" page with status 200.
    for (let i = 0; i < 4; i++) {
      const stale = await pool.run(capabilities('M2'));
      assert.doesNotMatch(stale.body.toString(), /<Name>pts2<\/Name>/);
      assert.equal(stale.status, 200);
      assert.match(stale.body.toString(), /MapServer Message[\s\S]*&quot;map&quot; fails to validate/);
    }

    let stopLoad = false;
    const load = (async () => {
      let n = 0;
      while (!stopLoad) {
        const a = await pool.run(capabilities('M1'));
        assert.equal(a.status, 200);
        n++;
      }
      return n;
    })();
    await pool.reload();
    stopLoad = true;
    assert.ok((await load) > 0);

    const fresh = pool.pids();
    assert.equal(fresh.length, 2);
    for (const pid of oldPids) assert.ok(!fresh.includes(pid));
    const answers = await Promise.all(Array.from({ length: 4 }, () => pool.run(capabilities('M2'))));
    for (const a of answers) assert.match(a.body.toString(), /<Name>pts2<\/Name>/);
  });

  test('a worker that has served nothing yet reads the config file on its first request', async () => {
    const pool = await startPool({ size: 1 });
    fs.writeFileSync(path.join(dir, 'm3.map'), mapfile('m3', 'pts3'));
    fs.writeFileSync(configFile, config(dir, { M1: path.join(dir, 'm1.map'), M3: path.join(dir, 'm3.map') }));
    assert.match((await pool.run(capabilities('M3'))).body.toString(), /<Name>pts3<\/Name>/);
  });

  test('workers do not outlive a Node process that exits without stop()', { skip: process.platform !== 'linux' && 'reads /proc (Linux only)' }, async () => {
    const poolModule = path.join(REPOSITORY, 'src', 'ows', 'mapserver-pool.ts');
    const script = `
      import { MapServerPool } from ${JSON.stringify(poolModule)};
      const log = { info() {}, warn() {}, error() {} };
      const pool = new MapServerPool({ size: 2, runtimeDir: ${JSON.stringify(path.join(dir, 'run-exit'))}, mapserv: ${JSON.stringify(binaries!.mapserv)},
        spawnFcgi: ${JSON.stringify(binaries!.spawnFcgi)}, env: { MAPSERVER_CONFIG_FILE: ${JSON.stringify(configFile)} }, requestTimeoutMs: 5000, maxQueue: 1, log });
      await pool.start();
      console.log(JSON.stringify(pool.pids()));
      process.exit(0);`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
    const pids = JSON.parse(out) as number[];
    assert.equal(pids.length, 2);
    // Killed children of a dead parent may linger as zombies until PID 1 reaps them: check the state.
    const gone = (pid: number) => {
      try {
        return !alive(pid) || /^State:\s+Z/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
      } catch {
        return true; // reaped between the two checks
      }
    };
    await until('orphaned workers to die', () => pids.every(gone));
  });
});
