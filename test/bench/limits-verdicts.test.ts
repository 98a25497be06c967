import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { verdicts, type PairResult } from '../../bench/limits/pairs.js';
import type { Run } from '../../bench/sta/load.js';

/** How `npm run bench` (bench/limits/) turns interleaved rounds into the verdicts of its summary: no timing here, only arithmetic. */

const run = (connections: number, perSecond: number, p50Ms: number, p99Ms: number, failed = 0): Run => ({
  connections, seconds: 5, perSecond, p50Ms, p99Ms, ok: perSecond * 5, failed, statuses: {},
});

const side = { label: 'x', url: 'http://127.0.0.1:1/' };

describe('bench/limits verdicts', () => {
  it('a latency pair: the median and spread of the per-round p50 ratios against 1.5, the p99 ratio without a target, the absolute p99 bound', () => {
    const result: PairResult = {
      pair: { name: 'STA: latest', group: 'STA vs its SQL', compare: 'latency', p99TargetMs: 30, subject: side, baseline: side },
      runs: [
        { round: 1, connections: 8, first: 'subject', subject: run(8, 100, 3, 20), baseline: run(8, 200, 2, 10) },
        { round: 2, connections: 8, first: 'baseline', subject: run(8, 100, 4, 40, 2), baseline: run(8, 200, 2, 10) },
        { round: 3, connections: 8, first: 'subject', subject: run(8, 100, 2, 25), baseline: run(8, 200, 2, 10) },
      ],
    };
    const [p50, p99, absolute] = verdicts(result);
    assert.deepEqual([p50!.measure, p50!.median, p50!.min, p50!.max, p50!.target, p50!.met, p50!.failed], ['p50', 1.5, 1, 2, '<= 1.5', true, 2]);
    assert.deepEqual([p50!.subjectMedian, p50!.baselineMedian], [3, 2]);
    assert.deepEqual([p99!.measure, p99!.median, p99!.target, p99!.met], ['p99', 2.5, null, null]);
    assert.deepEqual([absolute!.measure, absolute!.median, absolute!.min, absolute!.max, absolute!.met], ['p99 (absolute)', 25, 20, 40, true]);
    assert.ok(Number.isNaN(absolute!.baselineMedian));
  });

  it('a throughput pair: req/s ratio per connection count against 0.95, missed when the median falls short', () => {
    const result: PairResult = {
      pair: { name: 'WFS', group: 'gateway vs nginx', compare: 'throughput', subject: side, baseline: side },
      runs: [
        { round: 1, connections: 8, first: 'subject', subject: run(8, 90, 1, 1), baseline: run(8, 100, 1, 1) },
        { round: 1, connections: 32, first: 'subject', subject: run(32, 99, 1, 1), baseline: run(32, 100, 1, 1) },
      ],
    };
    const found = verdicts(result).map((v) => [v.connections, v.measure, v.median, v.met]);
    assert.deepEqual(found, [[8, 'req/s', 0.9, false], [32, 'req/s', 0.99, true]]);
  });

  it('the median of an even number of rounds is the mean of the middle two', () => {
    const result: PairResult = {
      pair: { name: 'WFS', group: 'gateway vs nginx', compare: 'throughput', subject: side, baseline: side },
      runs: [
        { round: 1, connections: 8, first: 'subject', subject: run(8, 80, 1, 1), baseline: run(8, 100, 1, 1) },
        { round: 2, connections: 8, first: 'baseline', subject: run(8, 100, 1, 1), baseline: run(8, 100, 1, 1) },
      ],
    };
    const [v] = verdicts(result);
    assert.deepEqual([v!.median, v!.min, v!.max, v!.subjectMedian, v!.met], [0.9, 0.8, 1, 90, false]);
  });

  it('an informational pair (the floor of a Node front) shows its ratio and spread, held to no target', () => {
    const result: PairResult = {
      pair: { name: 'floor', group: 'gateway vs nginx', compare: 'throughput', informational: true, subject: side, baseline: side },
      runs: [
        { round: 1, connections: 8, first: 'subject', subject: run(8, 90, 1, 1), baseline: run(8, 100, 1, 1) },
        { round: 2, connections: 8, first: 'baseline', subject: run(8, 50, 1, 1), baseline: run(8, 100, 1, 1) },
        { round: 3, connections: 8, first: 'subject', subject: run(8, 100, 1, 1), baseline: run(8, 100, 1, 1) },
      ],
    };
    const [v] = verdicts(result);
    assert.deepEqual([v!.measure, v!.median, v!.min, v!.max, v!.target, v!.met], ['req/s', 0.9, 0.5, 1, null, null]);
  });
});

