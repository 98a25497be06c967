import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ENTITIES, ENTITY_SETS } from '../../src/sta/model.js';
import { entityMembersWriter, selectionOf, serializeEntity, type Row, type Selection } from '../../src/sta/serialize.js';
import { entityWriter, shapedJson, shapedOf, shapedText, type Shaped } from '../../src/sta/shaped.js';

// The gateway's pages are written as text (entityMembersWriter, shapedText) where $batch, MQTT and
// single entities build objects (serializeEntity, shapedJson): both must give the same bytes.
describe('an entity as JSON text', () => {
  const value = fc.oneof(fc.constant(null), fc.string(), fc.double(), fc.integer(), fc.boolean(), fc.jsonValue());
  const baseUrl = fc.constantFrom('http://127.0.0.1:8081/v1/datasets/2f0c/sensors', 'https://data.example/v1/datasets/x/"odd\\slug"/ünï\u2028');

  it('is JSON.stringify of serializeEntity, for every entity set, $select and row', () => {
    fc.assert(fc.property(fc.constantFrom(...ENTITY_SETS), baseUrl, fc.nat(), fc.integer({ min: 1, max: 2 ** 40 }), fc.array(value, { minLength: 40, maxLength: 40 }),
      (set, base, selectSeed, id, values) => {
        const entity = ENTITIES[set];
        const names = ['id', ...entity.properties.map((p) => p.name), ...entity.navigations.map((n) => n.name)];
        // No $select, or a subset of the names picked by the seed's bits.
        const select = selectSeed % 3 === 0 ? undefined : names.filter((_, i) => (selectSeed >> (i % 30)) & 1);
        const selection = selectionOf(entity, select && select.length > 0 ? select : undefined);
        const row: Row = { __id: String(id) };
        entity.properties.forEach((property, i) => {
          if (property.kind === 'interval') {
            row[`${property.name}__start`] = typeof values[i] === 'string' ? values[i] : null;
            row[`${property.name}__end`] = typeof values[i + 1] === 'string' ? values[i + 1] : null;
          } else {
            row[property.name] = values[i];
          }
        });
        assert.equal(`{${entityMembersWriter(base, entity, selection)(row)}}`, JSON.stringify(serializeEntity(base, entity, row, selection)));
      }), { numRuns: 500 });
  });

  it('with its expansions (children, a child or null, counts, next links, nested, shared), is JSON.stringify of shapedJson', () => {
    const base = 'http://127.0.0.1:8081/v1/datasets/2f0c/sensors';
    // Own members: the whole entity, a $select, or none at all (`{}` before the expansions).
    const none: Selection = { id: false, properties: [], navigations: new Set() };
    const writers = [
      entityWriter(base, ENTITIES.Datastreams, selectionOf(ENTITIES.Datastreams, undefined)),
      entityWriter(base, ENTITIES.Observations, selectionOf(ENTITIES.Observations, ['id', 'result'])),
      entityWriter(base, ENTITIES.Things, none),
    ];
    const row = (id: number): Row => ({ __id: String(id), name: `n"${id}`, result: id / 3, unitOfMeasurement: { symbol: '°C' }, phenomenonTime__start: '2026-01-01T00:00:00.000Z', phenomenonTime__end: null });
    const tree = fc.letrec<{ node: Shaped }>((tie) => ({
      node: fc.record({
        id: fc.integer({ min: 1, max: 1000 }),
        writer: fc.constantFrom(...writers),
        expanded: fc.array(fc.tuple(
          fc.constantFrom('Observations', 'Datastream', 'Observations@iot.count', 'Observations@iot.nextLink', 'Ünï"\\'),
          fc.oneof({ depthSize: 'small', withCrossShrink: true },
            fc.constant(null), fc.nat(), fc.string(), tie('node'), fc.array(tie('node'), { maxLength: 3 })),
        ), { maxLength: 3 }),
      }).map(({ id, writer, expanded }) => {
        const shaped = shapedOf(row(id), writer);
        // Distinct names, as expansions give them.
        const seen = new Set<string>();
        for (const [name, value] of expanded) if (!seen.has(name)) { seen.add(name); shaped.expanded.push([name, value as Shaped]); }
        return shaped;
      }),
    }));
    fc.assert(fc.property(tree.node, (shaped) => {
      // One child under two parents, as a to-one expansion shares it.
      const parent = shapedOf(row(1), writers[0]!);
      parent.expanded.push(['Datastream', shaped], ['Observations', [shaped, shaped]]);
      assert.equal(shapedText(parent), JSON.stringify(shapedJson(parent)));
      assert.equal(shapedText(shaped), JSON.stringify(shapedJson(shaped)));
    }), { numRuns: 300 });
  });
});
