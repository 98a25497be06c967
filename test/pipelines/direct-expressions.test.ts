import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { compileMapping, type CompiledMapping } from '../../src/ingest/mapping.js';
import { mapRecord, type MappingResult } from '../../src/ingest/mapper.js';

/**
 * Member paths and literals are evaluated without JSONata (src/ingest/direct-expressions.ts). The
 * mapper must answer exactly what it answered through JSONata alone: compared here on random
 * records and random mappings, then the cases that matter named one by one.
 */

const bindings = { dataSource: { id: 'source-1', name: 'station feed' } };
const receivedAt = new Date('2026-11-29T10:00:00Z');

function compiled(document: unknown): CompiledMapping {
  const result = compileMapping(document);
  if (!result.ok) throw new Error(`does not compile: ${JSON.stringify(result.faults)}`);
  return result.mapping;
}

/** The same mapping with every direct evaluator taken away: what the mapper did before them. */
function jsonataOnly(mapping: CompiledMapping): CompiledMapping {
  const slow = <T extends { direct: unknown; literal: boolean }>(expression: T): T => ({ ...expression, direct: null, literal: false });
  return {
    fields: mapping.fields.map((field) => ({ ...field, expression: slow(field.expression) })),
    filter: mapping.filter && slow(mapping.filter),
  };
}

const map = async (mapping: CompiledMapping, value: unknown): Promise<MappingResult> => mapRecord(mapping, { value, receivedAt, topic: 'city/air/1' }, bindings);

// Names that collide across records and expressions; `constructor` is on every object's prototype, never own.
const NAMES = ['a', 'b', 'c', 'n 1', 'constructor'];
const name = fc.constantFrom(...NAMES);

const scalar = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 1e15, 1234567890123456, 0.1 + 0.2, 1e21),
  fc.boolean(),
  fc.constant(null),
);
const { json } = fc.letrec((tie) => ({
  json: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, tie('array'), tie('object')),
  array: fc.array(tie('json'), { maxLength: 3 }),
  object: fc.dictionary(name, tie('json'), { maxKeys: 4 }),
}));
const record = fc.dictionary(name, json, { maxKeys: 5 });

const nameText = (n: string) => (/^[a-z]+$/.test(n) ? n : `\`${n}\``);
const pathText = fc.tuple(fc.boolean(), fc.array(name, { minLength: 1, maxLength: 3 }))
  .map(([root, names]) => `${root ? '$.' : ''}${names.map(nameText).join('.')}`);
const literalScalarText = fc.oneof(
  fc.string({ maxLength: 6 }).map((s) => JSON.stringify(s)),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  fc.constantFrom('true', 'false', 'null'),
);
const { literalText } = fc.letrec((tie) => ({
  literalText: fc.oneof({ depthSize: 'small' }, literalScalarText, tie('objectText'), tie('arrayText')),
  objectText: fc.array(fc.tuple(name, tie('literalText')), { maxLength: 3 })
    .map((members) => `{${members.map(([key, value]) => `${JSON.stringify(key)}: ${value}`).join(', ')}}`),
  arrayText: fc.array(tie('literalText'), { maxLength: 3 }).map((elements) => `[${elements.join(', ')}]`),
}));
const termText = fc.oneof(pathText, literalScalarText);
const concatText = fc.array(termText, { minLength: 2, maxLength: 3 }).map((terms) => terms.join(' & '));
// Now and then an expression only JSONata evaluates, so that a record mixes both ways.
const otherText = fc.constantFrom('$string(a)', 'a[0]', '$topic', '$dataSource.name', 'b.c[]', 'a + 1', '$count(a)');
const expression = fc.oneof(pathText, pathText, literalText, concatText, otherText);
const TARGETS = ['r', 'o', 'o.p', 'o.q.s', 'Datastream.@iot.id'];
const mappingDocument = fc.record({
  fields: fc.uniqueArray(fc.tuple(fc.constantFrom(...TARGETS), expression), { selector: ([target]) => target, minLength: 1, maxLength: 4 })
    .map((entries) => Object.fromEntries(entries)),
  filter: fc.option(fc.oneof(pathText, literalScalarText), { nil: undefined }),
});

describe('direct evaluation of mapping expressions', () => {
  it('answers what JSONata answers, on random records and mappings', async () => {
    await fc.assert(fc.asyncProperty(mappingDocument, fc.array(record, { minLength: 1, maxLength: 3 }), async (document, records) => {
      const mapping = compiled(document);
      const slow = jsonataOnly(mapping);
      for (const value of records) {
        // The record maps twice, so that a literal changed by the first mapping would show in the second.
        const fast = await map(mapping, value);
        assert.deepStrictEqual(await map(mapping, value), fast);
        assert.deepStrictEqual(fast, await map(slow, value), `${JSON.stringify(document)} on ${JSON.stringify(value)}`);
      }
    }), { numRuns: 400 });
  });

  it('maps a record of member paths and literals without a promise', () => {
    const mapping = compiled({
      fields: { 'Datastream.name': 'station', result: '$.reading.value', phenomenonTime: 't', FeatureOfInterest: '{"name": "site", "feature": {"type": "Point", "coordinates": [8.4, 49]}}' },
      filter: 'valid',
    });
    const result = mapRecord(mapping, { value: { station: 'S1', reading: { value: 4.5 }, t: '2026-01-01T00:00:00Z', valid: true }, receivedAt }, bindings);
    assert.ok(!(result instanceof Promise), 'answered synchronously');
    assert.deepStrictEqual(result, {
      kind: 'mapped',
      record: {
        receivedAt,
        value: {
          Datastream: { name: 'S1' }, result: 4.5, phenomenonTime: '2026-01-01T00:00:00Z',
          FeatureOfInterest: { name: 'site', feature: { type: 'Point', coordinates: [8.4, 49] } },
        },
      },
    });
    assert.deepStrictEqual(mapRecord(mapping, { value: { station: 'S1', valid: false }, receivedAt }, bindings), { kind: 'skipped' });
  });

  it('leaves an array on the path to JSONata, which maps over it', async () => {
    const mapping = compiled({ fields: { result: 'a.b' } });
    const result = mapRecord(mapping, { value: { a: [{ b: 1 }, { b: [2, 3] }, { c: 4 }] }, receivedAt }, bindings);
    assert.ok(result instanceof Promise);
    assert.deepStrictEqual(await result, { kind: 'mapped', record: { receivedAt, value: { result: [1, 2, 3] } } });
  });

  it('copies a literal object before another field adds to it, for every record alike', async () => {
    const mapping = compiled({ fields: { FeatureOfInterest: '{"name": "site"}', 'FeatureOfInterest.description': 'd' } });
    const first = await map(mapping, { d: 'north' });
    const second = await map(mapping, { d: 'south' });
    assert.deepStrictEqual(first, { kind: 'mapped', record: { receivedAt, value: { FeatureOfInterest: { name: 'site', description: 'north' } } } });
    assert.deepStrictEqual(second, { kind: 'mapped', record: { receivedAt, value: { FeatureOfInterest: { name: 'site', description: 'south' } } } });
  });

  it('concatenates as JSONata does, and asks JSONata for a number it may write otherwise', async () => {
    const mapping = compiled({ fields: { a: '"sensor-" & s & "-" & missing & flag', b: '"n" & big' } });
    const record = { s: 7, flag: true, big: 0.1 + 0.2 };
    const result = mapRecord(mapping, { value: record, receivedAt }, bindings);
    assert.ok(result instanceof Promise, 'a fraction is written by JSONata');
    // JSONata's $string writes a fraction to 15 significant digits.
    assert.deepStrictEqual(await result, { kind: 'mapped', record: { receivedAt, value: { a: 'sensor-7-true', b: 'n0.3' } } });
    assert.deepStrictEqual(mapRecord(mapping, { value: { ...record, big: 12 }, receivedAt }, bindings),
      { kind: 'mapped', record: { receivedAt, value: { a: 'sensor-7-true', b: 'n12' } } });
  });
});
