import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ENTITIES, ENTITY_SETS } from '../../src/sta/model.js';
import { entityTextWriter, selectionOf, serializeEntity, type Row } from '../../src/sta/serialize.js';

// The gateway's pages are written as text (entityTextWriter) where $batch, MQTT and expansions
// build objects (serializeEntity): both must give the same bytes for any row and any $select.
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
        assert.equal(entityTextWriter(base, entity, selection)(row), JSON.stringify(serializeEntity(base, entity, row, selection)));
      }), { numRuns: 500 });
  });
});
