import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';

// The process's logger writes stdout in batches (src/logger.ts). A line logged while a batch is
// still being written must not wait for the next line: an idle process would keep it for good. The
// parent reads nothing for the first 800 ms, so the child's writes stall on a full pipe meanwhile
// (as behind a slow log collector), and every flush tick falls on a write under way.
const CHILD = `
  import { createLogger } from './src/logger.ts';
  const log = createLogger('info');
  for (let i = 0; i < 2000; i++) log.info({ i, filler: 'x'.repeat(200) }, 'burst');
  setTimeout(() => log.info('last before idle'), 100);
  setTimeout(() => log.info('at exit'), 1500);
  setTimeout(() => process.exit(0), 1600);
`;

describe('log lines in batches', () => {
  test('a line logged during a write reaches stdout within a flush interval, with no line after it; what is left is written at exit', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    let lastSeenAt: number | null = null;
    let exitSeenAt: number | null = null;
    child.stdout.pause();
    setTimeout(() => child.stdout.resume(), 800);
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      if (lastSeenAt === null && text.includes('"msg":"last before idle"')) lastSeenAt = performance.now();
      if (exitSeenAt === null && text.includes('"msg":"at exit"')) exitSeenAt = performance.now();
    });
    const exitCode = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(exitCode, 0);
    const lines = text.trim().split('\n').map((line) => JSON.parse(line) as { msg: string });
    assert.equal(lines.filter((line) => line.msg === 'burst').length, 2000);
    assert.deepEqual(lines.slice(-2).map((line) => line.msg), ['last before idle', 'at exit']);
    // Seen while the child was idle, long before the line it logs 1.4 s later (timed on the child's
    // clock, so that a slow start of the child does not count against it).
    const gap = lastSeenAt === null || exitSeenAt === null ? 0 : exitSeenAt - lastSeenAt;
    assert.ok(gap >= 400, `the last line before idling arrived only ${Math.round(gap)} ms before the line logged at exit`);
  });
});
