import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isoTime } from '../../src/sta/iso-time.js';

/** What isoTime answered before it had a quick path: Date's own normal form, or a fault. */
function throughDate(value: string): string | 'fault' {
  const ok = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(value) && !Number.isNaN(Date.parse(value));
  return ok ? new Date(value).toISOString() : 'fault';
}

const answer = (value: string) => {
  try {
    return isoTime(value, 'phenomenonTime');
  } catch {
    return 'fault';
  }
};

test('isoTime answers every date-time as Date normalizes it, in its normal form or not', () => {
  const values = [
    '2020-01-01T00:00:00.000Z', '2020-02-29T23:59:59.999Z', '2021-02-29T00:00:00.000Z', '2100-02-29T00:00:00.000Z',
    '2000-02-29T00:00:00.000Z', '2020-04-31T00:00:00.000Z', '2020-01-01T24:00:00.000Z', '2020-01-01T23:60:00.000Z',
    '2020-01-01T23:59:60.000Z', '2020-00-01T00:00:00.000Z', '2020-13-01T00:00:00.000Z', '2020-01-00T00:00:00.000Z',
    '0000-01-01T00:00:00.000Z', '0000-02-29T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '2020-01-01T00:00:00.000+01:00',
    '2020-01-01T00:00:00Z', '2020-01-01', '2020-01-01T10:00', '2020-01-01T00:00:00.1234Z', '2020-01-01 00:00:00.000Z',
    '2020-01-01T00:00:00.000z', '２020-01-01T00:00:00.000Z', '2020-01-01T00:00:00,000Z', '', 'now',
  ];
  // And a spread of valid and out-of-range fields in the normal form's layout.
  const pad = (n: number, width: number) => String(n).padStart(width, '0');
  // A fixed sequence (a linear congruential generator), so that a failure can be repeated.
  let seed = 20;
  const r = (max: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed % max;
  };
  for (let i = 0; i < 5_000; i++) {
    values.push(`${pad(r(10_000), 4)}-${pad(r(14), 2)}-${pad(r(33), 2)}T${pad(r(26), 2)}:${pad(r(62), 2)}:${pad(r(62), 2)}.${pad(r(1000), 3)}Z`);
  }
  for (const value of values) assert.equal(answer(value), throughDate(value), value);
});
