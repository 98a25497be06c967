import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { expectProblem } from '../helpers/factories.js';
import { publishDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { assertOnPublicRoute, decodePng, isGreen, isRed, ogc, parseXml, plantTrees, squareStyle } from './ows-helpers.js';
import { missing, requireMapServer, requirePostgis } from '../helpers/requirements.js';

type Json = Record<string, any>;

// WFS and WMS of a released OWS named API, through the gateway to the real MapServer pool over
// PostGIS. PostgreSQL only: embedded PGlite answers 503 (tested with the feature collections).
const skip = missing(requireMapServer(), await requirePostgis());

// WMS 1.3.0 in EPSG:4326 orders the box latitude first. 100×100 pixels over 0.25° × 0.2°.
const MAP_1_3 = { SERVICE: 'WMS', VERSION: '1.3.0', REQUEST: 'GetMap', LAYERS: 'trees', STYLES: '', CRS: 'EPSG:4326', BBOX: '50.0,8.55,50.25,8.75', WIDTH: '100', HEIGHT: '100', FORMAT: 'image/png' };
/** The oak (8.60 E, 50.10 N) in that image. */
const OAK = { x: 25, y: 60 };

describe('WFS and WMS through the gateway (postgres, real MapServer)', { skip }, () => {
  let t: TestApp;
  let ows: PublishedDataset;
  before(async () => {
    t = await buildTestApp('postgres');
    ows = await publishDataset(t, {
      standard: 'OWS', slug: 'green-city',
      styles: [{ name: 'classic', sldContent: squareStyle('trees', '#ff0000') }, { name: 'spring', sldContent: squareStyle('trees', '#00ff00') }],
    });
    await plantTrees(ows);
  });
  after(() => t?.close());

  test('WFS 2.0 GetCapabilities: the collection as {slug}:{name}, every URL on the public route, no database detail', async () => {
    const response = await ogc(ows, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetCapabilities' });
    assert.equal(response.statusCode, 200, response.body.slice(0, 500));
    const doc = parseXml(response);
    const types = [doc.WFS_Capabilities.FeatureTypeList.FeatureType].flat();
    assert.deepEqual(types.map((type: Json) => type.Name), ['green-city:trees']);
    assert.equal(types[0].Title, 'Street trees');
    assertOnPublicRoute(response.body, ows.publicBase);
    assert.doesNotMatch(response.body, /127\.0\.0\.1|5432|postgres|ds_[0-9a-f]{32}/i);
  });

  test('WFS 2.0 GetFeature as GeoJSON with count, startIndex, sortBy, bbox and a FES 2.0 filter; resultType=hits counts', async () => {
    const base = { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetFeature', TYPENAMES: 'green-city:trees', OUTPUTFORMAT: 'application/json' };
    const all = await ogc(ows, base);
    assert.equal(all.statusCode, 200, all.body.slice(0, 500));
    assert.match(String(all.headers['content-type']), /application\/json/);
    const names = (response: { json(): Json }) => response.json().features.map((feature: Json) => feature.properties.name);
    assert.deepEqual(names(all).sort(), ['bench <1>', 'lime', 'oak']);
    assert.deepEqual(all.json().features.find((f: Json) => f.properties.name === 'oak').geometry, { type: 'Point', coordinates: [8.6, 50.1] });

    // MapServer 8.0 sorts the page by text, even a number (MapServer issue #5866): sorted by name here.
    assert.deepEqual(names(await ogc(ows, { ...base, SORTBY: 'name DESC', COUNT: '2' })), ['oak', 'lime']);
    assert.deepEqual(names(await ogc(ows, { ...base, SORTBY: 'name DESC', COUNT: '2', STARTINDEX: '2' })), ['bench <1>']);
    // WFS 2.0 with a CRS-qualified bbox: x,y order in CRS84.
    assert.deepEqual(names(await ogc(ows, { ...base, BBOX: '8.55,50.0,8.62,50.15,urn:ogc:def:crs:OGC:1.3:CRS84' })), ['oak']);
    const filter = '<fes:Filter xmlns:fes="http://www.opengis.net/fes/2.0"><fes:PropertyIsEqualTo><fes:ValueReference>kind</fes:ValueReference><fes:Literal>bench</fes:Literal></fes:PropertyIsEqualTo></fes:Filter>';
    assert.deepEqual(names(await ogc(ows, { ...base, FILTER: filter })), ['bench <1>']);

    const hits = await ogc(ows, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetFeature', TYPENAMES: 'green-city:trees', RESULTTYPE: 'hits' });
    assert.equal(parseXml(hits).FeatureCollection['@numberMatched'], '3');
  });

  test('WFS 2.0 GetFeature in GML 3.2 and DescribeFeatureType; WFS 1.1.0 and 1.0.0 still answer', async () => {
    const gml = await ogc(ows, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetFeature', TYPENAMES: 'green-city:trees', COUNT: '1', SORTBY: 'name' });
    assert.equal(gml.statusCode, 200);
    assert.match(String(gml.headers['content-type']), /gml\/3\.2/);
    assert.equal(parseXml(gml).FeatureCollection.member.trees.name, 'bench <1>');

    const schema = await ogc(ows, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'DescribeFeatureType', TYPENAMES: 'green-city:trees' });
    assert.equal(schema.statusCode, 200);
    const elements = JSON.stringify(parseXml(schema));
    for (const attribute of ['name', 'kind', 'height']) assert.match(elements, new RegExp(`"@name":"${attribute}"`));

    for (const version of ['1.1.0', '1.0.0']) {
      const response = await ogc(ows, { SERVICE: 'WFS', VERSION: version, REQUEST: 'GetFeature', TYPENAME: 'green-city:trees', MAXFEATURES: '10' });
      assert.equal(response.statusCode, 200, `${version}: ${response.body.slice(0, 300)}`);
      const members = JSON.stringify(parseXml(response));
      for (const name of ['oak', 'lime']) assert.match(members, new RegExp(`"${name}"`), version);
      const capabilities = await ogc(ows, { SERVICE: 'WFS', VERSION: version, REQUEST: 'GetCapabilities' });
      assert.equal(capabilities.statusCode, 200);
      assertOnPublicRoute(capabilities.body, ows.publicBase);
    }
  });

  test('WMS 1.3.0 GetCapabilities lists the layer with the dataset\'s styles; 1.1.1 answers too, all URLs public', async () => {
    const response = await ogc(ows, { SERVICE: 'WMS', VERSION: '1.3.0', REQUEST: 'GetCapabilities' });
    assert.equal(response.statusCode, 200);
    const doc = parseXml(response);
    const layers = [doc.WMS_Capabilities.Capability.Layer.Layer].flat();
    const trees = layers.find((layer: Json) => layer.Name === 'trees');
    assert.ok(trees, JSON.stringify(layers));
    assert.deepEqual([trees.Style].flat().map((style: Json) => style.Name), ['classic', 'spring']);
    assertOnPublicRoute(response.body, ows.publicBase);
    const old = await ogc(ows, { SERVICE: 'WMS', VERSION: '1.1.1', REQUEST: 'GetCapabilities' });
    assert.equal(old.statusCode, 200);
    assertOnPublicRoute(old.body, ows.publicBase);
  });

  test('WMS GetMap draws with the SLD styles: the first by default, another by STYLES=<name>', async () => {
    const plain = decodePng(await ogc(ows, MAP_1_3));
    assert.equal(plain.width, 100);
    assert.ok(isRed(plain.at(OAK.x, OAK.y)), `oak pixel ${plain.at(OAK.x, OAK.y)}`);
    assert.ok(plain.count(isRed) >= 3 * 100, 'three red squares');
    assert.equal(plain.count(isGreen), 0);
    assert.deepEqual(plain.at(2, 2).slice(0, 3), [255, 255, 255], 'background');

    const spring = decodePng(await ogc(ows, { ...MAP_1_3, STYLES: 'spring' }));
    assert.ok(isGreen(spring.at(OAK.x, OAK.y)));
    assert.equal(spring.count(isRed), 0);
    const classic = decodePng(await ogc(ows, { ...MAP_1_3, STYLES: 'classic' }));
    assert.ok(isRed(classic.at(OAK.x, OAK.y)));
  });

  test('WMS GetMap in EPSG:3857, as JPEG, and in WMS 1.1.1 (x,y order)', async () => {
    // Web Mercator box around the trees.
    const mercator = decodePng(await ogc(ows, { ...MAP_1_3, CRS: 'EPSG:3857', BBOX: '952000,6446000,975000,6480000' }));
    assert.ok(mercator.count(isRed) > 100, 'the trees are drawn in EPSG:3857');
    const jpeg = await ogc(ows, { ...MAP_1_3, FORMAT: 'image/jpeg' });
    assert.equal(jpeg.statusCode, 200);
    assert.equal(jpeg.headers['content-type'], 'image/jpeg');
    assert.deepEqual([...jpeg.rawPayload.subarray(0, 3)], [0xff, 0xd8, 0xff]);
    const { CRS: _crs, ...rest } = MAP_1_3;
    const v111 = decodePng(await ogc(ows, { ...rest, VERSION: '1.1.1', SRS: 'EPSG:4326', BBOX: '8.55,50.0,8.75,50.25' }));
    assert.ok(isRed(v111.at(OAK.x, OAK.y)));
  });

  test('WMS GetFeatureInfo in application/json, text/html and text/plain lists the feature\'s attributes', async () => {
    const info = (format: string) => ogc(ows, {
      ...MAP_1_3, REQUEST: 'GetFeatureInfo', QUERY_LAYERS: 'trees', INFO_FORMAT: format, I: String(OAK.x), J: String(OAK.y), FEATURE_COUNT: '1',
    });
    const json = await info('application/json');
    assert.equal(json.statusCode, 200, json.body.slice(0, 400));
    assert.deepEqual(json.json().features.map((f: Json) => [f.properties.name, f.properties.height]), [['oak', 12.5]]);
    const html = await info('text/html');
    assert.match(String(html.headers['content-type']), /text\/html/);
    assert.match(html.body, /<th>name<\/th><td>oak<\/td>/);
    assert.match(html.body, /<th>height<\/th><td>12\.5<\/td>/);
    const text = await info('text/plain');
    assert.match(text.body, /name = 'oak'/);
    assert.match(text.body, /kind = 'tree'/);
  });

  test('WMS GetLegendGraphic draws the chosen style', async () => {
    const legend = (style: string) => ogc(ows, { SERVICE: 'WMS', VERSION: '1.3.0', REQUEST: 'GetLegendGraphic', LAYER: 'trees', STYLE: style, FORMAT: 'image/png', SLD_VERSION: '1.1.0' });
    assert.ok(decodePng(await legend('')).count(isRed) > 10);
    assert.ok(decodePng(await legend('spring')).count(isGreen) > 10);
  });

  test('invalid OGC requests answer an OGC exception report with 400', async () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'Dance' }, /ExceptionReport/],
      [{ SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetFeature', TYPENAMES: 'green-city:nothing' }, /ExceptionReport/],
      [{ ...MAP_1_3, LAYERS: 'nothing' }, /LayerNotDefined/],
      [{ ...MAP_1_3, STYLES: 'baroque' }, /StyleNotDefined/],
      [{ ...MAP_1_3, CRS: 'EPSG:999999' }, /ServiceException/],
    ];
    for (const [params, report] of cases) {
      const response = await ogc(ows, params);
      assert.equal(response.statusCode, 400, `${JSON.stringify(params)}: ${response.body.slice(0, 300)}`);
      parseXml(response);
      assert.match(response.body, report);
    }
    // A REQUEST without SERVICE: the gateway's own exception report, never MapServer's message page.
    const bare = await ows.request('GET', '?REQUEST=GetMap');
    assert.equal(bare.statusCode, 400);
    parseXml(bare);
    assert.match(bare.body, /ServiceExceptionReport/);
    assert.doesNotMatch(bare.body, /MapServer/);
    // Without SERVICE and REQUEST the base is OGC API – Features' landing page.
    const landing = await ows.request('GET', '');
    assert.equal(landing.statusCode, 200);
    assert.ok(landing.json().links.some((link: Record<string, string>) => link.rel === 'service-desc'));
  });

  test('a caller cannot pick another map, an SLD URL or change the mapfile through parameters', async () => {
    const other = await publishDataset(t, { standard: 'OWS', slug: 'secret' });
    const created = await other.request('POST', '/collections', { name: 'hidden', geometryType: 'Point', properties: {} });
    assert.equal(created.statusCode, 201);
    const alias = `ds_${other.datasetId.replaceAll('-', '')}_secret`;
    const capabilities = await ogc(ows, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetCapabilities', map: alias, MAP: '/etc/passwd' });
    assert.equal(capabilities.statusCode, 200);
    assert.doesNotMatch(capabilities.body, /hidden/);
    assert.match(capabilities.body, /green-city:trees/);
    // An SLD URL is dropped (MapServer would fetch it); the dataset's own style still draws.
    const drawn = decodePng(await ogc(ows, { ...MAP_1_3, SLD: 'http://169.254.169.254/latest/meta-data' }));
    assert.ok(isRed(drawn.at(OAK.x, OAK.y)));
    const modified = await ogc(ows, { ...MAP_1_3, 'map.layer[trees]': 'STATUS OFF' });
    assert.ok(isRed(decodePng(modified).at(OAK.x, OAK.y)));
  });

  test('an XML POST of GetFeature is served as MapServer reads it', async () => {
    const getFeature = `<?xml version="1.0"?>
<wfs:GetFeature service="WFS" version="2.0.0" outputFormat="application/json" xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:fes="http://www.opengis.net/fes/2.0">
  <wfs:Query typeNames="green-city:trees"><fes:Filter><fes:PropertyIsEqualTo><fes:ValueReference>name</fes:ValueReference><fes:Literal>lime</fes:Literal></fes:PropertyIsEqualTo></fes:Filter></wfs:Query>
</wfs:GetFeature>`;
    const posted = await ows.request('POST', '', getFeature, { 'content-type': 'text/xml' });
    assert.equal(posted.statusCode, 200, posted.body.slice(0, 500));
    assert.deepEqual(posted.json().features.map((f: Json) => f.properties.name), ['lime']);
  });

  test('a collection created or dropped shows in the capabilities at once', async () => {
    const wfsTypes = async () => {
      const doc = parseXml(await ogc(ows, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetCapabilities' }));
      return [doc.WFS_Capabilities.FeatureTypeList?.FeatureType ?? []].flat().map((type: Json) => type.Name).sort();
    };
    const created = await ows.request('POST', '/collections', { name: 'benches', geometryType: 'Point', properties: { seats: 'integer' } });
    assert.equal(created.statusCode, 201);
    assert.deepEqual(await wfsTypes(), ['green-city:benches', 'green-city:trees']);
    assert.equal((await ows.request('DELETE', '/collections/benches')).statusCode, 204);
    assert.deepEqual(await wfsTypes(), ['green-city:trees']);
  });

  test('a released OWS API without collections answers GetCapabilities with no feature types or layers', async () => {
    const empty = await publishDataset(t, { standard: 'OWS', slug: 'empty' });
    const wfs = await ogc(empty, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetCapabilities' });
    assert.equal(wfs.statusCode, 200, wfs.body.slice(0, 300));
    assert.equal(parseXml(wfs).WFS_Capabilities.FeatureTypeList?.FeatureType, undefined);
    const wms = await ogc(empty, { SERVICE: 'WMS', VERSION: '1.3.0', REQUEST: 'GetCapabilities' });
    assert.equal(wms.statusCode, 200);
    const capability = parseXml(wms).WMS_Capabilities.Capability;
    assert.ok(capability.Request.GetMap);
    assert.equal(capability.Layer?.Layer, undefined);
    assert.doesNotMatch(wfs.body + wms.body, /__none/);
  });

  test('paths below the base other than /collections are 404, methods other than GET and POST 405; MapServer keeps answering', async () => {
    expectProblem(await ows.request('GET', '/wfs?SERVICE=WFS'), 404, 'NOT_FOUND');
    expectProblem(await ows.request('PUT', '?SERVICE=WFS&REQUEST=GetCapabilities', '<x/>', { 'content-type': 'text/xml' }), 405, 'MALFORMED_REQUEST');
    assert.equal((await ogc(ows, { SERVICE: 'WMS', REQUEST: 'GetCapabilities' })).statusCode, 200);
  });
});
