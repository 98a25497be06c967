import assert from 'node:assert/strict';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { PNG } from 'pngjs';
import type { LightMyRequestResponse } from 'fastify';
import type { PublishedDataset } from '../helpers/sta-dataset.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { freePort } from '../faults/harness.js';

type Json = Record<string, any>;

/** An SLD document drawing `layer`'s points as squares of one colour. */
export const squareStyle = (layer: string, fill: string, size = 12) => `<?xml version="1.0" encoding="UTF-8"?>
<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld" xmlns:ogc="http://www.opengis.net/ogc">
  <NamedLayer>
    <Name>${layer}</Name>
    <UserStyle>
      <Title>${fill} squares</Title>
      <FeatureTypeStyle>
        <Rule>
          <Name>all</Name>
          <PointSymbolizer><Graphic><Mark><WellKnownName>square</WellKnownName><Fill><CssParameter name="fill">${fill}</CssParameter></Fill></Mark><Size>${size}</Size></Graphic></PointSymbolizer>
        </Rule>
      </FeatureTypeStyle>
    </UserStyle>
  </NamedLayer>
</StyledLayerDescriptor>`;

/** The extent capabilities advertise for a data box: 1% of the span added on each side, at least 1e-6 degrees. */
export function advertised([minx, miny, maxx, maxy]: readonly number[]): number[] {
  const dx = Math.max((maxx! - minx!) / 100, 1e-6);
  const dy = Math.max((maxy! - miny!) / 100, 1e-6);
  return [minx! - dx, miny! - dy, maxx! + dx, maxy! + dy];
}

const point = (x: number, y: number, properties: Json) => ({ type: 'Feature', geometry: { type: 'Point', coordinates: [x, y] }, properties });

/** Three trees around Frankfurt, one bench: what the WFS and WMS tests read back. */
export const TREES = [
  point(8.60, 50.10, { name: 'oak', kind: 'tree', height: 12.5 }),
  point(8.70, 50.20, { name: 'lime', kind: 'tree', height: 7 }),
  point(8.65, 50.05, { name: 'bench <1>', kind: 'bench', height: 0.5 }),
];

/** Creates the `trees` collection and adds TREES; returns their ids. */
export async function plantTrees(ows: PublishedDataset): Promise<number[]> {
  const created = await ows.request('POST', '/collections', { name: 'trees', title: 'Street trees', geometryType: 'Point', properties: { name: 'string', kind: 'string', height: 'number' } });
  assert.equal(created.statusCode, 201, created.body);
  const added = await ows.request('POST', '/collections/trees/items', { type: 'FeatureCollection', features: TREES });
  assert.equal(added.statusCode, 201, added.body);
  return added.json().ids;
}

/** An OGC request on the API's base: `params` become the query string. */
export const ogc = (ows: PublishedDataset, params: Record<string, string>, headers?: Record<string, string | null>) =>
  ows.request('GET', `?${new URLSearchParams(params)}`, undefined, headers);

const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@', removeNSPrefix: true, processEntities: true });

/** A well-formed XML answer, parsed (namespace prefixes removed). */
export function parseXml(response: LightMyRequestResponse): Json {
  assert.match(String(response.headers['content-type']), /xml/, response.body.slice(0, 300));
  const valid = XMLValidator.validate(response.body);
  assert.equal(valid, true, `not well-formed XML: ${JSON.stringify(valid)}`);
  return xml.parse(response.body);
}

/**
 * Every service URL a capabilities document advertises (online resources, xlink:href, DCP
 * GET/POST), which must all be on the route's public base. Schema locations and namespace URIs
 * (OGC's, W3C's) are not service URLs.
 */
export function advertisedUrls(body: string): string[] {
  const urls = [...body.matchAll(/(?:xlink:href|onlineResource|href)="([^"]+)"/gi)].map((match) => match[1]!.replaceAll('&amp;', '&'));
  return urls.filter((url) => !/^https?:\/\/(schemas\.opengis\.net|www\.opengis\.net|www\.w3\.org)\//.test(url));
}

export function assertOnPublicRoute(body: string, publicBase: string): void {
  const urls = advertisedUrls(body);
  assert.ok(urls.length > 0, 'the document advertises no URL');
  for (const url of urls) assert.ok(url.startsWith(publicBase), `${url} is not on the public route ${publicBase}`);
}

/** A PNG answer, decoded: `at(x, y)` gives the pixel's [r, g, b, a]. */
export function decodePng(response: LightMyRequestResponse) {
  assert.equal(response.statusCode, 200, response.body.slice(0, 500));
  assert.equal(response.headers['content-type'], 'image/png');
  const png = PNG.sync.read(response.rawPayload);
  const at = (x: number, y: number) => [...png.data.subarray((y * png.width + x) * 4, (y * png.width + x) * 4 + 4)];
  const count = (match: (rgba: number[]) => boolean) => {
    let n = 0;
    for (let i = 0; i < png.data.length; i += 4) if (match([...png.data.subarray(i, i + 4)])) n += 1;
    return n;
  };
  return { width: png.width, height: png.height, at, count };
}

export const isRed = ([r, g, b]: number[]) => r! > 200 && g! < 60 && b! < 60;
export const isGreen = ([r, g, b]: number[]) => g! > 200 && r! < 60 && b! < 60;

/**
 * A PostgreSQL test app whose data API listens on a free port that `DATA_API_URL` names: real GIS
 * clients (GDAL, OWSLib, QGIS) follow the URLs the capabilities advertise, so they must reach it.
 */
export async function listeningOwsApp(env: Record<string, string> = {}): Promise<{ t: TestApp; dataApiUrl: string }> {
  const port = await freePort();
  const dataApiUrl = `http://127.0.0.1:${port}`;
  const t = await buildTestApp('postgres', { DATA_API_URL: dataApiUrl, ...env });
  await (await t.dataApi()).listen({ host: '127.0.0.1', port });
  return { t, dataApiUrl };
}
