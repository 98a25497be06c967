import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_JSON_DEPTH, recordsOfPayload } from '../../src/ingest/connectors/mqtt-payload.js';

/** The bound on nesting holds whether or not the payload is long enough to be scanned for it. */
describe('MQTT payload nesting', () => {
  const records = (text: string) => recordsOfPayload('t', Buffer.from(text), new Date());
  const nested = (depth: number) => `${'['.repeat(depth - 1)}{"v":1}${']'.repeat(depth - 1)}`;

  it('reads a record nested as deep as allowed', () => {
    const [record] = records(nested(MAX_JSON_DEPTH));
    assert.equal(record!.unreadable, undefined);
  });

  it('refuses a record nested one level deeper, naming the bound', () => {
    const [record] = records(nested(MAX_JSON_DEPTH + 1));
    assert.equal(record!.value, undefined);
    assert.match(record!.unreadable!, new RegExp(`deeper than ${MAX_JSON_DEPTH} levels at offset ${MAX_JSON_DEPTH}`));
  });

  it('refuses a short payload of brackets that never close as no JSON, without a scan', () => {
    const [record] = records('['.repeat(2 * MAX_JSON_DEPTH));
    assert.equal(record!.value, undefined);
    assert.match(record!.unreadable!, /not JSON/);
  });

  it('takes each element of an array as a record', () => {
    assert.deepEqual(records('[{"a":1},{"a":2}]').map((record) => record.value), [{ a: 1 }, { a: 2 }]);
  });
});
