import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { compileMapping, MAX_EXPRESSION_BYTES, MAX_EXPRESSION_NESTING, targetSegments } from '../../src/ingest/mapping.js';

/** compileMapping is what the pipeline runtime will compile a mapping with at start: what it hands back must evaluate. */

describe('compileMapping', () => {
  it('answers the compiled fields with their target segments and the filter, ready to evaluate with the bindings', async () => {
    const compiled = compileMapping({
      title: 'ignored',
      fields: { '$.Datastream.name': '$.station & "-t"', 'Datastream.@iot.id': '$.ds', result: '$.value * 2', parameters: '{"topic": $topic}' },
      filter: '$.value > 0',
    });
    assert.ok(compiled.ok, JSON.stringify(compiled));
    const byPath = new Map(compiled.mapping.fields.map((field) => [field.path, field]));
    assert.deepEqual(byPath.get('$.Datastream.name')!.segments, ['Datastream', 'name']);
    assert.deepEqual(byPath.get('Datastream.@iot.id')!.segments, ['Datastream', '@iot.id']);
    assert.deepEqual(byPath.get('result')!.segments, ['result']);
    const record = { station: 'S1', ds: 7, value: 21 };
    assert.equal(await byPath.get('$.Datastream.name')!.expression.jsonata.evaluate(record), 'S1-t');
    assert.equal(await byPath.get('result')!.expression.jsonata.evaluate(record), 42);
    assert.deepEqual({ ...await byPath.get('parameters')!.expression.jsonata.evaluate(record, { topic: 'city/air' }) }, { topic: 'city/air' });
    assert.equal(await compiled.mapping.filter!.jsonata.evaluate(record), true);
    assert.equal(await compiled.mapping.filter!.jsonata.evaluate({ value: -1 }), false);
  });

  it('has no filter when the document has none or null', () => {
    for (const document of [{ fields: { result: '$' } }, { fields: { result: '$' }, filter: null }]) {
      const compiled = compileMapping(document);
      assert.ok(compiled.ok);
      assert.equal(compiled.mapping.filter, null);
    }
  });

  it('lists every fault: not an object, a non-string, an empty expression, a bad target path, a bad filter', () => {
    assert.deepEqual(compileMapping(null), { ok: false, faults: [{ at: 'fields', message: 'fields: must be an object of target paths and expressions' }] });
    const compiled = compileMapping({ fields: { result: '', 'a..b': '$.x', '$.': '1', n: 5 }, filter: 3 });
    assert.equal(compiled.ok, false);
    const messages = compiled.ok ? [] : compiled.faults.map((f) => f.message);
    assert.deepEqual(messages.map((m) => m.split(':')[0]), ['fields.result', 'fields.a..b', 'fields.$.', 'fields.n', 'filter']);
    assert.match(messages[0]!, /^fields\.result: expected an expression at position 0\b/);
    assert.match(messages[1]!, /is not a target path/);
    assert.equal(messages[4], 'filter: must be a string holding a JSONata expression');
  });

  it('bounds bracket nesting before compiling, ignoring brackets in strings, names and comments', () => {
    const nest = (depth: number, open = '(', close = ')') => `${open.repeat(depth)}1${close.repeat(depth)}`;
    assert.ok(compileMapping({ fields: { result: nest(MAX_EXPRESSION_NESTING) } }).ok);
    const over = compileMapping({ fields: { result: `$.a + ${nest(MAX_EXPRESSION_NESTING + 1, '[', ']')}` } });
    assert.deepEqual(over.ok ? [] : over.faults.map((f) => f.message), [
      `fields.result: nests brackets more than ${MAX_EXPRESSION_NESTING} deep at position ${7 + MAX_EXPRESSION_NESTING}; an expression may nest at most ${MAX_EXPRESSION_NESTING}`,
    ]);
    const inert = `"(((\\"((" & '[[[' & \`{{{\` & /* ((((( */ ${nest(MAX_EXPRESSION_NESTING)}`;
    assert.ok(compileMapping({ fields: { result: inert.replace('"(((', `"${'('.repeat(500)}`) } }).ok);
  });

  it('target paths: an optional "$." prefix, dotted names, "@iot.id" as one segment', () => {
    assert.deepEqual(targetSegments('result'), ['result']);
    assert.deepEqual(targetSegments('$.FeatureOfInterest.feature.coordinates'), ['FeatureOfInterest', 'feature', 'coordinates']);
    assert.deepEqual(targetSegments('@iot.id'), ['@iot.id']);
    for (const bad of ['', '$.', '.a', 'a.', 'a..b']) assert.equal(targetSegments(bad), null, bad);
  });

  it('never throws and never passes a string over the bound, whatever the document (fuzz)', () => {
    fc.assert(fc.property(fc.jsonValue({ maxDepth: 4 }), (document) => {
      const compiled = compileMapping(document);
      assert.equal(typeof compiled.ok, 'boolean');
    }), { numRuns: 300 });
    fc.assert(fc.property(fc.string({ maxLength: 300, unit: fc.constantFrom('(', ')', '[', ']', '{', '}', '$', '.', '"', '/', 'a', '1', ' ', '+', '?', ':', '~>', '&') }), (expression) => {
      const compiled = compileMapping({ fields: { result: expression }, filter: expression });
      if (!compiled.ok) for (const fault of compiled.faults) assert.match(fault.message, /^(fields\.result|filter): /);
    }), { numRuns: 500 });
    const over = compileMapping({ fields: { result: `"${'é'.repeat(MAX_EXPRESSION_BYTES / 2)}"` } });
    assert.equal(over.ok, false, 'the bound counts UTF-8 bytes, not characters');
  });
});
