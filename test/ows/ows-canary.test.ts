import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { expectHtml401, expectProblem, grant, uniqueEmail } from '../helpers/factories.js';
import { publishDataset, type PublishedDataset } from '../helpers/sta-dataset.js';
import { decodePng, isGreen, isRed, ogc, parseXml, plantTrees, squareStyle } from './ows-helpers.js';
import { missing, requireMapServer, requirePostgis } from '../helpers/requirements.js';

// Attacks of issue 16, finding 1 and the OWS parts of 8: a caller's SLD (by URL, by body, hidden
// in a parameter's name), runtime mapfile changes and XML requests MapServer would act on, sent
// anonymously on open data and by a reader of a closed dataset. A canary HTTP listener records
// every connection: MapServer must never reach it, no answer is 5xx, and a caller's SLD draws
// nothing (the dataset's red style is what is drawn; the caller's styles are green).
const skip = missing(requireMapServer(), await requirePostgis());

const enc = encodeURIComponent;
const MAP = 'SERVICE=WMS&VERSION=1.3.0&REQUEST=GetMap&LAYERS=trees&STYLES=&CRS=EPSG:4326&BBOX=50.0,8.55,50.25,8.75&WIDTH=100&HEIGHT=100&FORMAT=image/png';
const LEGEND = 'SERVICE=WMS&VERSION=1.3.0&REQUEST=GetLegendGraphic&LAYER=trees&FORMAT=image/png&SLD_VERSION=1.1.0';
const INFO = `${MAP.replace('GetMap', 'GetFeatureInfo')}&QUERY_LAYERS=trees&INFO_FORMAT=text/plain&I=25&J=60`;
const GET_FEATURE = 'SERVICE=WFS&VERSION=2.0.0&REQUEST=GetFeature&TYPENAMES={slug}:trees&OUTPUTFORMAT=application/json';

describe('OWS: no caller-chosen SLD, URL or mapfile change reaches MapServer (canary listener, real MapServer)', { skip }, () => {
  let t: TestApp;
  let open: PublishedDataset;
  let closed: PublishedDataset;
  let reader: string;
  let canary: http.Server;
  let C: string;
  const hits: string[] = [];

  before(async () => {
    canary = http.createServer((request, response) => {
      hits.push(`${request.method} ${request.url}`);
      response.writeHead(200, { 'content-type': 'application/xml' });
      response.end(squareStyle('trees', '#00ff00', 30));
    });
    // A connection is enough to count: a port scanner needs no more.
    canary.on('connection', (socket) => hits.push(`connection from ${socket.remoteAddress}`));
    await new Promise<void>((resolve) => canary.listen(0, '127.0.0.1', resolve));
    C = `http://127.0.0.1:${(canary.address() as AddressInfo).port}`;
    t = await buildTestApp('postgres');
    const red = [{ name: 'red', sldContent: squareStyle('trees', '#ff0000') }];
    open = await publishDataset(t, { standard: 'OWS', slug: 'open', openDataAccess: true, styles: red });
    closed = await publishDataset(t, { standard: 'OWS', slug: 'closed', styles: red });
    await plantTrees(open);
    await plantTrees(closed);
    reader = await grant(t, uniqueEmail('reader'), ['DATASET_PAYLOAD_READ'], { scopeType: 'DATASET', scopeId: closed.datasetId });
  });
  after(async () => {
    await t?.close();
    await new Promise((resolve) => canary?.close(resolve));
  });

  /** The caller's own style, green: it must never be what MapServer draws. */
  const greenSld = () => squareStyle('trees', '#00ff00', 30);
  const externalGraphicSld = () => `<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld" xmlns:xlink="http://www.w3.org/1999/xlink"><NamedLayer><Name>trees</Name><UserStyle><FeatureTypeStyle><Rule><PointSymbolizer><Graphic><ExternalGraphic><OnlineResource xlink:type="simple" xlink:href="${C}/graphic.png"/><Format>image/png</Format></ExternalGraphic><Size>20</Size></Graphic></PointSymbolizer></Rule></FeatureTypeStyle></UserStyle></NamedLayer></StyledLayerDescriptor>`;
  const entitySld = () => `<?xml version="1.0"?><!DOCTYPE StyledLayerDescriptor [<!ENTITY e SYSTEM "${C}/xxe">]>${greenSld().replace(/^<\?xml[^>]*>/, '').replace('squares</Title>', 'squares &e;</Title>')}`;

  /** Key-value variants, appended to a GetMap (and other requests below). */
  const variants = () => [
    `SLD=${enc(`${C}/plain`)}`,
    `sld=${enc(`${C}/lower`)}`,
    `sLd=${enc(`${C}/mixed`)}`,
    // The finding: the whole pair in the name, decoded by MapServer before it splits at '='.
    enc(`SLD=${C}/in-name`),
    enc(`sld_body=${greenSld()}`),
    `SLD%3d${enc(`${C}/lower-hex`)}`,
    `SLD%3D${C}/half-encoded`,
    // Double encoding: one decode leaves %3D, which no one decodes again.
    `SLD%253D${enc(enc(`${C}/double`))}`,
    `SLD%2B=${enc(`${C}/plus-encoded`)}`,
    `SLD+=${enc(`${C}/plus`)}`,
    `+SLD=${enc(`${C}/leading-plus`)}`,
    `x=1;SLD=${enc(`${C}/semicolon`)}`,
    `x=1%26SLD%3D${enc(enc(`${C}/amp-in-value`))}`,
    `SLD%00=${enc(`${C}/nul`)}`,
    `SLD=${enc(`${C}/first`)}&SLD=${enc(`${C}/second`)}`,
    `SLD_BODY=${enc(greenSld())}`,
    `SLD_BODY=${enc(entitySld())}`,
    `SLD_BODY=${enc(externalGraphicSld())}`,
    enc(`SLD_BODY=${externalGraphicSld()}`),
    `STYLES=&SLD_BODY=${enc(greenSld())}&SLD_BODY=${enc(greenSld())}`,
    `map.layer[trees]=${enc(`CONNECTIONTYPE OGR CONNECTION "/vsicurl/${C}/vsicurl"`)}`,
    enc(`map.layer[trees].class[0].style[0]=SYMBOL "${C}/symbol.png"`),
    `map_layer_trees_connection=${enc(`${C}/underscore`)}`,
    enc(`map.web=METADATA "wms_sld_enabled" "true" END`),
    `map=${enc('/etc/passwd')}`,
    enc('map=/etc/passwd'),
    `MAP%3D${enc(`${C}/map.map`)}`,
    `mode=map&map_sld=${enc(`${C}/mode`)}`,
    `qlayer=trees&mapext=shape&imgext=${enc(`${C}/imgext`)}`,
    `EXCEPTIONS=${enc('application/vnd.ogc.se_inimage')}&SLD=${enc(`${C}/inimage`)}`,
  ];

  const record: Array<{ what: string; status: number }> = [];
  function check(what: string, response: LightMyRequestResponse, drawn = false) {
    record.push({ what, status: response.statusCode });
    assert.ok(response.statusCode < 500, `${what}: ${response.statusCode} ${response.body.slice(0, 300)}`);
    assert.doesNotMatch(response.body.slice(0, 4000), /MapServer Message|MapServer version|SUPPORTS=/, what);
    if (drawn && response.statusCode === 200 && response.headers['content-type'] === 'image/png') {
      const png = decodePng(response);
      assert.equal(png.count(isGreen), 0, `${what}: the caller's style was drawn`);
    }
    assert.deepEqual(hits, [], `${what}: MapServer reached the canary`);
  }

  for (const [who, dataset, token] of [['anonymous on open data', () => open, () => null], ['a reader', () => closed, () => reader]] as const) {
    test(`${who}: every key-value variant on GetMap, GetLegendGraphic, GetFeatureInfo and GetFeature; the canary hears nothing`, async () => {
      const headers = { authorization: token() === null ? null : `Bearer ${token()}` };
      for (const variant of variants()) {
        const map = await dataset().request('GET', `?${MAP}&${variant}`, undefined, headers);
        check(`GetMap + ${variant}`, map, true);
        if (map.statusCode === 200) assert.ok(decodePng(map).count(isRed) > 0, `GetMap + ${variant}: the dataset's style draws`);
        check(`GetLegendGraphic + ${variant}`, await dataset().request('GET', `?${LEGEND}&${variant}`, undefined, headers), true);
        check(`GetFeatureInfo + ${variant}`, await dataset().request('GET', `?${INFO}&${variant}`, undefined, headers));
        check(`GetFeature + ${variant}`, await dataset().request('GET', `?${GET_FEATURE.replace('{slug}', dataset().slug)}&${variant}`, undefined, headers));
        // As a POSTed form, with and without the variant in the query string too.
        const form = { ...headers, 'content-type': 'application/x-www-form-urlencoded' };
        check(`form GetMap + ${variant}`, await dataset().request('POST', '', `${MAP}&${variant}`, form), true);
        check(`form GetMap, query ${variant}`, await dataset().request('POST', `?${variant}`, MAP, form), true);
        check(`form GetMap, content type suffix + ${variant}`, await dataset().request('POST', '', `${MAP}&${variant}`, { ...headers, 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' }), true);
      }
      // A cookie is a parameter source for MapServer's CGI loader: the gateway never passes one.
      check('cookie', await dataset().request('GET', `?${MAP}`, undefined, { ...headers, cookie: `SLD=${C}/cookie; SLD_BODY=${enc(greenSld())}` }), true);
      // WFS FILTER with an external entity: MapServer's XML reader must not fetch it.
      const filter = `<?xml version="1.0"?><!DOCTYPE f [<!ENTITY e SYSTEM "${C}/filter">]><fes:Filter xmlns:fes="http://www.opengis.net/fes/2.0"><fes:PropertyIsEqualTo><fes:ValueReference>name</fes:ValueReference><fes:Literal>&e;</fes:Literal></fes:PropertyIsEqualTo></fes:Filter>`;
      check('FILTER with an entity', await dataset().request('GET', `?${GET_FEATURE.replace('{slug}', dataset().slug)}&FILTER=${enc(filter)}`, undefined, headers));
    });

    test(`${who}: XML POSTs with an SLD, an entity or another service's operation are refused before MapServer`, async () => {
      const headers = { authorization: token() === null ? null : `Bearer ${token()}`, 'content-type': 'text/xml' };
      const xmlGetMap = `<?xml version="1.0"?><GetMap service="WMS" version="1.1.1" xmlns="http://www.opengis.net/ows" xmlns:sld="http://www.opengis.net/sld">${externalGraphicSld().replace('<StyledLayerDescriptor', '<StyledLayerDescriptor').replace(/xmlns="http:\/\/www.opengis.net\/sld"/, 'xmlns="http://www.opengis.net/sld"')}<BoundingBox srsName="EPSG:4326"><coord><X>8.55</X><Y>50.0</Y></coord><coord><X>8.75</X><Y>50.25</Y></coord></BoundingBox><Output><Format>image/png</Format><Size><Width>100</Width><Height>100</Height></Size></Output></GetMap>`;
      const documents: Array<[string, string | Buffer]> = [
        ['XML GetMap with an SLD', xmlGetMap],
        ['a StyledLayerDescriptor root', externalGraphicSld()],
        ['GetFeature with an external entity', `<?xml version="1.0"?><!DOCTYPE wfs:GetFeature [<!ENTITY e SYSTEM "${C}/xxe">]><wfs:GetFeature service="WFS" version="2.0.0" outputFormat="application/json" xmlns:wfs="http://www.opengis.net/wfs/2.0"><wfs:Query typeNames="${dataset().slug}:trees"/>&e;</wfs:GetFeature>`],
        ['GetFeature with a parameter entity', `<!DOCTYPE x [<!ENTITY % p SYSTEM "${C}/parameter"> %p;]><wfs:GetFeature service="WFS" version="2.0.0" xmlns:wfs="http://www.opengis.net/wfs/2.0"><wfs:Query typeNames="${dataset().slug}:trees"/></wfs:GetFeature>`],
        ['two roots, the second a GetMap', `<wfs:GetFeature service="WFS" version="2.0.0" xmlns:wfs="http://www.opengis.net/wfs/2.0"><wfs:Query typeNames="${dataset().slug}:trees"/></wfs:GetFeature>${xmlGetMap.replace(/^<\?xml[^>]*>/, '')}`],
        ['a WMS GetCapabilities', '<GetCapabilities service="WMS" version="1.3.0"/>'],
        ['UTF-16', Buffer.from('\ufeff<GetCapabilities service="WFS"/>', 'utf16le')],
      ];
      for (const [what, document] of documents) {
        const response = await dataset().request('POST', `?SLD=${enc(`${C}/query`)}`, document, headers);
        if (token() === null && response.statusCode === 401) {
          // Anonymous: what the gateway cannot read as a read is never authorized as one.
          expectHtml401(response);
        } else if (response.statusCode === 403) {
          expectProblem(response, 403, 'ACCESS_DENIED');
        } else {
          assert.equal(response.statusCode, 400, `${what}: ${response.body.slice(0, 300)}`);
          parseXml(response);
          assert.match(response.body, /ExceptionReport/);
        }
        check(what, response);
      }
      // A read still passes as XML, with an SLD in the query string ignored.
      const posted = await dataset().request('POST', `?SLD=${enc(`${C}/query`)}`, `<wfs:GetFeature service="WFS" version="2.0.0" outputFormat="application/json" xmlns:wfs="http://www.opengis.net/wfs/2.0"><wfs:Query typeNames="${dataset().slug}:trees"/></wfs:GetFeature>`, headers);
      assert.equal(posted.statusCode, 200, posted.body.slice(0, 300));
      assert.equal(posted.json().features.length, 3);
      check('XML GetFeature', posted);
    });
  }

  test('a DOCTYPE in front of a WFS-T Transaction is no read: a reader gets 403, anonymous 401', async () => {
    const transaction = `<?xml version="1.0"?><!DOCTYPE wfs:Transaction><wfs:Transaction service="WFS" version="2.0.0" xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:fes="http://www.opengis.net/fes/2.0"><wfs:Delete typeName="trees"><fes:Filter><fes:ResourceId rid="trees.1"/></fes:Filter></wfs:Delete></wfs:Transaction>`;
    const denied = expectProblem(await closed.request('POST', '', transaction, { authorization: `Bearer ${reader}`, 'content-type': 'text/xml' }), 403, 'ACCESS_DENIED');
    assert.match(denied.detail, /DATASET_PAYLOAD_WRITE/);
    expectHtml401(await open.request('POST', '', transaction, { authorization: null, 'content-type': 'text/xml' }));
    // The admin may write: the gateway still refuses the document (400, its own report).
    const refused = await closed.request('POST', '', transaction, { 'content-type': 'text/xml' });
    assert.equal(refused.statusCode, 400);
    assert.match(parseXml(refused).ExceptionReport.Exception['@exceptionCode'], /InvalidParameterValue/);
    assert.match(refused.body, /DOCTYPE/);
  });

  test('bounded reading: a POSTed body beyond OWS_MAX_BODY_BYTES is 400 naming the limit, unread before authorization (an XML one counts as a write); more than 200 parameters is an exception report', async () => {
    const max = t.ctx.config.ows.maxBodyBytes;
    const big = `<wfs:GetFeature service="WFS" version="2.0.0" xmlns:wfs="http://www.opengis.net/wfs/2.0"><!-- ${'x'.repeat(max)} --></wfs:GetFeature>`;
    const form = `${MAP}&FILTER=${'x'.repeat(max)}`;
    const limited = (response: LightMyRequestResponse) => {
      const problem = expectProblem(response, 400, 'VALIDATION_FAILED');
      assert.match(problem.detail, /OWS_MAX_BODY_BYTES/);
      assert.equal(problem.fieldErrors[0].field, 'body');
    };
    for (const [body, type] of [[big, 'text/xml'], [form, 'application/x-www-form-urlencoded']] as const) {
      limited(await closed.request('POST', '', body, { 'content-type': type }));
      expectHtml401(await closed.request('POST', '', body, { authorization: null, 'content-type': type }));
    }
    limited(await closed.request('POST', '', form, { authorization: `Bearer ${reader}`, 'content-type': 'application/x-www-form-urlencoded' }));
    expectProblem(await closed.request('POST', '', big, { authorization: `Bearer ${reader}`, 'content-type': 'text/xml' }), 403, 'ACCESS_DENIED');
    const many = await open.request('GET', `?${MAP}${'&x=1'.repeat(200)}`, undefined, { authorization: null });
    assert.equal(many.statusCode, 400);
    parseXml(many);
    assert.match(many.body, /more than 200 parameters/);
    assert.deepEqual(hits, []);
  });

  test('MapServer\'s errors reach no client as it wrote them: no message page, version, build options, function names or paths', async () => {
    const answers = [
      await ogc(open, { SERVICE: 'WMS', VERSION: '1.3.0', REQUEST: 'GetCapabilities' }, { authorization: null }),
      await ogc(open, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetCapabilities' }, { authorization: null }),
      await open.request('GET', `?${MAP.replace('LAYERS=trees', 'LAYERS=nothing')}`, undefined, { authorization: null }),
      await open.request('GET', `?${MAP.replace('CRS=EPSG:4326', 'CRS=EPSG:999999')}`, undefined, { authorization: null }),
      await open.request('GET', `?${MAP.replace('FORMAT=image/png', 'FORMAT=image/nothing')}`, undefined, { authorization: null }),
      await ogc(open, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetFeature', TYPENAMES: 'open:nothing' }, { authorization: null }),
      await ogc(open, { SERVICE: 'WFS', VERSION: '2.0.0', REQUEST: 'GetFeature', TYPENAMES: 'open:trees', FILTER: '<broken' }, { authorization: null }),
      await ogc(open, { SERVICE: 'WCS', VERSION: '2.0.1', REQUEST: 'GetCapabilities' }, { authorization: null }),
      await ogc(open, { SERVICE: 'WMS', VERSION: '9.9.9', REQUEST: 'GetMap' }, { authorization: null }),
      await ogc(open, { SERVICE: 'WFS', REQUEST: 'constructor' }, { authorization: null }),
      await ogc(open, { mode: 'map', layers: 'trees' }, { authorization: null }),
      await open.request('GET', '?SERVICE=WMS&REQUEST=GetMap&LAYERS=trees&request=GetCapabilities', undefined, { authorization: null }),
      await open.request('GET', '', undefined, { authorization: null }),
    ];
    for (const [i, response] of answers.entries()) {
      assert.ok(response.statusCode === 200 || response.statusCode === 400, `${i}: ${response.statusCode} ${response.body.slice(0, 300)}`);
      assert.doesNotMatch(response.body, /MapServer|SUPPORTS=|OUTPUT=|INPUT=|\bms[A-Z]\w*\(\)|\/tmp\/|\.map\b/, `${i}: ${response.body.slice(0, 600)}`);
      // Without SERVICE and REQUEST the base is OGC API – Features: its 400 is a problem object.
      if (response.statusCode === 400 && /problem\+json/.test(String(response.headers['content-type']))) assert.equal(response.json().code, 'VALIDATION_FAILED');
      else if (response.statusCode === 400) {
        parseXml(response);
        assert.match(response.body, /ExceptionReport/);
      }
    }
    assert.deepEqual(answers.slice(0, 2).map((a) => a.statusCode), [200, 200]);
    // MapServer's own codes survive the rewrite.
    assert.match(answers[2]!.body, /LayerNotDefined/);
  });
});
