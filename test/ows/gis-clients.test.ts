import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { bearer } from '../helpers/factories.js';
import { publishDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { DEBIAN_PYTHON, missing, requireGdal, requireMapServer, requirePostgis, requirePythonModule } from '../helpers/requirements.js';
import { advertised, listeningOwsApp, ogc, parseXml } from './ows-helpers.js';
import { REPOSITORY } from '../helpers/repository.js';

const run = promisify(execFile);
type Json = Record<string, any>;

const skip = missing(requireMapServer(), requireGdal(), await requirePostgis(), requirePythonModule('owslib', 'python3-owslib'));
const skipQgis = skip || missing(requirePythonModule('qgis.core', 'python3-qgis'));
const clients = path.join(REPOSITORY, 'test', 'ows', 'clients');

const CONTACT = { organization: 'City of Exampleton GIS desk', email: 'gis@example.org' };

const site = (x: number, y: number, properties: Json) => ({ type: 'Feature', geometry: { type: 'Point', coordinates: [x, y] }, properties });
/** Three sites with every attribute type; their box is 8.60 50.05 8.70 50.20. */
const SITES = [
  site(8.60, 50.10, { label: 'a', active: true, seen: '2024-05-01T10:00:00Z', visits: 3, score: 1.5 }),
  site(8.70, 50.20, { label: 'b', active: false, seen: '2024-05-02T12:30:00+02:00', visits: 4_000_000_000, score: 2.25 }),
  site(8.65, 50.05, { label: 'c', active: null, seen: null, visits: null, score: null }),
];
const BBOX = [8.60, 50.05, 8.70, 50.20];
/** What capabilities advertise for the data's box: grown by 1% of its span on each side (the contract). */
const ADVERTISED = advertised(BBOX);

const near = (actual: number[] | null | undefined, expected: number[], what: string, tolerance = 1e-4) => {
  assert.ok(actual, `${what}: no box`);
  assert.equal(actual.length, expected.length, what);
  actual.forEach((value, i) => assert.ok(Math.abs(value - expected[i]!) <= tolerance, `${what}: ${JSON.stringify(actual)} is not ${JSON.stringify(expected)}`));
};

/**
 * The GIS clients Debian has (OWSLib, GDAL, QGIS) read our WFS and WMS without a stumble: they
 * follow the URLs the capabilities advertise, so the gateway listens where DATA_API_URL says.
 */
describe('GIS clients read the OWS named APIs (postgres, real MapServer, OWSLib, GDAL, QGIS)', { skip }, () => {
  let t: TestApp;
  let closed: PublishedDataset;
  let open: PublishedDataset;
  let closedDataset: Json;
  let ids: number[];
  let dataApiUrl: string;
  let workDir: string;
  before(async () => {
    ({ t, dataApiUrl } = await listeningOwsApp({ OWS_EXTENT_REFRESH_MS: '0', OWS_CONTACT_ORGANIZATION: CONTACT.organization, OWS_CONTACT_EMAIL: CONTACT.email }));
    workDir = await mkdtemp(path.join(tmpdir(), 'gis-'));
    closed = await publishDataset(t, { standard: 'OWS', slug: 'parks' });
    open = await publishDataset(t, { standard: 'OWS', slug: 'citymap', openDataAccess: true });
    closedDataset = (await t.app.inject({ method: 'GET', url: `/v1/datasets/${closed.datasetId}`, headers: bearer(t.adminToken) })).json();
    for (const dataset of [closed, open]) {
      const created = await dataset.request('POST', '/collections', {
        name: 'sites', title: 'Inspection sites', geometryType: 'Point',
        properties: { label: 'string', active: 'boolean', seen: 'date-time', visits: 'integer', score: 'number' },
      });
      assert.equal(created.statusCode, 201, created.body);
      const added = await dataset.request('POST', '/collections/sites/items', { type: 'FeatureCollection', features: SITES });
      assert.equal(added.statusCode, 201, added.body);
      ids = added.json().ids;
    }
  });
  after(async () => {
    await t?.close();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  const urlOf = (dataset: PublishedDataset) => `${dataApiUrl}${dataset.base}`;
  const python = async (script: string, args: Json) => {
    const { stdout } = await run(DEBIAN_PYTHON, [path.join(clients, script), JSON.stringify(args)], {
      env: { PATH: process.env.PATH, HOME: workDir, QT_QPA_PLATFORM: 'offscreen', XDG_RUNTIME_DIR: workDir, PYTHONDONTWRITEBYTECODE: '1' },
      maxBuffer: 16 * 1024 * 1024, timeout: 180_000,
    });
    return JSON.parse(stdout.trim().split('\n').at(-1)!) as Json;
  };
  const gdal = (args: string[], token: string | null) => run('ogrinfo', args, {
    env: { PATH: process.env.PATH, HOME: workDir, GDAL_HTTP_TIMEOUT: '30', CPL_DEBUG: 'OFF', ...(token ? { GDAL_HTTP_HEADERS: `Authorization: Bearer ${token}` } : {}) },
    maxBuffer: 16 * 1024 * 1024,
  });

  test('capabilities name the dataset and the operator, never the internal map name nor MapServer comments', async () => {
    const requests = [['WFS', '1.0.0'], ['WFS', '1.1.0'], ['WFS', '2.0.0'], ['WMS', '1.3.0'], ['WMS', '1.1.1']];
    for (const [service, version] of requests) {
      const response = await ogc(closed, { SERVICE: service!, VERSION: version!, REQUEST: 'GetCapabilities' });
      assert.equal(response.statusCode, 200, response.body.slice(0, 300));
      parseXml(response);
      assert.doesNotMatch(response.body, /ds_[0-9a-f]{32}/, `${service} ${version} names the internal map`);
      assert.doesNotMatch(response.body, /<!--/, `${service} ${version} carries a comment`);
      assert.ok(response.body.includes(closedDataset.name), `${service} ${version} has the dataset's name`);
      assert.ok(response.body.includes(closedDataset.description), `${service} ${version} has the dataset's description`);
      if (service === 'WMS' || version !== '1.0.0') {
        assert.ok(response.body.includes(CONTACT.organization), `${service} ${version} names the operator`);
        assert.ok(response.body.includes(CONTACT.email), `${service} ${version} has the operator's e-mail address`);
      }
    }
  });

  test('OWSLib parses WFS 1.0.0, 1.1.0, 2.0.0 and WMS 1.3.0: titles, keywords, contact and extents from the data', async () => {
    const read = await python('owslib_read.py', { url: urlOf(closed), token: t.adminToken, typenames: { '1.0.0': 'sites', '1.1.0': 'parks:sites', '2.0.0': 'parks:sites' }, layer: 'sites', bbox110: [8.59, 50.09, 8.61, 50.11] });
    for (const version of ['1.0.0', '1.1.0', '2.0.0']) {
      const wfs = read[`wfs${version}`];
      // WFS 1.0.0 capabilities name feature types without the namespace prefix (MapServer's way; requests take either).
      assert.equal(wfs.title, closedDataset.name, version);
      assert.equal(wfs.abstract, closedDataset.description, version);
      // WFS 1.0.0 has one Keywords text (OWSLib gives it as it is), later versions one element per keyword.
      const keywords = version === '1.0.0' ? wfs.keywords.join(' ').split(/\s*\n\s*/) : wfs.keywords;
      assert.ok(keywords.includes(closedDataset.name), `${version}: ${JSON.stringify(wfs.keywords)}`);
      assert.deepEqual(wfs.typenames, [version === '1.0.0' ? 'sites' : 'parks:sites'], version);
      assert.equal(wfs.layerTitle, 'Inspection sites', version);
      near(wfs.wgs84, ADVERTISED, `WFS ${version} WGS84 box`);
    }
    assert.equal(read['wfs1.1.0'].provider, CONTACT.organization);
    assert.equal(read['wfs2.0.0'].provider, CONTACT.organization);
    assert.equal(read.wms.title, closedDataset.name);
    assert.ok(read.wms.keywords.includes(closedDataset.name));
    assert.equal(read.wms.organization, CONTACT.organization);
    assert.deepEqual(read.wms.layers, ['parks', 'sites'], 'the root layer is named by the slug');
    near(read.wms.wgs84, ADVERTISED, 'WMS layer WGS84 box');
    // A box in the URN's latitude/longitude finds the one site inside, written latitude first and labelled so.
    assert.equal(read.bbox110.members, 1, read.bbox110.text);
    assert.match(read.bbox110.text, /srsName="urn:ogc:def:crs:EPSG::4326"/);
    assert.match(read.bbox110.text, /<gml:pos>50\.1\d* 8\.6\d*<\/gml:pos>/);
  });

  test('DescribeFeatureType gives each property the XSD type of its values, the geometry its GML type', async () => {
    const expected = { fid: 'xsd:long', label: 'xsd:string', active: 'xsd:boolean', seen: 'xsd:dateTime', visits: 'xsd:long', score: 'xsd:double', geom: 'gml:PointPropertyType' };
    for (const [version, typeParam] of [['1.0.0', 'TYPENAME'], ['1.1.0', 'TYPENAME'], ['2.0.0', 'TYPENAMES']]) {
      const response = await ogc(closed, { SERVICE: 'WFS', VERSION: version!, REQUEST: 'DescribeFeatureType', [typeParam!]: 'parks:sites' });
      assert.equal(response.statusCode, 200, response.body.slice(0, 300));
      parseXml(response);
      // XML Schema bound to `xsd` alone: OWSLib's reader read no property while it was also the default namespace.
      assert.doesNotMatch(response.body, /xmlns="http:\/\/www\.w3\.org\/2001\/XMLSchema"/, version);
      const declared = Object.fromEntries([...response.body.matchAll(/<xsd:element name="(\w+)"[^>]*?type="([^"]+)"/g)].filter((m) => m[1] !== 'sites').map((m) => [m[1], m[2]]));
      const geometryType = version === '1.0.0' ? 'gml:PointPropertyType' : expected.geom;
      assert.deepEqual(declared, { ...expected, geom: geometryType }, version);
      assert.doesNotMatch(response.body, /TimeInstantType|<!--/);
    }
  });

  test('ogrinfo reads the field types (boolean, date-time, 64-bit integer), the values and the extent', async () => {
    for (const version of ['1.1.0', '2.0.0']) {
      const source = `WFS:${urlOf(closed)}?SERVICE=WFS&VERSION=${version}`;
      const summary = (await gdal(['-ro', '-so', '-al', source], t.adminToken)).stdout;
      assert.match(summary, /active: Integer\(Boolean\)/, `${version}\n${summary}`);
      assert.match(summary, /seen: DateTime/, version);
      assert.match(summary, /visits: Integer64/, version);
      assert.match(summary, /score: Real/, version);
      assert.match(summary, /label: String/, version);
      assert.match(summary, /Extent: \(8\.600000, 50\.050000\) - \(8\.700000, 50\.200000\)/, `${version}\n${summary}`);
      const features = (await gdal(['-ro', '-al', '-q', source, '-where', "label = 'b'"], t.adminToken)).stdout;
      assert.match(features, /active \(Integer\(Boolean\)\) = 0/, `${version}\n${features}`);
      assert.match(features, /seen \(DateTime\) = 2024\/05\/02 10:30:00(\+00)?/, `${version}\n${features}`);
      assert.match(features, /visits \(Integer64\) = 4000000000/, version);
      assert.match(features, /POINT \(8\.7 50\.2\)/, `${version}: longitude first in GDAL's own order\n${features}`);
    }
  });

  test('QGIS loads the WFS layer (1.1.0, 2.0.0) with typed fields, true/false and date-times, filters by box on the server, and the WMS layer', { skip: skipQgis }, async () => {
    const read = await python('qgis_read.py', { url: urlOf(open), typename: 'citymap:sites', layer: 'sites', rect: [8.59, 50.09, 8.61, 50.11] });
    for (const version of ['1.1.0', '2.0.0']) {
      const wfs = read[`wfs${version}`];
      assert.equal(wfs.valid, true, `${version}: ${wfs.error}`);
      // QGIS 3.22 (Debian 12) reads an xsd:boolean property as text; later releases as a boolean.
      const textual = wfs.fields.active === 'QString';
      assert.ok(textual || wfs.fields.active === 'bool', `${version}: ${JSON.stringify(wfs.fields)} (QGIS ${read.qgis})`);
      assert.equal(wfs.fields.seen, 'QDateTime', version);
      assert.equal(wfs.fields.visits, 'qlonglong', version);
      assert.equal(wfs.fields.score, 'double', version);
      assert.equal(wfs.fields.label, 'QString', version);
      const byLabel = Object.fromEntries(wfs.features.map((feature: Json) => [feature.label, feature]));
      assert.equal(byLabel.a.active, textual ? 'true' : true, version);
      assert.equal(byLabel.b.active, textual ? 'false' : false, version);
      assert.equal(byLabel.c.active, null, version);
      assert.equal(byLabel.a.seen, '2024-05-01T10:00:00Z', version);
      assert.equal(byLabel.b.seen, '2024-05-02T10:30:00Z', version);
      assert.equal(byLabel.b.visits, 4_000_000_000, version);
      near([byLabel.a.x, byLabel.a.y], [8.60, 50.10], `${version}: QGIS's own x/y`);
      near(wfs.extent, BBOX, `${version}: layer extent`);
      assert.deepEqual(wfs.inRect, ['a'], version);
    }
    assert.equal(read.wms.valid, true, read.wms.error);
    near(read.wms.extent, ADVERTISED, 'WMS layer extent');
  });

  test('WFS GeoJSON features carry their id, as the collection routes do', async () => {
    const response = await ogc(closed, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetFeature', TYPENAMES: 'parks:sites', OUTPUTFORMAT: 'application/json' });
    assert.equal(response.statusCode, 200, response.body.slice(0, 300));
    const body = response.json();
    assert.deepEqual(body.features.map((feature: Json) => feature.id).sort((a: number, b: number) => a - b), ids);
    const items = (await closed.request('GET', '/collections/sites/items')).json();
    for (const feature of body.features) {
      const same = items.features.find((item: Json) => item.id === feature.id);
      assert.equal(same.properties.label, feature.properties.label, 'the id names the same feature on both routes');
      assert.equal('fid' in feature.properties, false);
      // The same values, booleans as true/false; date-times the same instant (WFS writes whole
      // seconds); a null attribute is left out by MapServer's GeoJSON.
      const instant = (properties: Json) => Object.fromEntries(Object.entries(properties).filter(([, value]) => value !== null && value !== undefined)
        .map(([name, value]) => [name, name === 'seen' ? Date.parse(value) : value]));
      assert.deepEqual(instant(feature.properties), instant(same.properties));
    }
  });

  test('a WFS filter on a boolean attribute, in GML and in GeoJSON', async () => {
    const filterOn = (literal: string) => `<fes:Filter xmlns:fes="http://www.opengis.net/fes/2.0"><fes:PropertyIsEqualTo><fes:ValueReference>active</fes:ValueReference><fes:Literal>${literal}</fes:Literal></fes:PropertyIsEqualTo></fes:Filter>`;
    const labels = async (literal: string) => {
      const response = await ogc(closed, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetFeature', TYPENAMES: 'parks:sites', OUTPUTFORMAT: 'application/json', FILTER: filterOn(literal) });
      assert.equal(response.statusCode, 200, response.body.slice(0, 300));
      return response.json().features.map((feature: Json) => feature.properties.label);
    };
    assert.deepEqual(await labels('true'), ['a']);
    assert.deepEqual(await labels('false'), ['b']);
    const gml = await ogc(closed, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetFeature', TYPENAMES: 'parks:sites', FILTER: filterOn('true') });
    assert.equal(gml.statusCode, 200, gml.body.slice(0, 300));
    assert.match(gml.body, /<parks:active>true<\/parks:active>/);
    assert.doesNotMatch(gml.body, /<parks:label>b</);
  });

  test('extents follow the data: a site added far away widens the capabilities\' boxes', async () => {
    const added = await open.request('POST', '/collections/sites/items', site(9.5, 51.5, { label: 'far' }));
    assert.equal(added.statusCode, 201, added.body);
    const wfs = await ogc(open, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetCapabilities' }, { authorization: null });
    const box = parseXml(wfs).WFS_Capabilities.FeatureTypeList.FeatureType.WGS84BoundingBox;
    near([...String(box.LowerCorner).split(' '), ...String(box.UpperCorner).split(' ')].map(Number), advertised([8.60, 50.05, 9.5, 51.5]), 'WFS 2.0.0 WGS84 box');
    const wms = await ogc(open, { SERVICE: 'WMS', VERSION: '1.3.0', REQUEST: 'GetCapabilities' }, { authorization: null });
    const layer = parseXml(wms).WMS_Capabilities.Capability.Layer.Layer;
    const geographic = layer.EX_GeographicBoundingBox;
    near([geographic.westBoundLongitude, geographic.southBoundLatitude, geographic.eastBoundLongitude, geographic.northBoundLatitude].map(Number), advertised([8.60, 50.05, 9.5, 51.5]), 'WMS box');
  });
});

/**
 * Layer extents are not rewritten per feature write: within OWS_EXTENT_REFRESH_MS a capabilities
 * document keeps the extent it had, and GetFeature is never cut to that (stale) extent.
 */
describe('layer extents between refreshes (postgres, real MapServer)', { skip: missing(requireMapServer(), await requirePostgis()) }, () => {
  let t: TestApp;
  let dataset: PublishedDataset;
  before(async () => {
    t = await buildTestApp('postgres', { OWS_EXTENT_REFRESH_MS: '600000' });
    dataset = await publishDataset(t, { standard: 'OWS', slug: 'lamps' });
    assert.equal((await dataset.request('POST', '/collections', { name: 'lamps', geometryType: 'Point', properties: { label: 'string' } })).statusCode, 201);
    assert.equal((await dataset.request('POST', '/collections/lamps/items', site(8.6, 50.1, { label: 'near' }))).statusCode, 201);
  });
  after(async () => { await t?.close(); });

  const wgs84Box = async () => {
    const box = parseXml(await ogc(dataset, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetCapabilities' })).WFS_Capabilities.FeatureTypeList.FeatureType.WGS84BoundingBox;
    return [...String(box.LowerCorner).split(' '), ...String(box.UpperCorner).split(' ')].map(Number);
  };

  test('a feature added outside the advertised extent: the extent waits for the refresh, GetFeature finds the feature at once', async () => {
    near(await wgs84Box(), [8.6, 50.1, 8.6, 50.1], 'first extent');
    assert.equal((await dataset.request('POST', '/collections/lamps/items', site(9.5, 51.5, { label: 'far' }))).statusCode, 201);
    near(await wgs84Box(), [8.6, 50.1, 8.6, 50.1], 'extent within the refresh period');
    const features = await ogc(dataset, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetFeature', TYPENAMES: 'lamps:lamps', OUTPUTFORMAT: 'application/json' });
    assert.deepEqual(features.json().features.map((feature: Json) => feature.properties.label).sort(), ['far', 'near']);
    const filter = '<fes:Filter xmlns:fes="http://www.opengis.net/fes/2.0"><fes:PropertyIsEqualTo><fes:ValueReference>label</fes:ValueReference><fes:Literal>far</fes:Literal></fes:PropertyIsEqualTo></fes:Filter>';
    const filtered = await ogc(dataset, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetFeature', TYPENAMES: 'lamps:lamps', OUTPUTFORMAT: 'application/json', FILTER: filter });
    assert.equal(filtered.statusCode, 200, filtered.body.slice(0, 300));
    assert.deepEqual(filtered.json().features.map((feature: Json) => feature.properties.label), ['far']);
    // A new collection rewrites the map at once, with every extent as it is now.
    assert.equal((await dataset.request('POST', '/collections', { name: 'benches', geometryType: 'Point', properties: {} })).statusCode, 201);
    const boxes = parseXml(await ogc(dataset, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetCapabilities' })).WFS_Capabilities.FeatureTypeList.FeatureType;
    const lamps = boxes.find((type: Json) => type.Name === 'lamps:lamps').WGS84BoundingBox;
    near([...String(lamps.LowerCorner).split(' '), ...String(lamps.UpperCorner).split(' ')].map(Number), advertised([8.6, 50.1, 9.5, 51.5]), 'extent after the map was rewritten');
  });

  test('a collection in another SRID (UTM 32N): its WGS 84 box in capabilities, its features in GetFeature', async () => {
    const created = await dataset.request('POST', '/collections', { name: 'masts', geometryType: 'Point', srid: 25832, properties: { label: 'string' } });
    assert.equal(created.statusCode, 201, created.body);
    const added = await dataset.request('POST', '/collections/masts/items', { type: 'FeatureCollection', features: [
      { type: 'Feature', geometry: { type: 'Point', coordinates: [475000, 5550000] }, properties: { label: 'west' } },
      { type: 'Feature', geometry: { type: 'Point', coordinates: [480000, 5555000] }, properties: { label: 'east' } },
    ] });
    assert.equal(added.statusCode, 201, added.body);
    const types = parseXml(await ogc(dataset, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetCapabilities' })).WFS_Capabilities.FeatureTypeList.FeatureType;
    const box = types.find((type: Json) => type.Name === 'lamps:masts').WGS84BoundingBox;
    // UTM 32N (475000, 5550000) and (480000, 5555000) are 8.6504 E 50.1017 N and 8.7201 E 50.1469 N
    // (PROJ's gdaltransform); the box of the transformed box is a little wider.
    near([...String(box.LowerCorner).split(' '), ...String(box.UpperCorner).split(' ')].map(Number), advertised([8.6504, 50.1017, 8.7201, 50.1469]), 'UTM collection box', 0.001);
    const features = await ogc(dataset, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetFeature', TYPENAMES: 'lamps:masts', OUTPUTFORMAT: 'application/json' });
    assert.deepEqual(features.json().features.map((feature: Json) => feature.properties.label).sort(), ['east', 'west']);
  });
});
