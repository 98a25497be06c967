import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql } from 'kysely';
import { parseQueryOptions } from '../../../src/sta/query/parse-options.js';
import { parseFilter } from '../../../src/sta/query/parse-expression.js';
import { compileFilter } from '../../../src/sta/query/compile.js';
import { StaQueryError } from '../../../src/sta/query/errors.js';
import { DEFAULT_QUERY_LIMITS, type QueryLimits } from '../../../src/sta/query/limits.js';
import type { PropertyResolver } from '../../../src/sta/query/ast.js';
import { exprText } from '../../../src/sta/unparse.js';

/** How the query limits count: levels, bytes, `$expand` levels, and what an error quotes back. */

function refusal(query: string, limits: QueryLimits = DEFAULT_QUERY_LIMITS): StaQueryError {
  try {
    parseQueryOptions(query, limits);
  } catch (error) {
    assert.ok(error instanceof StaQueryError, String(error));
    return error;
  }
  assert.fail(`no error for ${query.slice(0, 200)}`);
}

const limitOf = (error: StaQueryError) => /\(limit (\w+)\)/.exec(error.message)?.[1];

// Compiles without a database: only the SQL text is looked at.
const compiler = new Kysely<unknown>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});
const resolver: PropertyResolver = { property: (path) => ({ type: 'number', sql: sql.ref(path.join('_')) }) };

/** The deepest parenthesis nesting of SQL text. */
function parenthesisDepth(text: string): number {
  let depth = 0, most = 0;
  for (const c of text) {
    if (c === '(') most = Math.max(most, ++depth);
    else if (c === ')') depth--;
  }
  return most;
}

describe('expression levels', () => {
  it('counts not, unary minus, calls and operators as levels up to the limit, and refuses one more', () => {
    // `true` is one level, each `not` one more.
    assert.doesNotThrow(() => parseFilter(`${'not '.repeat(63)}true`));
    assert.equal(limitOf(refusal(`$filter=${'not+'.repeat(64)}true`)), 'expressionMaxDepth');
    assert.doesNotThrow(() => parseFilter(`${'-'.repeat(62)}a eq 1`));
    assert.equal(limitOf(refusal(`$filter=${'-'.repeat(64)}a eq 1`)), 'expressionMaxDepth');
    assert.doesNotThrow(() => parseFilter(`a${' add 1'.repeat(62)} eq 1`));
    assert.equal(limitOf(refusal(`$filter=a${'+add+1'.repeat(63)}+eq+1`)), 'expressionMaxDepth');
    assert.equal(limitOf(refusal(`$orderby=${'round('.repeat(64)}a${')'.repeat(64)}`)), 'expressionMaxDepth');
  });

  it('counts parentheses as levels of the parser, refused at the first one past the limit', () => {
    assert.doesNotThrow(() => parseFilter(`${'('.repeat(64)}true${')'.repeat(64)}`));
    const error = refusal(`$filter=${'('.repeat(65)}true${')'.repeat(65)}`);
    assert.equal(limitOf(error), 'expressionMaxDepth');
    assert.equal(error.position, 64);
    assert.equal(error.where, '$filter');
  });

  it('takes a chain of one logical operator as one level: parsed, compiled flat, and written back without recursion', () => {
    const limits = { ...DEFAULT_QUERY_LIMITS, expressionMaxBytes: 65_536 };
    for (const op of ['and', 'or']) {
      const chain = `${`a eq 1 ${op} `.repeat(5000)}b eq 2`;
      const filter = parseQueryOptions(`$filter=${encodeURIComponent(chain)}`, limits).filter!;
      const compiled = sql`select 1 where ${compileFilter(filter, resolver)}`.compile(compiler);
      assert.equal(compiled.sql.split(` ${op} `).length, 5001);
      assert.ok(parenthesisDepth(compiled.sql) <= 4, `SQL nests ${parenthesisDepth(compiled.sql)} deep`);
      const text = exprText(filter);
      assert.equal(text.split(` ${op} `).length, 5001);
      // (Compared as text: assert.deepEqual itself would follow the tree one level per operand.)
      assert.equal(exprText(parseFilter(text, '$filter', 0, 64)), text);
    }
  });

  it('counts an or of ands (no parentheses) as a few levels, not one per operator', () => {
    const mixed = `${'a eq 1 and b eq 2 or '.repeat(300)}c eq 3`;
    const compiled = sql`${compileFilter(parseFilter(mixed), resolver)}`.compile(compiler);
    assert.ok(parenthesisDepth(compiled.sql) <= 5);
  });
});

describe('bytes', () => {
  it('counts UTF-8 bytes of the decoded value, and refuses at the first byte past the limit', () => {
    const limits = { ...DEFAULT_QUERY_LIMITS, expressionMaxBytes: 100 };
    assert.doesNotThrow(() => parseQueryOptions(`$filter=name eq '${'x'.repeat(90)}'`, limits));
    const error = refusal(`$filter=name eq '${'é'.repeat(50)}'`, limits);
    assert.equal(limitOf(error), 'expressionMaxBytes');
    // "name eq '" is 9 bytes; the 46th 'é' would end at byte 101.
    assert.equal(error.position, 9 + 45);
    // Percent-encoding is decoded first: 100 encoded bytes are 300 characters of query.
    assert.doesNotThrow(() => parseQueryOptions(`$select=${'%61'.repeat(100)}`, limits));
  });

  it('holds $expand as a whole to expandMaxBytes, and nested options to the expression limits', () => {
    assert.equal(limitOf(refusal(`$expand=${'Datastreams,'.repeat(700)}Thing`)), 'expandMaxBytes');
    assert.equal(limitOf(refusal(`$expand=Datastreams($filter=${'not+'.repeat(70)}true)`)), 'expressionMaxDepth');
    const small = { ...DEFAULT_QUERY_LIMITS, expressionMaxBytes: 64 };
    assert.equal(limitOf(refusal(`$expand=Datastreams($select=${'name,'.repeat(20)}id)`, small)), 'expressionMaxBytes');
  });
});

describe('$expand levels', () => {
  const nested = (levels: number) => `${'A($expand='.repeat(levels - 1)}A${')'.repeat(levels - 1)}`;
  it('allows expandMaxDepth levels, nested or as a path, and refuses one more at the item that goes past', () => {
    assert.equal(parseQueryOptions(`$expand=${nested(8)}`).expand![0]!.path[0], 'A');
    assert.equal(limitOf(refusal(`$expand=${nested(9)}`)), 'expandMaxDepth');
    assert.doesNotThrow(() => parseQueryOptions(`$expand=${Array(8).fill('A').join('/')}`));
    assert.equal(limitOf(refusal(`$expand=${Array(9).fill('A').join('/')}`)), 'expandMaxDepth');
    // A path and nesting add up: A/A/A(… 6 more levels …) is 9.
    const error = refusal(`$expand=A/A/A($expand=${nested(6)})`);
    assert.equal(limitOf(error), 'expandMaxDepth');
    assert.equal(error.position, 'A/A/A($expand='.length + 'A($expand='.length * 5);
  });
});

describe('what an error quotes back', () => {
  it('cuts a long token and a long option name to 64 characters', () => {
    const name = `$${'x'.repeat(100_000)}`;
    const unknown = refusal(`${name}=1`);
    assert.ok(unknown.message.length < 300, `${unknown.message.length} characters`);
    assert.ok(unknown.where.length <= 65);
    const badTop = refusal(`$top=${'9'.repeat(100_000)}x`);
    assert.ok(badTop.message.length < 300);
    assert.equal(badTop.token.length, 65);
  });
});
