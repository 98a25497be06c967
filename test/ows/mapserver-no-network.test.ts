// Defence in depth behind the gateway's allowlist: MapServer itself, given an SLD URL or an SLD
// with an external graphic, fetches nothing with the environment the OWS server gives its workers.
// The control (the same requests without that environment) shows the canary would hear a fetch.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { onePointMapFolder } from './one-point-map.js';
import { locateMapServer, MapServerPool } from '../../src/ows/mapserver-pool.js';
import { NO_NETWORK } from '../../src/ows/ows-server.js';
import { missing, requireMapServer } from '../helpers/requirements.js';

const binaries = locateMapServer();


describe('MapServer fetches nothing from the network (real mapserv)', { skip: missing(requireMapServer()) }, () => {
  let dir: string;
  let canary: http.Server;
  let C: string;
  const hits: string[] = [];
  const pools: MapServerPool[] = [];

  before(async () => {
    canary = http.createServer((request, response) => {
      hits.push(`${request.method} ${request.url}`);
      response.end('<StyledLayerDescriptor version="1.0.0"/>');
    });
    canary.on('connection', () => hits.push('connection'));
    await new Promise<void>((resolve) => canary.listen(0, '127.0.0.1', resolve));
    C = `http://127.0.0.1:${(canary.address() as AddressInfo).port}`;
    ({ dir } = onePointMapFolder('mapserv-no-network-'));
  });
  after(async () => {
    await Promise.all(pools.map((pool) => pool.stop()));
    await new Promise((resolve) => canary?.close(resolve));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const startPool = async (env: Record<string, string>) => {
    const pool = new MapServerPool({
      size: 1, runtimeDir: path.join(dir, `run-${pools.length}`), mapserv: binaries!.mapserv, spawnFcgi: binaries!.spawnFcgi,
      env: { MAPSERVER_CONFIG_FILE: path.join(dir, 'mapserver.conf'), ...env }, requestTimeoutMs: 20_000, maxQueue: 10,
      log: { info: () => {}, warn: () => {}, error: () => {} },
    });
    pools.push(pool);
    await pool.start();
    return pool;
  };
  const getMap = (extra: string, env: Record<string, string>) => ({
    ...env, REQUEST_METHOD: 'GET', SERVER_PROTOCOL: 'HTTP/1.1', SCRIPT_NAME: '/ows', SERVER_NAME: 'localhost', SERVER_PORT: '80', CONTENT_LENGTH: '0',
    QUERY_STRING: `map=M&SERVICE=WMS&VERSION=1.3.0&REQUEST=GetMap&LAYERS=pts&STYLES=&CRS=EPSG:4326&BBOX=-90,-180,90,180&WIDTH=64&HEIGHT=64&FORMAT=image/png&${extra}`,
  });
  const requests = () => [
    `SLD=${encodeURIComponent(`${C}/by-url`)}`,
    `SLD_BODY=${encodeURIComponent(`<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld" xmlns:xlink="http://www.w3.org/1999/xlink"><NamedLayer><Name>pts</Name><UserStyle><FeatureTypeStyle><Rule><PointSymbolizer><Graphic><ExternalGraphic><OnlineResource xlink:type="simple" xlink:href="${C}/graphic.png"/><Format>image/png</Format></ExternalGraphic><Size>20</Size></Graphic></PointSymbolizer></Rule></FeatureTypeStyle></UserStyle></NamedLayer></StyledLayerDescriptor>`)}`,
  ];

  test('control: without the OWS server\'s environment, MapServer fetches an SLD URL (the canary hears it)', async () => {
    const pool = await startPool({});
    hits.length = 0;
    await pool.run(getMap(requests()[0]!, {}));
    assert.ok(hits.some((hit) => hit.includes('/by-url')), `canary heard ${JSON.stringify(hits)}`);
  });

  test('with it (proxy variables pointing at port 0, in the worker and in every request), an SLD URL and an external graphic fetch nothing', async () => {
    const pool = await startPool(NO_NETWORK);
    hits.length = 0;
    for (const extra of requests()) {
      const answer = await pool.run(getMap(extra, NO_NETWORK));
      assert.ok(answer.status < 500, `${answer.status}`);
    }
    assert.deepEqual(hits, []);
  });
});
