import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseQueryOptions } from '../../src/sta/query/parse-options.js';
import { StaQueryError } from '../../src/sta/query/errors.js';
import { depthExceededAt } from '../../src/http/json-body.js';
import { buildTestApp, databaseKinds, type TestApp } from '../helpers/test-app.js';
import { publishStaDataset, type PublishedDataset } from '../helpers/sta-dataset.js';

/**
 * Property-based tests (fast-check) of the OData option parser and the JSON body reader: arbitrary
 * and deliberately hostile input never gives a 5xx (nor an error that is not the parser's own), and
 * each input is answered within a time bound. Run counts are modest so the suite stays fast; a
 * failure prints the seed and the shrunk input to replay it.
 */

// In process: the contract's turn is ~50 ms; the bound leaves room for a loaded 2-core machine.
const PARSE_BOUND_MS = 200;
// Through the gateway and the database.
const REQUEST_BOUND_MS = 3000;

const OPTION = fc.constantFrom('$filter', '$orderby', '$select', '$expand', '$top', '$skip', '$count', '$resultFormat', '$foo', 'x');

/** Pieces of the grammar and of its edges, put together in any order. */
const FRAGMENT = fc.constantFrom(
  '(', ')', ',', ';', '=', '&', "'", "''", ' ', '+', '-', '/', '%', '%2', '%28', '%29', '%27', '%26', '\\', '$',
  'not ', ' and ', ' or ', ' eq ', ' ne ', ' gt ', ' add ', ' mul ', ' asc', ' desc', 'true', 'null', '1', '-5', '1e309', '12345678901234567890',
  'name', 'id', 'properties/owner', 'result', 'Datastream/Thing/name', '@iot.id',
  'tolower(', 'substring(', 'geo.distance(', 'st_within(', 'now()', "geography'POINT(1 2)'", "geography'POLYGON((0 0,1 0,1 1,0 0))'",
  "duration'P1D'", "duration'", '2020-01-01T00:00:00Z', '2020-02-30', '2020-01-01T25:00:00+01:00',
  'Datastreams', 'Thing', 'Observations', '($expand=', '($filter=', ';$top=1', '$expand=', '$filter=', '$orderby=', '$select=',
);

const structured = fc.array(FRAGMENT, { maxLength: 60 }).map((parts) => parts.join(''));

/** Long runs of one nesting or chaining construct, around an inner expression: the shapes of the seen attacks. */
const hostile = fc.record({
  option: fc.constantFrom('$filter', '$orderby', '$expand', '$select'),
  open: fc.constantFrom('not ', '(', '-', 'tolower(', 'Datastreams($expand=Thing($expand=', 'Datastreams/', 'id eq 1 and ', 'id add ', "'", '%28', 'name,'),
  inner: fc.constantFrom('true', 'id eq 1', 'name', 'Thing', '1', ''),
  close: fc.constantFrom(')', '))', '', ' eq 1', ')/'),
  times: fc.oneof(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 100, max: 40_000 })),
}).map(({ option, open, inner, close, times }) => `${option}=${open.repeat(times)}${inner}${close.repeat(times)}`);

const query = fc.oneof(
  { weight: 2, arbitrary: fc.array(fc.tuple(OPTION, structured), { maxLength: 4 }).map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&')) },
  { weight: 2, arbitrary: hostile },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }).map((s) => `$filter=${s}`) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
);

function timed<T>(run: () => T): { value?: T; error?: unknown; ms: number } {
  const started = performance.now();
  try {
    return { value: run(), ms: performance.now() - started };
  } catch (error) {
    return { error, ms: performance.now() - started };
  }
}

describe('fuzz: parseQueryOptions', () => {
  test('any query either parses or throws StaQueryError (400), within the time bound', () => {
    fc.assert(fc.property(query, (raw) => {
      const { error, ms } = timed(() => parseQueryOptions(raw));
      if (error !== undefined && !(error instanceof StaQueryError)) throw error;
      if (error instanceof StaQueryError) assert.equal(error.status, 400);
      assert.ok(ms < PARSE_BOUND_MS, `${ms.toFixed(1)} ms for ${raw.length} characters`);
    }), { numRuns: 400 });
  });

  test('work grows linearly: a 40,000-level nesting of each construct is refused as fast as a short one', () => {
    for (const open of ['not ', '(', '-', 'tolower(', 'Datastreams($expand=Thing($expand=', 'id eq 1 and ']) {
      const option = open.startsWith('Datastreams') ? '$expand' : '$filter';
      const { error, ms } = timed(() => parseQueryOptions(`${option}=${open.repeat(40_000)}x`));
      assert.ok(error instanceof StaQueryError, String(error));
      assert.match(error.message, /\(limit (expressionMaxBytes|expandMaxBytes)\)/);
      assert.ok(ms < PARSE_BOUND_MS, `${open}: ${ms.toFixed(1)} ms`);
    }
  });
});

/** The nesting depth of a parsed JSON value, by recursion (the values here are small). */
function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + value.reduce((most: number, item) => Math.max(most, depthOf(item)), 0);
  if (typeof value === 'object' && value !== null) return 1 + Object.values(value).reduce((most: number, item) => Math.max(most, depthOf(item)), 0);
  return 0;
}

describe('fuzz: the JSON body depth scan', () => {
  test('on valid JSON it agrees with the depth of the parsed value, strings and escapes included', () => {
    fc.assert(fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 10 }), (value, limit) => {
      const text = JSON.stringify(value);
      const at = depthExceededAt(text, limit);
      assert.equal(at >= 0, depthOf(value) > limit, `limit ${limit}: ${text}`);
      if (at >= 0) assert.ok(text[at] === '[' || text[at] === '{');
    }), { numRuns: 500 });
  });

  test('on any text it never throws and stays within the time bound', () => {
    const brackets = fc.array(fc.constantFrom('[', ']', '{', '}', '"', '\\', '\\"', '"\\\\"', ':', ',', 'a', ' '), { maxLength: 200 }).map((parts) => parts.join(''));
    const long = fc.record({ piece: fc.constantFrom('[', '{"a":', '"\\\\', '\\"', '"["'), times: fc.integer({ min: 1, max: 200_000 }) }).map(({ piece, times }) => piece.repeat(times));
    fc.assert(fc.property(fc.oneof(fc.string({ unit: 'binary' }), brackets, long), (text) => {
      const { error, ms } = timed(() => depthExceededAt(text, 64));
      assert.equal(error, undefined);
      assert.ok(ms < PARSE_BOUND_MS, `${ms.toFixed(1)} ms for ${text.length} characters`);
    }), { numRuns: 300 });
  });
});

/** Query text as a request target: what is not printable ASCII, and `#`, percent-encoded; a stray `%` kept. */
const asTarget = (raw: string) => raw.replace(/[^\x21-\x7e]|#/gu, (c) => encodeURIComponent(c).replace(/%$/, ''));

for (const kind of databaseKinds(import.meta.url)) {
  describe(`fuzz through the gateway (${kind})`, () => {
    let t: TestApp;
    let sta: PublishedDataset;
    before(async () => {
      t = await buildTestApp(kind);
      sta = await publishStaDataset(t);
      const created = await sta.request('POST', '/Things', { name: 'North', description: 'n', properties: { owner: 'city' }, Datastreams: [] });
      assert.equal(created.statusCode, 201, created.body);
    });
    after(() => t.close());

    const expectNo5xx = (response: { statusCode: number; body: string; json(): any }, ms: number, what: string) => {
      assert.ok(response.statusCode < 500, `${response.statusCode} for ${what.slice(0, 300)}: ${response.body.slice(0, 300)}`);
      if (response.statusCode === 400) assert.match(response.json().type, /^urn:platform:error:(VALIDATION_FAILED|MALFORMED_REQUEST)$/);
      assert.ok(ms < REQUEST_BOUND_MS, `${ms.toFixed(0)} ms for ${what.slice(0, 300)}`);
    };

    test('query options on GET and inside a $batch never answer 5xx, within the time bound', async () => {
      await fc.assert(fc.asyncProperty(query, async (raw) => {
        let started = performance.now();
        const direct = await sta.request('GET', `/Things?${asTarget(raw)}`);
        expectNo5xx(direct, performance.now() - started, raw);
        started = performance.now();
        const batch = await sta.request('POST', '/$batch', { requests: [{ id: 'q', method: 'get', url: `Things?${raw}` }] });
        expectNo5xx(batch, performance.now() - started, raw);
        if (batch.statusCode === 200) assert.ok(batch.json().responses[0].status < 500, JSON.stringify(batch.json().responses[0]).slice(0, 300));
      }), { numRuns: 40 });
    });

    test('JSON bodies, deep or malformed, never answer 5xx, within the time bound', async () => {
      const deepText = fc.record({ open: fc.constantFrom('[', '{"a":', '{"a":[', '["\\"",'), times: fc.integer({ min: 1, max: 20_000 }) })
        .map(({ open, times }) => `{"name":"n","description":"d","properties":{"x":${open.repeat(times)}1${open.split('').reverse().map((c) => (c === '[' ? ']' : c === '{' ? '}' : '')).join('').repeat(times)}}}`);
      const body = fc.oneof(
        deepText,
        fc.jsonValue({ maxDepth: 6 }).map((properties) => JSON.stringify({ name: 'n', description: 'd', properties })),
        fc.string({ unit: 'binary', maxLength: 300 }),
      );
      await fc.assert(fc.asyncProperty(body, async (text) => {
        const started = performance.now();
        const response = await sta.request('POST', '/Things', text, { 'content-type': 'application/json' });
        expectNo5xx(response, performance.now() - started, text);
      }), { numRuns: 40 });
    });
  });
}
