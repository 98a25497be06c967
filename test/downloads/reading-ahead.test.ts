import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { readingAhead } from '../../src/data-api/downloads.js';

/** The download's read-ahead: the next chunk is asked for while the last is written. */
describe('readingAhead', () => {
  it('a read that fails while the client is slow is thrown where it is awaited, never left unhandled', async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', record);
    try {
      let reads = 0;
      const source: AsyncIterator<string> = {
        next: async () => {
          reads += 1;
          if (reads === 1) return { done: false, value: 'first batch' };
          throw new Error('relation "doomed" does not exist');
        },
      };
      const chunks = readingAhead(source);
      assert.deepEqual(await chunks.next(), { done: false, value: 'first batch' });
      // The client takes its time: meanwhile the read ahead fails with nobody awaiting it.
      await sleep(50);
      assert.equal(reads, 2, 'the next read was asked for while the first chunk was written');
      await assert.rejects(chunks.next(), /does not exist/);
      await sleep(10);
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', record);
    }
  });

  it('hands every chunk on in order and ends with its source', async () => {
    async function* source() {
      yield 'a';
      yield 'b';
      yield 'c';
    }
    const seen: string[] = [];
    for await (const chunk of readingAhead(source())) seen.push(chunk as string);
    assert.deepEqual(seen, ['a', 'b', 'c']);
  });
});
