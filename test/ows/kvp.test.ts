import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeKvp, KvpError, parseKvp } from '../../src/ows/kvp.js';
import { planOwsRequest } from '../../src/ows/ows-request.js';

// The gateway reads a query string the way MapServer 8's CGI loader does (cgiutil.c loadParams:
// split at '&', '+' to space and percent-decode the whole piece, then split at the first '='), so
// that what it drops is what MapServer would have read.
const pairs = (text: string, form = false) => parseKvp(text, { form }).map(({ name, value }) => [name, value]);

describe('MapServer-exact key-value parsing', () => {
  test('a whole pair hidden in a name is the pair MapServer reads', () => {
    assert.deepEqual(pairs('SLD%3Dhttp%3A%2F%2F127.0.0.1%3A9%2Fx'), [['SLD', 'http://127.0.0.1:9/x']]);
    assert.deepEqual(pairs('a=1%26SLD%3Dx'), [['a', '1&SLD=x']]);
    assert.deepEqual(pairs('SLD%3d1'), [['SLD', '1']]);
  });

  test('plus, malformed escapes, empty pieces, separators', () => {
    assert.deepEqual(pairs('a+b=c+d'), [['a b', 'c d']]);
    assert.deepEqual(pairs('a%2Bb=1'), [['a+b', '1']]);
    assert.deepEqual(pairs('%zz=1&%4=2&%4G=3&%=4'), [['%zz', '1'], ['%4', '2'], ['%4G', '3'], ['%', '4']]);
    assert.deepEqual(pairs('a=1&&b=2'), [['a', '1'], ['', ''], ['b', '2']]);
    assert.deepEqual(pairs('a=1&'), [['a', '1']]);
    assert.deepEqual(pairs('a=b=c'), [['a', 'b=c']]);
    assert.deepEqual(pairs('x;SLD=1'), [['x;SLD', '1']]);
    assert.deepEqual(pairs('flag'), [['flag', '']]);
    // One decoding only: %253D is %3D for MapServer, never '='.
    assert.deepEqual(pairs('SLD%253Dx=1'), [['SLD%3Dx', '1']]);
    assert.deepEqual(pairs(''), []);
  });

  test('a form body loses its trailing white space, as MapServer trims it', () => {
    assert.deepEqual(pairs('a=1&b=2 \r\n\t', true), [['a', '1'], ['b', '2']]);
    assert.deepEqual(pairs('a=1 ', false), [['a', '1 ']]);
  });

  test('NUL bytes and invalid UTF-8 are refused (C strings and our strings would part ways)', () => {
    assert.throws(() => parseKvp('SLD%00=x'), KvpError);
    assert.throws(() => parseKvp('a=%00'), KvpError);
    assert.throws(() => parseKvp('a=%E9'), KvpError);
    assert.deepEqual(pairs('a=%C3%A9'), [['a', 'é']]);
  });

  test('what the gateway encodes, MapServer decodes back to the same pairs (seeded random round trips)', () => {
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const alphabet = ['a', 'Z', '0', '&', '=', '+', '%', '%3D', ';', ' ', '\n', '<', '"', 'é', '€', '😀', '/', '?', '#', '[', ']'];
    const text = () => Array.from({ length: Math.floor(random() * 12) }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
    for (let i = 0; i < 2000; i += 1) {
      // A name with '=' has no encoding MapServer reads back (it splits at the first '=' after decoding).
      const input = Array.from({ length: 1 + Math.floor(random() * 4) }, () => ({ name: `n${text().replaceAll('=', '')}`, value: text() }));
      assert.deepEqual(parseKvp(encodeKvp(input)), input);
    }
    assert.throws(() => encodeKvp([{ name: 'SLD=x', value: '' }]));
  });
});

describe('which requests reach MapServer, and with what', () => {
  const plan = (query: string, extra: Partial<Parameters<typeof planOwsRequest>[0]> = {}) =>
    planOwsRequest({ method: 'GET', query, body: undefined, contentType: undefined, ...extra });

  test('only the parameters of the operation pass; SLD, SLD_BODY, MAP, map.*, CGI and EXCEPTIONS parameters never do', () => {
    const result = plan('SERVICE=WMS&VERSION=1.3.0&REQUEST=GetMap&LAYERS=a&STYLES=&CRS=EPSG:4326&BBOX=0,0,1,1&WIDTH=1&HEIGHT=1&FORMAT=image/png'
      + '&SLD=x&sld_body=y&MAP=z&map.layer[a]=b&map_web=c&mode=map&qlayer=a&mapext=1&imgext=1&EXCEPTIONS=INIMAGE&SRS=EPSG:4326&I=1&'
      + encodeURIComponent('SLD=http://x'));
    assert.equal(result.kind, 'kvp');
    assert.deepEqual((result as { params: Array<{ name: string }> }).params.map((p) => p.name.toUpperCase()).sort(),
      ['BBOX', 'CRS', 'FORMAT', 'HEIGHT', 'LAYERS', 'REQUEST', 'SERVICE', 'STYLES', 'VERSION', 'WIDTH']);
  });

  test('unknown services and operations, repeated and missing parameters are exception reports; a repeated REQUEST with a Transaction counts as a write', () => {
    const refused = (query: string) => {
      const result = plan(query);
      assert.equal(result.kind, 'refused', query);
      return result as Extract<typeof result, { kind: 'refused' }>;
    };
    assert.equal(refused('SERVICE=WCS&REQUEST=GetCapabilities').code, 'InvalidParameterValue');
    assert.equal(refused('SERVICE=WFS&REQUEST=constructor').code, 'OperationNotSupported');
    assert.equal(refused('SERVICE=WFS&REQUEST=__proto__').code, 'OperationNotSupported');
    assert.equal(refused('SERVICE=WMS&VERSION=1.3&REQUEST=GetMap').locator, 'version');
    assert.equal(refused('REQUEST=GetCapabilities').code, 'MissingParameterValue');
    assert.equal(refused('SERVICE=WMS').code, 'MissingParameterValue');
    assert.equal(refused('SERVICE=WMS&REQUEST=GetMap&LAYERS=a&layers=b').locator, 'layers');
    assert.equal(refused('SERVICE=WFS&REQUEST=GetFeature&request=Transaction').write, true);
    assert.equal(refused('SERVICE=WFS&REQUEST=Transaction').write, true);
    // WMS 1.1's GetMap may leave SERVICE out: the gateway adds it.
    const inferred = plan('VERSION=1.1.1&REQUEST=GetMap&LAYERS=a');
    assert.equal(inferred.kind === 'kvp' && inferred.service, 'WMS');
  });

  test('XML: a DOCTYPE, a second root, a non-WFS service or an SLD root is refused; a DOCTYPE before a Transaction is a write', () => {
    const xml = (body: string) => plan('', { method: 'POST', body: Buffer.from(body), contentType: 'text/xml' });
    assert.equal(xml('<wfs:GetFeature service="WFS" version="2.0.0" xmlns:wfs="http://www.opengis.net/wfs/2.0"/>').kind, 'xml');
    const doctype = xml('<!DOCTYPE x><wfs:Transaction service="WFS" xmlns:wfs="http://www.opengis.net/wfs/2.0"/>');
    assert.equal(doctype.kind === 'refused' && doctype.write, true);
    assert.equal(xml('<a service="WFS"/><b/>').kind, 'refused');
    assert.equal(xml('<GetMap service="WMS"/>').kind, 'refused');
    assert.equal(xml('<StyledLayerDescriptor service="WFS"/>').kind, 'refused');
    assert.equal(xml('<!-- c --><?pi x?><GetCapabilities service=\'WFS\'/>').kind, 'xml');
    assert.equal(xml('<GetCapabilities service="W&#70;S"/>').kind, 'xml');
    // A form is read like MapServer reads one: its content type by prefix, its pairs then the query's.
    const form = plan('SLD=x', { method: 'POST', body: Buffer.from('SERVICE=WFS&REQUEST=GetCapabilities'), contentType: 'application/x-www-form-urlencodedXYZ' });
    assert.equal(form.kind, 'kvp');
  });
});
