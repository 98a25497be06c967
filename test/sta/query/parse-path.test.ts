import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseResourcePath } from '../../../src/sta/query/parse-path.js';
import { StaQueryError } from '../../../src/sta/query/errors.js';

/** A path in short form: `Things(1) > Datastreams > $ref`. */
function shape(path: string): string {
  return parseResourcePath(path).map((s) => {
    if (s.kind === 'ref') return '$ref';
    if (s.kind === 'value') return '$value';
    if (s.kind === 'property') return `.${s.name}`;
    return `${s.kind === 'entitySet' ? '' : '>'}${s.name}${s.id === undefined ? '' : `(${s.id})`}`;
  }).join(' ');
}

function failure(path: string): [number, string] {
  try {
    parseResourcePath(path);
  } catch (error) {
    assert.ok(error instanceof StaQueryError, String(error));
    assert.equal(error.where, 'path');
    return [error.position, error.token];
  }
  assert.fail(`no error for ${path}`);
}

describe('resource paths', () => {
  it('reads the forms the standard uses', () => {
    assert.equal(shape(''), '');
    assert.equal(shape('/'), '');
    assert.equal(shape('/Things'), 'Things');
    assert.equal(shape('/Things(1)'), 'Things(1)');
    assert.equal(shape('/Things(1)/Datastreams'), 'Things(1) >Datastreams');
    assert.equal(shape('/Datastreams(3)/Observations(9)'), 'Datastreams(3) >Observations(9)');
    assert.equal(shape('/Things(1)/name'), 'Things(1) .name');
    assert.equal(shape('/Things(1)/name/$value'), 'Things(1) .name $value');
    assert.equal(shape('/Things/$ref'), 'Things $ref');
    assert.equal(shape('/Things(1)/Locations/$ref'), 'Things(1) >Locations $ref');
    assert.equal(shape('/Observations(5)/Datastream/Thing'), 'Observations(5) >Datastream >Thing');
    assert.equal(shape('/Observations(5)/Datastream/Thing/name'), 'Observations(5) >Datastream >Thing .name');
    assert.equal(shape('Things(9007199254740991)'), 'Things(9007199254740991)');
  });

  it('keeps the position of each segment', () => {
    assert.deepEqual(parseResourcePath('/Things(1)/Datastreams').map((s) => s.pos), [1, 11]);
  });

  it('refuses ids that are not plain integers, with position and token', () => {
    assert.deepEqual(failure('/Things(abc)'), [8, 'abc']);
    assert.deepEqual(failure('/Things(1.5)'), [8, '1.5']);
    assert.deepEqual(failure('/Things()'), [8, '']);
    assert.deepEqual(failure("/Things('1')"), [8, "'1'"]);
    assert.deepEqual(failure('/Things(-1)'), [8, '-1']);
    assert.deepEqual(failure('/Things(9007199254740992)'), [8, '9007199254740992']);
    assert.deepEqual(failure('/Things(1'), [9, '']);
  });

  it('refuses misplaced segments', () => {
    assert.deepEqual(failure('/name'), [1, 'name']);
    assert.deepEqual(failure('/Things/Datastreams'), [8, 'Datastreams']);
    assert.deepEqual(failure('/Things(1)/name/description'), [16, 'description']);
    assert.deepEqual(failure('/Things(1)/name/$ref'), [16, '$ref']);
    assert.deepEqual(failure('/Things(1)/$value'), [11, '$value']);
    assert.deepEqual(failure('/Things/$ref/name'), [13, 'name']);
    assert.deepEqual(failure('/Things(1)//name'), [11, '/']);
    assert.deepEqual(failure('/Things(1)/Thing(2)'), [16, '(']);
    assert.deepEqual(failure('/Things(1)/name(2)'), [15, '(']);
    assert.deepEqual(failure('/Thi-ngs'), [1, 'Thi-ngs']);
  });
});
