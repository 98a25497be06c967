import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseQueryOptions } from '../../../src/sta/query/parse-options.js';
import { StaQueryError } from '../../../src/sta/query/errors.js';
import { render } from './render.js';

function failure(query: string): { where: string; position: number; token: string; message: string } {
  try {
    parseQueryOptions(query);
  } catch (error) {
    assert.ok(error instanceof StaQueryError, String(error));
    return { where: error.where, position: error.position, token: error.token, message: error.message };
  }
  assert.fail(`no error for ${query}`);
}

describe('query options', () => {
  it('reads paging, count, select and result format, ignoring other parameters', () => {
    const options = parseQueryOptions('$top=10&$skip=20&$count=true&$select=name,%40iot.id,description&$resultFormat=dataArray&foo=bar&&x');
    assert.deepEqual(options, { top: 10, skip: 20, count: true, select: ['name', '@iot.id', 'description'], resultFormat: 'dataArray' });
    assert.deepEqual(parseQueryOptions(''), {});
    assert.deepEqual(parseQueryOptions('$count=false'), { count: false });
  });

  it('decodes + as a space and %2B as a plus', () => {
    const plus = parseQueryOptions('$filter=phenomenonTime+gt+2020-01-01T00:00:00+01:00');
    const encoded = parseQueryOptions('$filter=phenomenonTime%20gt%202020-01-01T00:00:00%2B01:00');
    assert.equal(render(plus.filter!), '(gt phenomenonTime @2020-01-01T00:00:00+01:00)');
    assert.deepEqual(plus, encoded);
    assert.equal(render(parseQueryOptions("$filter=name eq 'a%2Bb'").filter!), "(eq name 'a+b')");
  });

  it('reads $orderby on several properties', () => {
    const { orderBy } = parseQueryOptions('$orderby=phenomenonTime%20desc,id');
    assert.deepEqual(orderBy!.map((o) => `${render(o.expr)} ${o.direction}`), ['phenomenonTime desc', 'id asc']);
  });

  it('reads nested $expand with its own options, to any depth', () => {
    const value = "Datastreams($filter=name eq 'a;b';$top=2;$expand=Observations($orderby=phenomenonTime desc;$top=5;$expand=FeatureOfInterest($select=name));$select=name,id),Locations,Datastreams/ObservedProperty";
    const { expand } = parseQueryOptions(`$expand=${encodeURIComponent(value)}`);
    assert.equal(expand!.length, 3);
    const [datastreams, locations, nested] = expand!;
    assert.deepEqual(datastreams!.path, ['Datastreams']);
    assert.equal(render(datastreams!.options.filter!), "(eq name 'a;b')");
    assert.equal(datastreams!.options.top, 2);
    assert.deepEqual(datastreams!.options.select, ['name', 'id']);
    const observations = datastreams!.options.expand![0]!;
    assert.deepEqual(observations.path, ['Observations']);
    assert.equal(observations.options.top, 5);
    assert.equal(observations.options.orderBy![0]!.direction, 'desc');
    assert.deepEqual(observations.options.expand![0]!.options.select, ['name']);
    assert.deepEqual(locations, { path: ['Locations'], options: {}, pos: value.indexOf('Locations') });
    assert.deepEqual(nested!.path, ['Datastreams', 'ObservedProperty']);
  });

  it('names the $expand value positions for errors in nested options', () => {
    const value = "Datastreams($filter=name eqq 'a')";
    assert.deepEqual(failure(`$expand=${value}`), { where: '$expand', position: 25, token: 'eqq', message: "$expand: unexpected 'eqq' at position 25 ('eqq')" });
    const deeper = 'Datastreams($expand=Observations($top=x))';
    assert.deepEqual(Object.values(failure(`$expand=${deeper}`)).slice(0, 3), ['$expand', deeper.lastIndexOf('x'), 'x']);
    assert.equal(failure('$expand=Datastreams($foo=1)').position, 12);
    assert.equal(failure('$expand=Datastreams($top=1;$top=2)').position, 19);
    assert.equal(failure('$expand=Datastreams($top=1').position, 18);
    assert.equal(failure('$expand=Datastreams,,Things').position, 12);
  });

  it('refuses unknown, duplicate and malformed options, naming the option', () => {
    assert.deepEqual(failure('$foo=1').where, '$foo');
    assert.deepEqual(failure('$TOP=1').where, '$TOP');
    assert.match(failure('$top=1&$top=2').message, /more than once/);
    const top = failure('$top=-1');
    assert.deepEqual([top.where, top.position, top.token], ['$top', 0, '-1']);
    assert.equal(failure('$skip=1.5').where, '$skip');
    assert.equal(failure('$top=99999999999999999999').where, '$top');
    assert.equal(failure('$count=yes').token, 'yes');
    assert.equal(failure('$resultFormat=CSV').where, '$resultFormat');
    assert.equal(failure('$select=name,,id').position, 5);
    assert.equal(failure('$filter=%E0%A4%A').where, '$filter');
    const filter = failure('$filter=name%20eq');
    assert.deepEqual([filter.where, filter.position, filter.token], ['$filter', 7, '']);
  });
});
